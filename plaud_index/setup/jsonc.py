"""JSON and JSON with comments, edited in place: one member of one object set or removed,
every other byte kept. Pure.

A client's config is the user's file: its comments (VS Code's ``mcp.json`` is JSONC),
key order, spacing, a number such as ``1e999`` (which Python would read as infinity and
write back as ``Infinity``, not JSON) are theirs. So the text is parsed with positions,
and an edit replaces one value or inserts one member, as the *first* member of its
object, so no byte of the user's lines changes (inserting last would need a comma on
their line). ``set_member`` and ``remove_member`` check their own work: the document
read back must equal the one before in everything but that member.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")
_LITERALS = {"true": True, "false": False, "null": None}


class JsoncError(ValueError):
    """The text is not JSON (or JSONC) that can be edited in place."""


class Number(str):
    """A number as written: compared by its text, never turned into a float."""


@dataclass(frozen=True)
class Node:
    start: int
    end: int
    kind: str  # "object" | "array" | "string" | "number" | "literal"
    members: tuple[tuple[str, int, Node], ...] = ()  # (key, key start, value)
    items: tuple[Node, ...] = ()
    value: Any = None  # a string's or literal's value, a number's text


class _Parser:
    def __init__(self, text: str, comments: bool) -> None:
        self.text = text
        self.comments = comments
        self.pos = 0

    def fail(self, what: str) -> JsoncError:
        line = self.text.count("\n", 0, self.pos) + 1
        return JsoncError(f"{what} at line {line}")

    def skip(self) -> None:
        text = self.text
        while self.pos < len(text):
            char = text[self.pos]
            if char in " \t\r\n\ufeff":
                self.pos += 1
            elif self.comments and text.startswith("//", self.pos):
                end = text.find("\n", self.pos)
                self.pos = len(text) if end < 0 else end
            elif self.comments and text.startswith("/*", self.pos):
                end = text.find("*/", self.pos + 2)
                if end < 0:
                    raise self.fail("an unclosed /* comment")
                self.pos = end + 2
            else:
                return

    def value(self, depth: int = 0) -> Node:
        if depth > 200:
            raise self.fail("nesting too deep")
        self.skip()
        if self.pos >= len(self.text):
            raise self.fail("a value is missing")
        char = self.text[self.pos]
        if char == "{":
            return self.container(depth, "}")
        if char == "[":
            return self.container(depth, "]")
        if char == '"':
            return self.string()
        start = self.pos
        match = _NUMBER.match(self.text, start)
        if match:
            self.pos = match.end()
            return Node(start, self.pos, "number", value=Number(match.group()))
        for word, literal in _LITERALS.items():
            if self.text.startswith(word, start):
                self.pos = start + len(word)
                return Node(start, self.pos, "literal", value=literal)
        raise self.fail(f"unexpected {char!r}")

    def string(self) -> Node:
        start = self.pos
        end = start + 1
        while True:
            end = self.text.find('"', end)
            if end < 0:
                raise self.fail("an unclosed string")
            backslashes = len(self.text[:end]) - len(self.text[:end].rstrip("\\"))
            if backslashes % 2 == 0:
                break
            end += 1
        self.pos = end + 1
        try:
            value = json.loads(self.text[start:self.pos])
        except ValueError as exc:
            raise self.fail(f"a bad string ({exc.args[0]})") from None
        return Node(start, self.pos, "string", value=value)

    def container(self, depth: int, close: str) -> Node:
        start = self.pos
        self.pos += 1
        members: list[tuple[str, int, Node]] = []
        items: list[Node] = []
        while True:
            self.skip()
            if self.text.startswith(close, self.pos):
                break
            if members or items:
                if not self.text.startswith(",", self.pos):
                    raise self.fail(f"a ',' or {close!r} is missing")
                self.pos += 1
                self.skip()
                if self.text.startswith(close, self.pos):
                    if not self.comments:
                        raise self.fail("a trailing comma")
                    break
            if close == "}":
                if not self.text.startswith('"', self.pos):
                    raise self.fail("a member name is missing")
                key = self.string()
                self.skip()
                if not self.text.startswith(":", self.pos):
                    raise self.fail("a ':' is missing")
                self.pos += 1
                members.append((key.value, key.start, self.value(depth + 1)))
            else:
                items.append(self.value(depth + 1))
        self.pos += 1
        return Node(start, self.pos, "object" if close == "}" else "array",
                    tuple(members), tuple(items))


def parse(text: str, comments: bool = True) -> Node | None:
    """The document's tree with positions; ``None`` for an empty (or blank) file."""
    parser = _Parser(text, comments)
    parser.skip()
    if parser.pos >= len(text):
        return None
    root = parser.value()
    parser.skip()
    if parser.pos < len(text):
        raise parser.fail("text after the document")
    return root


def plain(node: Node | None) -> Any:
    """The document as Python values (numbers as their text, so nothing is rounded)."""
    if node is None:
        return None
    if node.kind == "object":
        return {key: plain(value) for key, _, value in node.members}
    if node.kind == "array":
        return [plain(item) for item in node.items]
    return node.value


def member(node: Node | None, path: tuple[str, ...]) -> Node | None:
    """The value at ``path`` (the last of duplicate names, as JSON readers take it)."""
    for key in path:
        if node is None or node.kind != "object":
            return None
        node = next((value for name, _, value in reversed(node.members) if name == key), None)
    return node


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
    comma = _after_blanks(text, end, comments)
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


def _after_blanks(text: str, pos: int, comments: bool) -> int:
    parser = _Parser(text, comments)
    parser.pos = pos
    parser.skip()
    return parser.pos


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
