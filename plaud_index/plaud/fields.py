"""Plaud's fields read tolerantly, and every string cleaned once. Pure.

Plaud is inconsistent in places (durations as int or string, naive UTC
timestamps, JSON encoded inside strings), so every field is read tolerantly:
lone surrogates become U+FFFD and control characters (NUL, ESC, …) are dropped
from every string; timestamps in seconds, milliseconds or microseconds are told
apart and must fall in 2000–2100; NaN, infinities and absurd durations are
rejected; fields of the wrong type are ignored; sizes are capped (``MAX_*``).
Blocks (API.md §3.2, §5) are told apart here too: ``block_kind``.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from typing import Any

from ..cleaning import clean_line, clean_text
from ..models import Utterance

# Block kinds by id prefix, longest first (``source_transaction_polish:`` before
# ``source_transaction:``): the prefixes are stable where ``data_type`` is not.
_ID_PREFIXES = (("source_transaction_polish:", "transaction_polish"),
                ("source_transaction:", "transaction"), ("source_outline:", "outline"),
                ("auto_sum:", "auto_sum_note"), ("sum_multi:", "sum_multi_note"),
                ("high_light:", "high_light"), ("mark_memo:", "mark_memo"))
EARLIEST = datetime(2000, 1, 1, tzinfo=timezone.utc)
LATEST = datetime(2100, 1, 1, tzinfo=timezone.utc)
MAX_DURATION_MS = 7 * 86_400_000  # a week: longer is a unit mix-up, not a recording
MAX_ID_CHARS = 200
MAX_TITLE_CHARS = 500
MAX_SPEAKER_CHARS = 200
MAX_RECORDING_CHARS = 20_000_000  # about twenty days of speech; more is cut, with a warning
MAX_SEGMENTS = 200_000

log = logging.getLogger(__name__)


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
    ms = as_int_ms(value)
    return ms if ms is not None and 0 <= ms <= MAX_DURATION_MS else 0


def decode_json_text(value: object) -> object:
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


def as_int_ms(value: object) -> int | None:
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


def short_text(value: object, limit: int) -> str:
    """A clean one-line string of at most ``limit`` characters (numbers are stringified)."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return ""
    return clean_line(str(value), limit)


def parse_segments(content: object) -> tuple[Utterance, ...]:
    """Transcript segments → utterances; blank ones dropped, speaker falls back."""
    data = decode_json_text(content)
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
        start = min(max(as_int_ms(seg.get("start_time")) or 0, 0), MAX_DURATION_MS)
        end = as_int_ms(seg.get("end_time"))
        end = min(max(end if end is not None else start, start), MAX_DURATION_MS)
        speaker = short_text(seg.get("speaker"), MAX_SPEAKER_CHARS) or \
            short_text(seg.get("original_speaker"), MAX_SPEAKER_CHARS)
        out.append(Utterance(text=text, start_ms=start, end_ms=end, speaker=speaker))
        if budget <= 0:
            log.warning("A transcript is longer than %d characters; the rest is not indexed",
                        MAX_RECORDING_CHARS)
            break
    return tuple(out)


def blocks_of(raw: Mapping[str, Any], *keys: str) -> Iterable[Mapping[str, Any]]:
    for key in keys:
        blocks = raw.get(key)
        if isinstance(blocks, list):
            yield from (b for b in blocks if isinstance(b, Mapping))


def data_id_of(block: Mapping[str, Any]) -> str:
    value = block.get("data_id")
    return value if isinstance(value, str) else ""


def block_kind(block: Mapping[str, Any]) -> str:
    """What a block is. The id's prefix first: the web API's ``data_type`` strings are not
    stable (API.md §8), the prefixes are; then ``data_type``; ``""`` when neither says."""
    data_id = data_id_of(block)
    for prefix, known in _ID_PREFIXES:
        if data_id.startswith(prefix):
            return known
    kind = block.get("data_type")
    return kind if isinstance(kind, str) else ""


def web_blocks(raw: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The web API's blocks (API.md §5): ``content_list`` says what each is, and
    ``pre_download_content_list`` holds the text of some of them inline, by ``data_id``."""
    inline = {data_id_of(b): b.get("data_content")
              for b in blocks_of(raw, "pre_download_content_list") if data_id_of(b)}
    listed = [{**b, "data_content": b.get("data_content") or inline.get(data_id_of(b), "")}
              for b in blocks_of(raw, "content_list")]
    ids = {data_id_of(b) for b in listed}
    return listed + [b for b in blocks_of(raw, "pre_download_content_list")
                     if data_id_of(b) not in ids]
