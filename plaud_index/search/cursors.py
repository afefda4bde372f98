"""Opaque paging cursors: a few text parts, base64url, checked when they come back. Pure."""

from __future__ import annotations

import base64
import binascii

from ..errors import InvalidQueryError
from .rank import echo

MAX_CURSOR_CHARS = 1000


def encode(*parts: object) -> str:
    """The parts joined by ``|`` (the last may hold ``|`` itself: a file id)."""
    raw = "|".join(str(p) for p in parts).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode(cursor: object, parts: int, tool: str, restart: str) -> list[str] | None:
    """The ``parts`` parts of a cursor ``tool`` returned; ``None`` without one. Anything else
    is an ``InvalidQueryError`` saying what to do (``restart``)."""
    if cursor is None or cursor == "":
        return None
    try:
        if not isinstance(cursor, str) or len(cursor) > MAX_CURSOR_CHARS:
            raise ValueError(cursor)
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        found = raw.split("|", parts - 1)
        if len(found) != parts:
            raise ValueError(raw)
        return found
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise bad(cursor, tool, restart) from None


def bad(cursor: object, tool: str, restart: str) -> InvalidQueryError:
    return InvalidQueryError(f"cursor {echo(cursor)} is not one {tool} returned; leave it out "
                             f"to {restart}")
