"""Plaud's AI notes → ``NoteSection``s: every tab, highlights, marks. Pure.

A note's payload is Markdown, or JSON wrapping it (``ai_content`` …, API.md §3.2,
§8). A note with content is a note whatever its ``data_error_code`` (10 is seen
on valid summaries); the code is kept. Highlights come as Markdown or as a JSON
array of ``{content, timestamp, title}``; device marks as ``mark_memo``
``{"marks": [{timestamp, mark_content, …}]}``: each of those is placed at its
moment. Images in notes are not prose: their paths never reach the index.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..cleaning import clean_text
from ..models import NOTE_TITLES, NoteSection
from .fields import (
    MAX_DURATION_MS,
    MAX_RECORDING_CHARS,
    MAX_SEGMENTS,
    MAX_TITLE_CHARS,
    as_int_ms,
    block_kind,
    blocks_of,
    data_id_of,
    decode_json_text,
    short_text,
    web_blocks,
)

# Keys that hold the Markdown inside a JSON-wrapped note, in order of trust.
_NOTE_KEYS = ("ai_content", "content", "markdown", "text")
_HEADING_RE = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
# Blocks whose items point at moments of the recording.
_TIMED_KINDS = {"high_light": "highlight", "mark_memo": "mark"}
HIGHLIGHTS, MARKS = NOTE_TITLES["highlight"], NOTE_TITLES["mark"]
_MD_IMAGE = re.compile(r"!\[([^\]\n]*)\]\([^)\n]*\)")
_HTML_IMAGE = re.compile(r"<img\b[^>\n]*>", re.IGNORECASE)
_PLACEHOLDER_ALTS = {"", "plaud note", "image", "img"}


def note_markdown(content: object) -> str:
    """A note's ``data_content``: Markdown, or JSON wrapping it (``ai_content`` …)."""
    data = decode_json_text(content)
    for _ in range(3):  # unwrap {"content": {"markdown": …}} and friends
        if not isinstance(data, Mapping):
            break
        data = next((data[k] for k in _NOTE_KEYS if data.get(k)), "")
    return clean_text(data).strip()[:MAX_RECORDING_CHARS] if isinstance(data, str) else ""


def split_markdown_sections(markdown: str) -> list[tuple[str, str]]:
    """Markdown → ``[(heading path, body)]``, heading path like ``"Summary > Decisions"``."""
    sections: list[tuple[str, str]] = []
    path: list[tuple[int, str]] = []
    body: list[str] = []

    def flush() -> None:
        text = "\n".join(body).strip()
        if text:
            sections.append((" > ".join(title for _, title in path), text))
        body.clear()

    for line in markdown.splitlines():
        match = _HEADING_RE.match(line)
        if match:
            flush()
            level = len(match.group(1))
            path = [(lvl, t) for lvl, t in path if lvl < level] + [(level, match.group(2))]
        else:
            body.append(line)
    flush()
    return sections


def _is_note(block: Mapping[str, Any]) -> bool:
    kind = block_kind(block)
    return kind.endswith("note") or kind in _TIMED_KINDS


def _note_title(block: Mapping[str, Any], fallback: str) -> str:
    """A tab's name as the user sees it: the template it was made with (web notes with
    several tabs), else the tab name, else the block title."""
    extra = block.get("extra")
    template = extra.get("used_template") if isinstance(extra, Mapping) else None
    named = template.get("template_name") if isinstance(template, Mapping) else None
    return next((t for t in (short_text(v, MAX_TITLE_CHARS) for v in (
        named, block.get("data_tab_name"), block.get("data_title"))) if t), fallback)


def _fallback_title(block_type: str, kind: str) -> str:
    """A title for a block that has none (an ``action_items`` block without tab or title
    occurs, API.md §8): what its type says, in words."""
    if kind != "note":
        return HIGHLIGHTS if kind == "highlight" else MARKS
    if block_type == "auto_sum_note":
        return "Summary"
    words = short_text(block_type.removesuffix("_note").replace("_", " "), 60).strip()
    return words.capitalize() if words and block_type != "sum_multi_note" else "Note"


def _error_code(block: Mapping[str, Any]) -> int:
    code = as_int_ms(block.get("data_error_code"))
    return code if code is not None else 0


def _timed_sections(block: Mapping[str, Any], kind: str) -> list[NoteSection]:
    """Highlights as a JSON array, or the device marks (``mark_memo``): each a moment."""
    data = decode_json_text(block.get("data_content"))
    if isinstance(data, Mapping):
        data = data.get("marks") if kind == "mark" else data.get("highlights")
    if not isinstance(data, list):
        return []
    title = HIGHLIGHTS if kind == "highlight" else MARKS
    out: list[NoteSection] = []
    for item in data[:MAX_SEGMENTS]:
        if not isinstance(item, Mapping):
            continue
        at = as_int_ms(item.get("timestamp"))
        at = min(max(at, 0), MAX_DURATION_MS) if at is not None else None
        keys = ("mark_content", "content", "title") if kind == "mark" else ("content",)
        text = next((t for t in (note_markdown(item.get(k)) for k in keys) if t), "")
        heading = short_text(item.get("title"), MAX_TITLE_CHARS) if kind == "highlight" \
            else ""
        if not text and kind == "mark":
            text = short_text(item.get("mark_type_string"), MAX_TITLE_CHARS) or "Marked"
        if text:
            out.append(NoteSection(title, heading, text, at_ms=at, kind=kind,
                                   error_code=_error_code(block)))
    return out


def read_notes(raw: Mapping[str, Any]) -> tuple[tuple[NoteSection, ...], tuple[str, ...]]:
    """Every note tab's sections, highlights and marks; and the notes that came without
    content, each with its reason. A note with content is a note whatever its
    ``data_error_code`` (API.md §8: 10 is seen on valid summaries); the code is kept."""
    sections: list[NoteSection] = []
    empty: dict[str, str] = {}  # data id (or a number) -> why it gave no text
    blocks = [*blocks_of(raw, "note_list"),
              *(b for b in blocks_of(raw, "source_list") if block_kind(b) in _TIMED_KINDS),
              *(b for b in web_blocks(raw) if _is_note(b))]
    seen: set[str] = set()
    for block in blocks:
        data_id = data_id_of(block)
        if data_id and data_id in seen:
            continue  # the web API repeats a note in content_list and pre_download
        kind = _TIMED_KINDS.get(block_kind(block), "note")
        title = _note_title(block, _fallback_title(block_kind(block), kind))
        timed = _timed_sections(block, kind) if kind != "note" else []
        markdown = "" if timed else note_markdown(block.get("data_content"))
        parts = timed or [NoteSection(title, heading, text, kind=kind,
                                      error_code=_error_code(block))
                          for heading, text in split_markdown_sections(strip_images(markdown))]
        if not parts:
            code = _error_code(block)
            empty.setdefault(data_id or str(len(empty)), f"note '{title}' has no text" + (
                f" (Plaud error code {code})" if code else ""))
            continue
        seen.add(data_id)
        sections.extend(parts)
    # a block the web API repeats may be empty in one list and whole in the other
    return tuple(sections), tuple(dict.fromkeys(
        why for key, why in empty.items() if key not in seen))


def strip_images(markdown: str) -> str:
    """Note images out of the text: a path is not prose and is never fetched. Alt text
    stays unless it is Plaud's placeholder."""
    def alt(match: re.Match[str]) -> str:
        text = match.group(1).strip()
        return "" if text.casefold() in _PLACEHOLDER_ALTS else text

    return _HTML_IMAGE.sub("", _MD_IMAGE.sub(alt, markdown))
