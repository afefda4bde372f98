"""The tools' arguments as the client sent them: each with its exact JSON Schema published,
none coerced or validated by the SDK's layer, so every problem is one line of ours
(``InvalidQueryError``: what is wrong and what to send), never a multi-line validation
report, and ``"8"`` or ``true`` is not taken for a limit."""

from __future__ import annotations

from typing import Any

from pydantic import WithJsonSchema  # the SDK's schema layer (a dependency of mcp)

from ..errors import InvalidQueryError
from ..search.rank import echo

MAX_FILE_ID_CHARS = 200
MAX_TEXT_CHARS = 1000  # of a speaker, folder, section or cursor argument


def as_sent(description: str, **schema: Any) -> WithJsonSchema:
    """Publish an argument's schema but hand the value over as the client sent it."""
    return WithJsonSchema({**schema, "description": description})


def text(description: str) -> WithJsonSchema:
    return as_sent(description, type="string")


def optional_text(description: str) -> WithJsonSchema:
    return as_sent(description, anyOf=[{"type": "string"}, {"type": "null"}], default=None)


OPTIONAL_DAY = {"anyOf": [{"type": "string", "format": "date",
                           "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"}, {"type": "null"}],
                "default": None}


def optional_day(description: str) -> WithJsonSchema:
    return as_sent(description, **OPTIONAL_DAY)


def file_id(value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidQueryError(f"file_id must be a file_id from plaud_search or plaud_list, "
                                f"got {echo(value)}")
    if len(value) > MAX_FILE_ID_CHARS:
        raise InvalidQueryError(f"file_id is {len(value)} characters; file ids from "
                                f"plaud_search are at most {MAX_FILE_ID_CHARS}")
    return value


def optional(name: str, value: object) -> str | None:
    """An optional text argument: ``None`` or text of sane length."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidQueryError(f"{name} must be text, got {echo(value)}")
    if len(value) > MAX_TEXT_CHARS:
        raise InvalidQueryError(f"{name} is {len(value)} characters; the most is "
                                f"{MAX_TEXT_CHARS}")
    return value
