"""Raw Plaud detail JSON → ``Recording``. The only module that knows Plaud field names.

The wire shapes are in ``shared/plaud/API.md`` §3.2–3.4. Plaud is inconsistent
in places (notes as Markdown or JSON-wrapped, durations as int or string,
naive UTC timestamps), so every field is read tolerantly; only a payload that
cannot be a recording at all raises ``MalformedRecordingError``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from typing import Any

from ..errors import MalformedRecordingError, SourceError
from ..models import Listed, NoteSection, Recording, Utterance

# Preference order for the transcript: the polished text when present.
_TRANSCRIPT_TYPES = ("transaction_polish", "transaction")
# Keys that hold the Markdown inside a JSON-wrapped note, in order of trust.
_NOTE_KEYS = ("ai_content", "content", "markdown", "text")
_HEADING_RE = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def parse_timestamp(value: object) -> datetime | None:
    """ISO-8601 (naive = UTC, ``Z``, offsets, space separator) or epoch ms → aware UTC."""
    if value is None or value == "" or isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        seconds = value / 1000 if value > 10_000_000_000 else value
        return datetime.fromtimestamp(seconds, tz=timezone.utc)
    if not isinstance(value, str):
        return None
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        return parsed.replace(tzinfo=timezone.utc)
    return parsed.astimezone(timezone.utc)


def parse_duration_ms(value: object) -> int:
    """Milliseconds as int, float or numeric string; 0 when unknown."""
    if isinstance(value, bool) or value is None:
        return 0
    if isinstance(value, (int, float)):
        return max(int(value), 0)
    if isinstance(value, str):
        try:
            return max(int(float(value.strip())), 0)
        except ValueError:
            return 0
    return 0


def _decode_json_text(value: object) -> object:
    """A block's ``data_content`` may be JSON encoded as a string (sometimes twice)."""
    for _ in range(2):
        if not isinstance(value, str):
            return value
        stripped = value.strip()
        if not stripped or stripped[0] not in "[{\"":
            return value
        try:
            value = json.loads(stripped)
        except ValueError:
            return value
    return value


def _as_int_ms(value: object) -> int | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return int(value)
    if isinstance(value, str):
        try:
            return int(float(value))
        except ValueError:
            return None
    return None


def parse_segments(content: object) -> tuple[Utterance, ...]:
    """Transcript segments → utterances; blank ones dropped, speaker falls back."""
    data = _decode_json_text(content)
    if isinstance(data, Mapping):
        data = data.get("trans_result") or data.get("segments") or []
    if not isinstance(data, list):
        return ()
    out: list[Utterance] = []
    for seg in data:
        if not isinstance(seg, Mapping):
            continue
        text = seg.get("content")
        if not isinstance(text, str) or not text.strip():
            continue
        start = _as_int_ms(seg.get("start_time")) or 0
        end = _as_int_ms(seg.get("end_time"))
        speaker = seg.get("speaker") or seg.get("original_speaker") or ""
        out.append(Utterance(
            text=" ".join(text.split()),
            start_ms=max(start, 0),
            end_ms=max(end if end is not None else start, start),
            speaker=str(speaker).strip(),
        ))
    return tuple(out)


def note_markdown(content: object) -> str:
    """A note's ``data_content``: Markdown, or JSON wrapping it (``ai_content`` …)."""
    data = _decode_json_text(content)
    for _ in range(3):  # unwrap {"content": {"markdown": …}} and friends
        if not isinstance(data, Mapping):
            break
        data = next((data[k] for k in _NOTE_KEYS if data.get(k)), "")
    return data.strip() if isinstance(data, str) else ""


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


def _blocks(raw: Mapping[str, Any], *keys: str) -> Iterable[Mapping[str, Any]]:
    for key in keys:
        blocks = raw.get(key)
        if isinstance(blocks, list):
            yield from (b for b in blocks if isinstance(b, Mapping))


def _is_note(block: Mapping[str, Any]) -> bool:
    kind = str(block.get("data_type") or "")
    return kind.endswith("note") or str(block.get("data_id") or "").startswith("auto_sum:")


def _transcript(raw: Mapping[str, Any]) -> tuple[Utterance, ...]:
    by_type: dict[str, tuple[Utterance, ...]] = {}
    # ``source_list``: the developer API; ``content_list``: the web API (API.md §5).
    for block in _blocks(raw, "source_list", "content_list"):
        kind = block.get("data_type")
        if kind in _TRANSCRIPT_TYPES and kind not in by_type:
            by_type[kind] = parse_segments(block.get("data_content"))
    # outline, mark_memo, high_light and unknown types are ignored on purpose:
    # they repeat the transcript or carry no searchable prose.
    return next((by_type[t] for t in _TRANSCRIPT_TYPES if by_type.get(t)), ())


def _notes(raw: Mapping[str, Any]) -> tuple[NoteSection, ...]:
    sections: list[NoteSection] = []
    web_notes = [b for b in _blocks(raw, "content_list", "pre_download_content_list")
                 if _is_note(b)]
    seen: set[object] = set()
    for block in [*_blocks(raw, "note_list"), *web_notes]:
        if block.get("data_id") and block.get("data_id") in seen:
            continue  # the web API repeats a note in content_list and pre_download
        if block.get("data_error_code"):
            continue  # a failed note; its content is not a note (API.md §3.2, X3)
        markdown = note_markdown(block.get("data_content"))
        if not markdown:
            continue
        seen.add(block.get("data_id"))
        fallback = "Summary" if str(block.get("data_id") or "").startswith("auto_sum") \
            else "Note"
        title = str(block.get("data_tab_name") or block.get("data_title") or fallback).strip()
        for heading, text in split_markdown_sections(markdown):
            sections.append(NoteSection(note_title=title, heading=heading, text=text))
    return tuple(sections)


def normalize_recording(raw: object) -> Recording:
    """One detail payload (optionally wrapped in ``{"data": …}``) → ``Recording``."""
    if isinstance(raw, Mapping) and isinstance(raw.get("data"), Mapping) and "id" not in raw:
        raw = raw["data"]
    if not isinstance(raw, Mapping):
        raise MalformedRecordingError(
            f"Plaud returned a recording that is not a JSON object ({type(raw).__name__})"
        )
    file_id = raw.get("id") or raw.get("file_id")
    if not isinstance(file_id, str) or not file_id.strip():
        raise MalformedRecordingError("Plaud returned a recording without an id; skipping it")
    start_at = parse_timestamp(raw.get("start_at") or raw.get("start_time"))
    created_at = parse_timestamp(raw.get("created_at")) or start_at
    if created_at is None:
        raise MalformedRecordingError(
            f"Recording {file_id} has no usable created_at/start_at timestamp; skipping it"
        )
    title = raw.get("name") or raw.get("file_name") or raw.get("filename") or ""
    # the web API's detail has start_time (epoch ms) and no created_at
    return Recording(
        file_id=file_id.strip(),
        title=str(title).strip() or "Untitled recording",
        created_at=created_at,
        start_at=start_at,
        duration_ms=parse_duration_ms(raw.get("duration")),
        utterances=_transcript(raw),
        notes=_notes(raw),
    )


def normalize_listing(rows: object) -> dict[str, Listed]:
    """A list walk's rows → ``{file_id: Listed}`` in listing order, first row of an id wins.

    A listing that is not a list is an error, never "no recordings" (that would delete)."""
    if not isinstance(rows, list):
        raise SourceError("Plaud's recording list is not a list; nothing was changed")
    out: dict[str, Listed] = {}
    for row in rows:
        file_id = row.get("id") if isinstance(row, Mapping) else None
        if isinstance(file_id, str) and file_id and file_id not in out:
            name = row.get("name") if isinstance(row, Mapping) else None
            out[file_id] = Listed(file_id, str(name).strip() if isinstance(name, str) else "")
    return out
