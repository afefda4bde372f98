"""TOML edited in place: one table (``[mcp_servers.plaud-index]``, with any sub-tables of
it) set or removed, every other byte kept. Pure.

Inside our table too, what does not change keeps its bytes: a statement whose key keeps
its value stays as the user wrote it (a multi-line string, a comment after it), a
sub-table whose value is unchanged (``[mcp_servers.plaud-index.env]`` with the person's
``HTTPS_PROXY``) stays a sub-table; only the statements whose values change are written
again, and new keys go after the table's last statement.

The standard library reads TOML but never writes it, and rewriting a user's file from a
parse would lose their comments and layout. So the text is scanned statement by
statement (headers may be indented, values may run over lines: arrays, multi-line
strings, comments inside them), our table's span runs from its header to its last
statement (the comments and blank lines after it belong to what follows), and only that
span is replaced; a new table is appended. ``set_table`` checks its own work where the
standard library can read TOML (3.11+): the document read back equals the one before in
everything but our table.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import dataclass
from typing import Any

_BARE = re.compile(r"[A-Za-z0-9_-]+")


class TomlEditError(ValueError):
    """The text cannot be edited in place with certainty."""


@dataclass(frozen=True)
class Table:
    path: tuple[str, ...]
    start: int  # the header line's first character
    end: int  # after the newline of its last statement (the header's, when it has none)


def _skip_string(text: str, pos: int) -> int:
    """``pos`` at a quote: the index after the string it opens."""
    for quote in ('"""', "'''"):
        if text.startswith(quote, pos):
            end = pos + 3
            while True:
                end = text.find(quote, end)
                if end < 0:
                    raise TomlEditError("an unclosed multi-line string")
                if quote == "'''" or _unescaped(text, end):
                    while text.startswith(quote[0], end + 3):  # """a"""" ends a quote later
                        end += 1
                    return end + 3
                end += 1
    quote = text[pos]
    end = pos + 1
    while True:
        end = text.find(quote, end)
        newline = text.find("\n", pos)
        if end < 0 or 0 <= newline < end:
            raise TomlEditError("an unclosed string")
        if quote == "'" or _unescaped(text, end):
            return end + 1
        end += 1


def _unescaped(text: str, pos: int) -> bool:
    backslashes = 0
    while pos - backslashes - 1 >= 0 and text[pos - backslashes - 1] == "\\":
        backslashes += 1
    return backslashes % 2 == 0


def _statement_end(text: str, pos: int) -> int:
    """From a statement's first character, the index after the newline that ends it
    (arrays and inline tables may span lines; strings and comments hide brackets)."""
    depth = 0
    while pos < len(text):
        char = text[pos]
        if char in "\"'":
            pos = _skip_string(text, pos)
            continue
        if char == "#":
            newline = text.find("\n", pos)
            pos = len(text) if newline < 0 else newline
            continue
        if char in "[{":
            depth += 1
        elif char in "]}":
            depth -= 1
        elif char == "\n" and depth <= 0:
            return pos + 1
        pos += 1
    return len(text)


def _key_path(header: str) -> tuple[str, ...]:
    """``mcp_servers."plaud-index"`` → ("mcp_servers", "plaud-index")."""
    parts: list[str] = []
    pos = 0
    while pos < len(header):
        char = header[pos]
        if char in " \t.":
            pos += 1
        elif char in "\"'":
            end = _skip_string(header, pos)
            raw = header[pos:end]
            parts.append(json.loads(raw) if char == '"' else raw[1:-1])
            pos = end
        else:
            match = _BARE.match(header, pos)
            if match is None:
                raise TomlEditError(f"cannot read the table name {header!r}")
            parts.append(match.group())
            pos = match.end()
    return tuple(parts)


def tables(text: str) -> list[Table]:
    """Every ``[table]`` and ``[[array table]]`` with its span, in order."""
    found: list[Table] = []
    pos = 0
    current: tuple[tuple[str, ...], int, int] | None = None
    while pos < len(text):
        line_end = text.find("\n", pos)
        line_end = len(text) if line_end < 0 else line_end + 1
        stripped = text[pos:line_end].strip()
        if not stripped or stripped.startswith("#"):
            pos = line_end
            continue
        first = pos + len(text[pos:line_end]) - len(text[pos:line_end].lstrip())
        if text[first] == "[":
            if current is not None:
                found.append(Table(*current))
            double = text.startswith("[[", first)
            close = _statement_end(text, first)
            header = text[first:close].split("#")[0].strip()
            inner = header[2:-2] if double else header[1:-1]
            if not header.endswith("]]" if double else "]"):
                raise TomlEditError(f"cannot read the header {header!r}")
            current = (_key_path(inner), pos, close)
            pos = close
            continue
        end = _statement_end(text, first)
        if current is not None:
            current = (current[0], current[1], end)
        pos = end
    if current is not None:
        found.append(Table(*current))
    return found


def _string(value: str) -> str:
    """A TOML basic string (JSON's escapes are TOML's, but DEL and non-BMP differ)."""
    body = json.dumps(value, ensure_ascii=False)[1:-1].replace("\x7f", "\\u007F")
    return f'"{body}"'


def _key(name: str) -> str:
    return name if _BARE.fullmatch(name) else _string(name)


def render_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            return {"nan": "nan", "inf": "inf", "-inf": "-inf"}[str(value)]
        return repr(value)
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(render_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{_key(str(k))} = {render_value(v)}"
                                for k, v in value.items()) + " }"
    raise TomlEditError(f"cannot write {type(value).__name__} as TOML")


def render_table(path: tuple[str, ...], entry: dict[str, Any]) -> str:
    """``[a.b]`` and one line per key (tables inline: nothing else may define them)."""
    lines = [f"[{'.'.join(_key(p) for p in path)}]"]
    lines += [f"{_key(str(k))} = {render_value(v)}" for k, v in entry.items()]
    return "\n".join(lines) + "\n"


def _ours(found: list[Table], path: tuple[str, ...]) -> list[Table]:
    return [t for t in found if t.path[:len(path)] == path]


def set_table(text: str, path: tuple[str, ...], entry: dict[str, Any]) -> str:
    """``text`` with the table at ``path`` (and its sub-tables) holding ``entry``, or
    ``entry`` appended as a new table."""
    ours = _ours(tables(text), path)
    if not ours:
        table = render_table(path, entry)
        joiner = "" if not text else "\n" if text.endswith("\n\n") or not text.strip() \
            else "\n\n" if not text.endswith("\n") else "\n"
        new = text + joiner + table if text.strip() else table
    else:
        new = _edited(text, ours, path, entry)
    _check(text, new, path, entry)
    return new


def _edited(text: str, ours: list[Table], path: tuple[str, ...], entry: dict[str, Any]) -> str:
    """Our table's statements changed one by one; a sub-table kept where its value is."""
    old = _read(text, path)
    depth = len(path)
    kept_subs = {t.path[depth] for t in ours[1:]
                 if old is not None and t.path[depth] in entry and
                 old.get(t.path[depth]) == entry[t.path[depth]]}
    dropped = [t for t in ours[1:] if t.path[depth] not in kept_subs]
    main = ours[0]
    body = _statements(text, main, {k: v for k, v in entry.items() if k not in kept_subs})
    pieces, pos = [], 0
    for table in sorted([main, *dropped], key=lambda t: t.start):
        start = table.start
        if table is not main and text[:start].endswith("\n\n"):
            start -= 1
        pieces.append(text[pos:start])
        pieces.append(body if table is main else "")
        pos = table.end
    pieces.append(text[pos:])
    return "".join(pieces)


def _statements(text: str, table: Table, entry: dict[str, Any]) -> str:
    """The table's text with each statement of a key in ``entry`` kept when its value is
    the same, written again when not, left out when its key is not in ``entry``; keys not
    yet there written after the last statement."""
    header_end = _statement_end(text, text.index("[", table.start))
    out = [text[table.start:header_end]]
    written: set[str] = set()
    pos = header_end
    while pos < table.end:
        line_end = text.find("\n", pos)
        line_end = table.end if line_end < 0 else min(line_end + 1, table.end)
        stripped = text[pos:line_end].strip()
        if not stripped or stripped.startswith("#"):
            out.append(text[pos:line_end])
            pos = line_end
            continue
        end = min(_statement_end(text, pos), table.end)
        statement = text[pos:end]
        key = _statement_key(statement)
        if key in entry and key not in written:
            same = _value_of(statement, key)
            out.append(statement if same == (entry[key],) else
                       f"{_key(key)} = {render_value(entry[key])}\n")
            written.add(key)
        pos = end
    tail = [f"{_key(str(k))} = {render_value(v)}\n" for k, v in entry.items()
            if k not in written]
    if tail and out and not out[-1].endswith("\n"):
        out[-1] += "\n"
    return "".join(out) + "".join(tail)


def _statement_key(statement: str) -> str:
    """The first part of a statement's key (``env`` of ``env.HTTPS_PROXY = …``)."""
    head = statement.split("=", 1)[0].strip()
    path = _key_path(head)
    if not path:
        raise TomlEditError(f"cannot read the key of {statement[:60]!r}")
    return path[0]


def _value_of(statement: str, key: str) -> tuple[Any, ...] | None:
    """``(value,)`` of a whole ``key = value`` statement; ``None`` where it cannot be told
    (no reader on Python 3.10, or a dotted key that sets a part of the value)."""
    try:
        import tomllib
    except ModuleNotFoundError:
        return None
    if len(_key_path(statement.split("=", 1)[0].strip())) > 1:  # a part of the value
        return None
    try:
        return (tomllib.loads(statement).get(key),)
    except tomllib.TOMLDecodeError:
        return None


def _read(text: str, path: tuple[str, ...]) -> dict[str, Any] | None:
    try:
        import tomllib
    except ModuleNotFoundError:
        return None
    holder: Any = tomllib.loads(text)
    for name in path:
        holder = holder.get(name) if isinstance(holder, dict) else None
    return holder if isinstance(holder, dict) else None


def remove_table(text: str, path: tuple[str, ...]) -> str:
    """``text`` without our table and its sub-tables (the blank line before it too)."""
    ours = _ours(tables(text), path)
    if not ours:
        return text
    new = _without(text, ours)
    _check(text, new, path, None)
    return new


def _without(text: str, spans: list[Table]) -> str:
    for table in reversed(spans):
        start = table.start
        if text[:start].endswith("\n\n"):  # the blank line that set it apart
            start -= 1
        text = text[:start] + text[table.end:]
    return text


def _check(old: str, new: str, path: tuple[str, ...], entry: dict[str, Any] | None) -> None:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10: no reader to check with
        return
    try:
        before, after = tomllib.loads(old), tomllib.loads(new)
    except tomllib.TOMLDecodeError as exc:
        raise TomlEditError(f"the file would not be valid TOML after the edit ({exc})") from None
    written = _pop(after, path)
    _pop(before, path)
    if written != entry or _json(before) != _json(after):
        raise TomlEditError("the edit would change more than our table")


def _pop(document: dict[str, Any], path: tuple[str, ...]) -> Any:
    holder: Any = document
    for name in path[:-1]:
        holder = holder.get(name) if isinstance(holder, dict) else None
    if not isinstance(holder, dict):
        return None
    value = holder.pop(path[-1], None)
    if not holder and holder is not document:  # an emptied parent of ours: as if absent
        _pop(document, path[:-1])
    return value


def _json(document: Any) -> str:
    """A comparable form (NaN equals itself as text)."""
    return json.dumps(document, sort_keys=True, default=str)
