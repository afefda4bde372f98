"""What the index keeps of a fetched recording: its content hash and its record. Pure.

The content hash decides whether a recording changed (and so whether it is chunked and
embedded again); the record is what ``plaud_list`` and ``plaud_get`` read without touching
its chunks.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict

from ..chunker import NOTES_RECIPE
from ..index.records import IndexedRecording
from ..models import NoteSection, Recording

_NOTE_DEFAULTS = {"at_ms": None, "kind": "note", "error_code": 0}


def _note_fields(note: NoteSection) -> dict[str, object]:
    """A note's fields, those at their defaults left out: a field added later does not
    change the hash of a recording that does not use it (which would re-index them all)."""
    return {k: v for k, v in asdict(note).items()
            if k not in _NOTE_DEFAULTS or v != _NOTE_DEFAULTS[k]}


def content_hash(recording: Recording) -> str:
    """Changes whenever anything the index derives from the recording changes."""
    parts: list[object] = [recording.title, recording.created_at.isoformat(),
                           [asdict(u) for u in recording.utterances],
                           [_note_fields(n) for n in recording.notes]]
    if any(note.at_ms is None for note in recording.notes):  # chunked by that recipe
        parts.append({"notes_recipe": NOTES_RECIPE})
    if recording.folders:  # moved to another folder: a change (and the mirror's file moves)
        parts.append(list(recording.folders))
    payload = json.dumps(parts, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()


MAX_MARKS = 50  # the marks a recording's record keeps for plaud_get and plaud_list
MARK_CHARS = 120


def indexed_record(recording: Recording, digest: str, chunks: int) -> IndexedRecording:
    marks = tuple((n.at_ms, " ".join(n.text.split())[:MARK_CHARS]) for n in recording.notes
                  if n.kind == "mark" and n.at_ms is not None)[:MAX_MARKS]
    return IndexedRecording(
        file_id=recording.file_id, title=recording.title,
        created_at=recording.created_at.isoformat(), duration_ms=recording.duration_ms,
        content_hash=digest, speakers=recording.speakers,
        note_titles=tuple(dict.fromkeys(n.note_title for n in recording.notes)),
        chunk_count=chunks, origin=recording.origin, folders=recording.folders,
        marks=marks,
    )
