"""JSON and JSON with comments, read with positions: what ``jsonc_edit`` needs to change
one member of a user's file and keep every other byte. Pure.

A client's config is the user's file: its comments (VS Code's ``mcp.json`` is JSONC),
key order, spacing, a number such as ``1e999`` (which Python would read as infinity and
write back as ``Infinity``, not JSON) are theirs. So every value is a ``Node`` that knows
where it starts and ends, and numbers stay the text they were written as.
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


def skip_blanks(text: str, pos: int, comments: bool = True) -> int:
    """The position of the first character at or after ``pos`` that is neither
    whitespace nor (when ``comments``) a comment."""
    parser = _Parser(text, comments)
    parser.pos = pos
    parser.skip()
    return parser.pos
