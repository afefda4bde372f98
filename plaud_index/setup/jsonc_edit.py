"""One member of one object of a JSON or JSONC text set or removed, every other byte kept.
Pure.

An edit replaces one value or inserts one member, as the *first* member of its object, so
no byte of the user's lines changes (inserting last would need a comma on their line).
``set_member`` and ``remove_member`` check their own work: the document read back must
equal the one before in everything but that member, or ``JsoncError`` says so.
"""

from __future__ import annotations

import json
from typing import Any

from .jsonc import JsoncError, Node, member, parse, plain, skip_blanks


def _line_start(text: str, pos: int) -> int:
    return text.rfind("\n", 0, pos) + 1


def _indent_of(text: str, pos: int) -> str | None:
    """The whitespace before ``pos`` on its line, or ``None`` when other text is there."""
    before = text[_line_start(text, pos):pos]
    return before if not before.strip() else None


def _line_indent(text: str, pos: int) -> str:
    """The leading whitespace of the line ``pos`` is on."""
    start = _line_start(text, pos)
    line = text[start:pos]
    return line[:len(line) - len(line.lstrip(" \t"))]


def _render(value: Any, indent: str, unit: str) -> str:
    try:
        rendered = json.dumps(value, indent=unit, ensure_ascii=False, allow_nan=False)
    except ValueError as exc:
        raise JsoncError(f"our entry cannot be written as JSON ({exc})") from None
    return rendered.replace("\n", "\n" + indent)


def _unit(text: str, obj: Node) -> str:
    """One level of this file's indentation (two spaces when it has none to go by)."""
    outer = _line_indent(text, obj.start)
    for _, key_start, _ in obj.members:
        inner = _indent_of(text, key_start)
        if inner is not None and inner.startswith(outer) and len(inner) > len(outer):
            return inner[len(outer):]
    return "  "


def _inserted(text: str, obj: Node, key: str, value: Any) -> str:
    """``text`` with ``"key": value`` as the first member of ``obj``."""
    unit = _unit(text, obj)
    outer = _line_indent(text, obj.start)
    name = json.dumps(key, ensure_ascii=False)
    after = obj.start + 1
    if not obj.members:
        inner = outer + unit
        body = f"\n{inner}{name}: {_render(value, inner, unit)}"
        close = obj.end - 1
        if not text[after:close].strip():  # "{}": open it up
            return text[:after] + body + f"\n{outer}" + text[close:]
        return text[:after] + body + text[after:]  # comments inside: left where they are
    first = obj.members[0][1]
    if "\n" not in text[after:first]:  # a compact object: stay compact, before its first
        spaced = " " in text[after:first + 1] or ": " in text[first:obj.end]
        compact = json.dumps(value, ensure_ascii=False, allow_nan=False,
                             separators=(", ", ": ") if spaced else (",", ":"))
        return text[:first] + f"{name}{': ' if spaced else ':'}{compact}," + \
            (" " if spaced else "") + text[first:]
    inner = _line_indent(text, first)
    line = _line_start(text, first)
    return text[:line] + f"{inner}{name}: {_render(value, inner, unit)},\n" + text[line:]


def _missing(text: str, node: Node, path: tuple[str, ...]) -> tuple[Node, tuple[str, ...]]:
    """The deepest object of ``path`` present, and the names still missing below it."""
    for depth, key in enumerate(path):
        child = member(node, (key,))
        if child is None:
            return node, path[depth:]
        if child.kind != "object":
            raise JsoncError(f'"{key}" is not an object')
        node = child
    return node, ()


def set_member(text: str, path: tuple[str, ...], key: str, value: Any,
               comments: bool = True) -> str:
    """``text`` with ``path…key`` set to ``value``: the old value's bytes replaced, or a
    new first member inserted (with whatever objects of ``path`` are missing)."""
    root = parse(text, comments)
    if root is None:
        nested: Any = {key: value}
        for name in reversed(path):
            nested = {name: nested}
        return _render(nested, "", "  ") + "\n"
    if root.kind != "object":
        raise JsoncError("the document is not a JSON object")
    holder, missing = _missing(text, root, path)
    old = member(holder, (key,)) if not missing else None
    if old is not None:
        key_start = next(start for _, start, value in holder.members if value is old)
        indent = _indent_of(text, key_start) or ""
        new = text[:old.start] + _render(value, indent, _unit(text, holder)) + text[old.end:]
    elif missing:
        nested = {key: value}
        for name in reversed(missing[1:]):
            nested = {name: nested}
        new = _inserted(text, holder, missing[0], nested)
    else:
        new = _inserted(text, holder, key, value)
    _check(text, new, path, key, value, comments)
    return new


def remove_member(text: str, path: tuple[str, ...], key: str, comments: bool = True) -> str:
    """``text`` without ``path…key`` (its line, and the comma that went with it)."""
    root = parse(text, comments)
    holder = member(root, path)
    if holder is None or holder.kind != "object":
        return text
    index = next((i for i, (name, _, _) in reversed(list(enumerate(holder.members)))
                  if name == key), None)
    if index is None:
        return text
    _, key_start, value = holder.members[index]
    start, end = key_start, value.end
    comma = skip_blanks(text, end, comments)
    if text.startswith(",", comma):  # a member follows (or a trailing comma): take ours
        end = comma + 1
        if _indent_of(text, start) is None:  # a compact object: the space after it too
            end += len(text[end:]) - len(text[end:].lstrip(" \t"))
    elif index > 0:  # the last member: the comma before it goes with it
        previous = holder.members[index - 1][2].end
        start = text.index(",", previous)
    if _indent_of(text, start) is not None:
        rest = text.find("\n", end)
        if rest >= 0 and not text[end:rest].strip():
            start, end = _line_start(text, start), rest + 1
    new = text[:start] + text[end:]
    before = plain(root)
    after = plain(parse(new, comments))
    _drop(before, path, key)
    if before != after:
        raise JsoncError("removing our entry would change more than it")
    return new


def _drop(document: Any, path: tuple[str, ...], key: str) -> None:
    for name in path:
        document = document.get(name) if isinstance(document, dict) else None
    if isinstance(document, dict):
        document.pop(key, None)


def _check(old: str, new: str, path: tuple[str, ...], key: str, value: Any,
           comments: bool) -> None:
    """The edit changed exactly our member: everything else reads back the same."""
    before, after = plain(parse(old, comments)), plain(parse(new, comments))
    written = plain(member(parse(new, comments), (*path, key)))
    expected = plain(parse(json.dumps(value, ensure_ascii=False), False))
    _drop(before, path, key)
    _drop(after, path, key)
    _prune_created(after, before, path)
    if written != expected or before != after:
        raise JsoncError("the edit would change more than our entry")


def _prune_created(after: Any, before: Any, path: tuple[str, ...]) -> None:
    """Drop the objects of ``path`` the edit created (empty once our member is gone)."""
    for name in path:
        if not isinstance(after, dict):
            return
        if not (isinstance(before, dict) and name in before):
            after.pop(name, None)
            return
        after, before = after[name], before[name]
