"""Replies for JSON-RPC requests the MCP SDK would leave unanswered. Pure.

The SDK's stdio reader parses each line with pydantic's JSON parser and drops what fails
(logged at debug): a lone surrogate escape (valid JSON, but no Unicode), nesting deeper
than that parser allows, an envelope member of the wrong type. It also reads a request
whose id is no string or integer (``true``, ``1.5``) as a notification. Each left a client
waiting for a reply to the id it sent. The server's reader (``stdio.py``) asks
``refusal`` about every line the SDK would not answer, and answers those that carry an
id: -32700 (parse error) when Python's parser rejects the line too, else -32600 (invalid
request).

The id is found by a scan of the top level only (no recursion), so any depth of nesting
elsewhere in the line costs nothing and cannot hide it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

PARSE_ERROR, INVALID_REQUEST = -32700, -32600
_DECODER = json.JSONDecoder()


@dataclass(frozen=True)
class Refusal:
    id: str | int | None  # None: the id sent is one no reply may carry (a bool, a float)
    code: int
    message: str


def refusal(line: str, parsed: bool) -> Refusal | None:
    """The reply owed for ``line``: ``parsed`` says whether the SDK read it as a message
    (then only an id it lost makes it owe one). ``None`` when nothing is owed: no request,
    or no id to reply to."""
    members = _top_level(line)
    if members is None or "id" not in members:
        return None  # a notification, or nothing readable: no reply is due
    if "method" not in members and ("result" in members or "error" in members):
        return None  # a response; an id alone with neither is a request missing its method
    sent = members["id"]
    reply_id = _reply_id(sent)
    if parsed:
        if reply_id is not None:  # the SDK kept this id: it replies itself
            return None
        return Refusal(None, INVALID_REQUEST, f"Invalid request: the id {_shown(sent)} is "
                       "not a string or an integer.")
    try:
        json.loads(line)
    except (ValueError, RecursionError):
        return Refusal(reply_id, PARSE_ERROR, "Parse error: the line is not JSON this "
                       "server can read (a lone surrogate escape, or nesting too deep).")
    return Refusal(reply_id, INVALID_REQUEST, "Invalid request: not a JSON-RPC 2.0 request "
                   "(check jsonrpc, id, method and params).")


def _reply_id(sent: object) -> str | int | None:
    """``sent`` if a reply can carry it (an integer, not a bool; a string that is Unicode)."""
    if isinstance(sent, str):
        return None if any("\ud800" <= c <= "\udfff" for c in sent) else sent
    return sent if type(sent) is int else None  # type() is int: a bool is no id


def _shown(value: object) -> str:
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:39] + "…"


def _top_level(line: str) -> dict[str, object] | None:
    """The top-level members of the object on ``line`` that are scalars (``"id"``,
    ``"method"``, ...), plus the names of the others (as ``None``); ``None`` if the line is
    no object or cannot be scanned."""
    i = _skip(line, 0)
    if i >= len(line) or line[i] != "{":
        return None
    members: dict[str, object] = {}
    i = _skip(line, i + 1)
    while i < len(line) and line[i] == '"':
        try:
            key, i = _DECODER.raw_decode(line, i)
        except ValueError:
            return None
        i = _skip(line, i)
        if i >= len(line) or line[i] != ":":
            return None
        i = _skip(line, i + 1)
        if i < len(line) and line[i] in "[{":
            members[str(key)] = None
            i = _past_container(line, i)
        else:
            try:
                members[str(key)], i = _DECODER.raw_decode(line, i)
            except ValueError:
                return members
        i = _skip(line, i)
        if i < len(line) and line[i] == ",":
            i = _skip(line, i + 1)
    return members


def _skip(line: str, i: int) -> int:
    while i < len(line) and line[i] in " \t\r\n":
        i += 1
    return i


def _past_container(line: str, i: int) -> int:
    """The index after the array or object starting at ``i``, counting brackets outside
    strings (a loop, not recursion); ``len(line)`` if it never closes."""
    depth, in_string, escaped = 0, False, False
    for j in range(i, len(line)):
        c = line[j]
        if in_string:
            if escaped:
                escaped = False
            elif c == "\\":
                escaped = True
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
        elif c in "[{":
            depth += 1
        elif c in "]}":
            depth -= 1
            if depth == 0:
                return j + 1
    return len(line)
