"""Opaque paging cursors: a few text parts, base64url, checked part by part when they come
back. Pure.

A cursor is only ever something we issued: anything else (a forged part, a digit that is
not ASCII, a time without its offset, a negative or absurd offset) is one
``InvalidQueryError`` that says to start again without it, never an exception of the
parsing underneath.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime

from ..errors import InvalidQueryError
from .rank import echo

MAX_CURSOR_CHARS = 1000
MAX_COUNT = 100_000_000  # an offset past any recording's items or utterances


def encode(*parts: object) -> str:
    """The parts joined by ``|`` (the last may hold ``|`` itself: a file id)."""
    raw = "|".join(str(p) for p in parts).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode(cursor: object, parts: int, tool: str, restart: str) -> list[str] | None:
    """The ``parts`` parts of a cursor ``tool`` returned; ``None`` without one. Anything else
    is an ``InvalidQueryError`` saying what to do (``restart``)."""
    if cursor is None or cursor == "":
        return None
    with checked(cursor, tool, restart):
        if not isinstance(cursor, str) or len(cursor) > MAX_CURSOR_CHARS:
            raise ValueError(cursor)
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        found = raw.split("|", parts - 1)
        if len(found) != parts or not all(found):
            raise ValueError(raw)
        return found


@contextmanager
def checked(cursor: object, tool: str, restart: str) -> Iterator[None]:
    """Any parsing failure inside is the cursor's: one message, nothing underneath."""
    try:
        yield
    except (ValueError, TypeError, OverflowError, binascii.Error):
        raise bad(cursor, tool, restart) from None


def count(part: str) -> int:
    """A non-negative offset written in ASCII digits (``int`` takes "²" and "-1" too)."""
    if not (part.isascii() and part.isdigit()) or int(part) > MAX_COUNT:
        raise ValueError(part)
    return int(part)


def instant(part: str) -> str:
    """An ISO instant with its UTC offset, as we write them (a naive time cannot be
    compared with a recording's)."""
    moment = datetime.fromisoformat(part)
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError(part)
    return part


def bad(cursor: object, tool: str, restart: str) -> InvalidQueryError:
    return InvalidQueryError(f"cursor {echo(cursor)} is not one {tool} returned; leave it out "
                             f"to {restart}")
