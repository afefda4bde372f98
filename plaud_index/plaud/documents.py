"""Raw Plaud detail JSON → ``Recording``. With ``fields`` (single fields, cleaned) and
``notes`` (AI notes, highlights, marks), the only modules that know Plaud field names.

The wire shapes are in ``shared/plaud/API.md`` §3.2–3.5 and §8. Every field is read
tolerantly; only a payload that cannot be a recording at all raises
``MalformedRecordingError``. The transcript indexed is the verbatim one; the folders
are the names of the recording's Plaud file tags (web API only).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from ..cleaning import clean_text
from ..errors import MalformedRecordingError, SourceError
from ..models import Listed, Recording, Utterance
from .fields import (  # re-exported: the readers of single fields
    MAX_ID_CHARS,
    MAX_TITLE_CHARS,
    block_kind,
    blocks_of,
    parse_duration_ms,
    parse_segments,
    parse_timestamp,
    short_text,
    web_blocks,
)
from .notes import note_markdown, read_notes, split_markdown_sections, strip_images

__all__ = ["block_kind", "clean_text", "normal_id", "normalize_listing", "normalize_recording",
           "note_markdown", "parse_duration_ms", "parse_segments", "parse_timestamp",
           "split_markdown_sections", "strip_images"]

# Preference order for the transcript: the verbatim words first (what was said, and what a
# quote quotes); the polished text, a quarter shorter, only when there is no other (API.md §8).
_TRANSCRIPT_TYPES = ("transaction", "transaction_polish")

log = logging.getLogger(__name__)


def _transcript(raw: Mapping[str, Any]) -> tuple[Utterance, ...]:
    by_type: dict[str, tuple[Utterance, ...]] = {}
    # ``source_list``: the developer API; ``content_list``: the web API (API.md §5).
    for block in [*blocks_of(raw, "source_list"), *web_blocks(raw)]:
        kind = block_kind(block)
        if kind in _TRANSCRIPT_TYPES and not by_type.get(kind):
            by_type[kind] = parse_segments(block.get("data_content"))
    # outline and unknown types are left out: they repeat the transcript
    return next((by_type[t] for t in _TRANSCRIPT_TYPES if by_type.get(t)), ())


def _folders(raw: Mapping[str, Any]) -> tuple[str, ...] | None:
    """The names of the Plaud folders (file tags) a recording is filed under: its
    ``filetag_id_list`` looked up in ``filetag_list`` (the web API's ``/filetag/`` rows,
    which the web client lays beside a detail and each listing row); ``None`` where
    neither is given (the developer API carries no folders)."""
    ids = raw.get("filetag_id_list")
    tags = raw.get("filetag_list")
    if not isinstance(ids, list) or not isinstance(tags, list):
        return None
    names = {str(t.get("id")): short_text(t.get("name"), MAX_TITLE_CHARS)
             for t in tags if isinstance(t, Mapping)}
    return tuple(dict.fromkeys(n for i in ids if (n := names.get(str(i)))))


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
    title = next((t for t in (short_text(raw.get(k), MAX_TITLE_CHARS)
                              for k in ("name", "file_name", "filename")) if t), "")
    # the web API's detail has start_time (epoch ms) and no created_at
    notes, empty_notes = read_notes(raw)
    return Recording(
        file_id=file_id,
        title=title or "Untitled recording",
        created_at=created_at,
        start_at=start_at,
        duration_ms=parse_duration_ms(raw.get("duration")),
        utterances=_transcript(raw),
        notes=notes,
        folders=_folders(raw) or (),
        empty_notes=empty_notes,
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
            out[file_id] = Listed(file_id, short_text(row.get("name"), MAX_TITLE_CHARS),
                                  duration_ms=parse_duration_ms(row.get("duration")),
                                  remote_id=str(raw), folders=_folders(row))
    for file_id in collided:
        out.pop(file_id, None)
    if rejected:
        log.warning("Left out %d listing row(s) without a usable id: %s", len(rejected),
                    "; ".join(f"{k}: {v}" for k, v in list(rejected.items())[:3]))
    return out, rejected
