"""Raw Plaud detail JSON → ``Recording``. The only module that knows Plaud field names.

The wire shapes are in ``shared/plaud/API.md`` §3.2–3.4. Plaud is inconsistent
in places (notes as Markdown or JSON-wrapped, durations as int or string,
naive UTC timestamps), so every field is read tolerantly; only a payload that
cannot be a recording at all raises ``MalformedRecordingError``.

Everything is also sanitised here, once, so no later stage meets it: lone
surrogates become U+FFFD and control characters (NUL, ESC, …) are dropped from
every string; timestamps in seconds, milliseconds or microseconds are told apart
and must fall in 2000–2100; NaN, infinities and absurd durations are rejected;
fields of the wrong type are ignored; sizes are capped (``MAX_*``).
"""

from __future__ import annotations

import json
import logging
import math
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
_SURROGATES = re.compile("[\ud800-\udfff]")
_CONTROLS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
# Bidirectional embeddings, overrides and isolates reorder what follows them, so a title can
# display as something it is not; zero-width spaces and the BOM hide text boundaries. No
# script needs them in running text (RTL text orders itself), so they go everywhere.
_REORDERING = re.compile("[\u202a-\u202e\u2066-\u2069\u200b\u2060\ufeff]")
# In one-line names (titles, speakers) the invisible marks and joiners go too; transcript
# text keeps ZWJ/ZWNJ (Persian, Indic scripts and emoji need them) and LRM/RLM.
_INVISIBLE = re.compile("[\u061c\u200c-\u200f\u180e]")
EARLIEST = datetime(2000, 1, 1, tzinfo=timezone.utc)
LATEST = datetime(2100, 1, 1, tzinfo=timezone.utc)
MAX_DURATION_MS = 7 * 86_400_000  # a week: longer is a unit mix-up, not a recording
MAX_ID_CHARS = 200
MAX_TITLE_CHARS = 500
MAX_SPEAKER_CHARS = 200
MAX_RECORDING_CHARS = 20_000_000  # about twenty days of speech; more is cut, with a warning
MAX_SEGMENTS = 200_000

log = logging.getLogger(__name__)


def clean_text(value: str) -> str:
    """Lone surrogates → U+FFFD; control characters (but newline and tab) and reordering
    controls removed."""
    return _REORDERING.sub("", _CONTROLS.sub("", _SURROGATES.sub("\ufffd", value)))


def _finite(value: float) -> bool:
    return not (math.isnan(value) or math.isinf(value))


def parse_timestamp(value: object) -> datetime | None:
    """ISO-8601 (naive = UTC, ``Z``, offsets, space separator) or an epoch in seconds,
    milliseconds or microseconds → aware UTC; ``None`` for anything outside 2000–2100."""
    if value is None or value == "" or isinstance(value, bool):
        return None
    try:
        if isinstance(value, (int, float)):
            if not _finite(float(value)) or value <= 0:
                return None
            seconds = value / 1e6 if value > 1e14 else value / 1e3 if value > 1e11 else value
            parsed = datetime.fromtimestamp(seconds, tz=timezone.utc)
        elif isinstance(value, str):
            text = value.strip()[:64]
            if text.endswith(("Z", "z")):
                text = text[:-1] + "+00:00"
            parsed = datetime.fromisoformat(text)
            parsed = parsed.replace(tzinfo=timezone.utc) if parsed.tzinfo is None \
                else parsed.astimezone(timezone.utc)
        else:
            return None
    except (ValueError, OverflowError, OSError):  # 9999-12-31T23:00-05:00 overflows UTC
        return None
    return parsed if EARLIEST <= parsed < LATEST else None


def parse_duration_ms(value: object) -> int:
    """Milliseconds as int, float or numeric string; 0 when unknown or absurd."""
    ms = _as_int_ms(value)
    return ms if ms is not None and 0 <= ms <= MAX_DURATION_MS else 0


def _decode_json_text(value: object) -> object:
    """A block's ``data_content`` may be JSON encoded as a string (sometimes twice).
    JSON nested deeper than Python can parse is no content at all."""
    for _ in range(2):
        if not isinstance(value, str):
            return value
        stripped = value.strip()
        if not stripped or stripped[0] not in "[{\"":
            return value
        try:
            value = json.loads(stripped)
        except RecursionError:
            return None
        except ValueError:
            return value
    return value


def _as_int_ms(value: object) -> int | None:
    """A finite number of milliseconds (int, float or numeric string), else ``None``."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, str):
        try:
            value = float(value.strip()[:32])
        except ValueError:
            return None
    if isinstance(value, (int, float)) and _finite(float(value)) and abs(value) < 1e15:
        return int(value)
    return None


def _short_text(value: object, limit: int) -> str:
    """A clean one-line string of at most ``limit`` characters (numbers are stringified)."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return ""
    return " ".join(_INVISIBLE.sub("", clean_text(str(value))).split())[:limit]


def parse_segments(content: object) -> tuple[Utterance, ...]:
    """Transcript segments → utterances; blank ones dropped, speaker falls back."""
    data = _decode_json_text(content)
    if isinstance(data, Mapping):
        data = data.get("trans_result") or data.get("segments") or []
    if not isinstance(data, list):
        return ()
    out: list[Utterance] = []
    budget = MAX_RECORDING_CHARS
    for seg in data[:MAX_SEGMENTS]:
        if not isinstance(seg, Mapping):
            continue
        text = seg.get("content")
        if not isinstance(text, str) or not text.strip():
            continue
        text = " ".join(clean_text(text).split())[:budget]
        if not text:
            continue
        budget -= len(text)
        start = min(max(_as_int_ms(seg.get("start_time")) or 0, 0), MAX_DURATION_MS)
        end = _as_int_ms(seg.get("end_time"))
        end = min(max(end if end is not None else start, start), MAX_DURATION_MS)
        speaker = _short_text(seg.get("speaker"), MAX_SPEAKER_CHARS) or \
            _short_text(seg.get("original_speaker"), MAX_SPEAKER_CHARS)
        out.append(Utterance(text=text, start_ms=start, end_ms=end, speaker=speaker))
        if budget <= 0:
            log.warning("A transcript is longer than %d characters; the rest is not indexed",
                        MAX_RECORDING_CHARS)
            break
    return tuple(out)


def note_markdown(content: object) -> str:
    """A note's ``data_content``: Markdown, or JSON wrapping it (``ai_content`` …)."""
    data = _decode_json_text(content)
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


def _blocks(raw: Mapping[str, Any], *keys: str) -> Iterable[Mapping[str, Any]]:
    for key in keys:
        blocks = raw.get(key)
        if isinstance(blocks, list):
            yield from (b for b in blocks if isinstance(b, Mapping))


def _data_id(block: Mapping[str, Any]) -> str:
    value = block.get("data_id")
    return value if isinstance(value, str) else ""


def _is_note(block: Mapping[str, Any]) -> bool:
    kind = block.get("data_type")
    return (isinstance(kind, str) and kind.endswith("note")) or \
        _data_id(block).startswith("auto_sum:")


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
    seen: set[str] = set()
    for block in [*_blocks(raw, "note_list"), *web_notes]:
        data_id = _data_id(block)
        if data_id and data_id in seen:
            continue  # the web API repeats a note in content_list and pre_download
        if block.get("data_error_code"):
            continue  # a failed note; its content is not a note (API.md §3.2, X3)
        markdown = note_markdown(block.get("data_content"))
        if not markdown:
            continue
        seen.add(data_id)
        fallback = "Summary" if data_id.startswith("auto_sum") else "Note"
        title = _short_text(block.get("data_tab_name"), MAX_TITLE_CHARS) or \
            _short_text(block.get("data_title"), MAX_TITLE_CHARS) or fallback
        for heading, text in split_markdown_sections(markdown):
            sections.append(NoteSection(note_title=title, heading=heading, text=text))
    return tuple(sections)


def normal_id(value: object) -> str:
    """The one form of a recording id every later step compares: surrounding white space
    dropped (a listing row and its detail may pad differently). Raises ``ValueError`` with
    the real reason when there is no usable id."""
    if not isinstance(value, str):
        raise ValueError(f"its id is not a string ({type(value).__name__})")
    file_id = value.strip()
    if not file_id:
        raise ValueError("its id is missing or empty")
    if len(file_id) > MAX_ID_CHARS:
        raise ValueError(f"its id is too long ({len(file_id)} characters, at most "
                         f"{MAX_ID_CHARS})")
    if clean_text(file_id) != file_id:
        raise ValueError(f"its id is not plain text ({ascii(file_id[:40])})")
    return file_id


def normalize_recording(raw: object) -> Recording:
    """One detail payload (optionally wrapped in ``{"data": …}``) → ``Recording``."""
    if isinstance(raw, Mapping) and isinstance(raw.get("data"), Mapping) and "id" not in raw:
        raw = raw["data"]
    if not isinstance(raw, Mapping):
        raise MalformedRecordingError(
            f"Plaud returned a recording that is not a JSON object ({type(raw).__name__})"
        )
    try:
        file_id = normal_id(raw.get("id") or raw.get("file_id"))
    except ValueError as exc:
        raise MalformedRecordingError(f"Plaud returned a recording that {exc}; "
                                      "skipping it") from None
    start_at = parse_timestamp(raw.get("start_at") or raw.get("start_time"))
    created_at = parse_timestamp(raw.get("created_at")) or start_at
    if created_at is None:
        raise MalformedRecordingError(
            f"Recording {file_id} has no usable created_at/start_at timestamp; skipping it"
        )
    title = next((t for t in (_short_text(raw.get(k), MAX_TITLE_CHARS)
                              for k in ("name", "file_name", "filename")) if t), "")
    # the web API's detail has start_time (epoch ms) and no created_at
    return Recording(
        file_id=file_id,
        title=title or "Untitled recording",
        created_at=created_at,
        start_at=start_at,
        duration_ms=parse_duration_ms(raw.get("duration")),
        utterances=_transcript(raw),
        notes=_notes(raw),
    )


def normalize_listing(rows: object) -> tuple[dict[str, Listed], dict[str, str]]:
    """A list walk's rows → ``{file_id: Listed}`` in listing order under each id's normal
    form (the first row of an id wins; ``Listed.remote_id`` keeps the id as Plaud spells
    it, to fetch by), and the rows that cannot be a recording, each under a printable label
    with its reason (an id that is missing, empty, too long or not plain text, or two
    different ids of one normal form: which recording is meant cannot be told).

    A listing that is not a list is an error, never "no recordings" (that would delete)."""
    if not isinstance(rows, list):
        raise SourceError("Plaud's recording list is not a list; nothing was changed")
    out: dict[str, Listed] = {}
    rejected: dict[str, str] = {}
    collided: set[str] = set()
    for number, row in enumerate(rows, 1):
        raw = row.get("id") if isinstance(row, Mapping) else row
        try:
            file_id = normal_id(raw)
        except ValueError as exc:
            rejected[f"listing row {number}"] = (
                f"Plaud listed a recording that cannot be fetched: {exc}; it is left out")
            continue
        first = out.get(file_id)
        if first is not None and first.remote_id != raw or file_id in collided:
            collided.add(file_id)
            rejected[file_id] = (f"Plaud listed different ids that differ only by surrounding "
                                 f"space ({ascii(raw)[:60]}); which recording is meant cannot "
                                 "be told, so both are left out")
            continue
        if first is None:
            out[file_id] = Listed(file_id, _short_text(row.get("name"), MAX_TITLE_CHARS),
                                  duration_ms=parse_duration_ms(row.get("duration")),
                                  remote_id=str(raw))
    for file_id in collided:
        out.pop(file_id, None)
    if rejected:
        log.warning("Left out %d listing row(s) without a usable id: %s", len(rejected),
                    "; ".join(f"{k}: {v}" for k, v in list(rejected.items())[:3]))
    return out, rejected
