"""Browsing by date: recordings newest first, filtered and paged. Pure.

Pages are keyset-paged: the cursor names the last recording shown (its UTC
instant and file id), so a commit between two pages neither repeats nor skips
a recording that was already there. Days are the user's local calendar days.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime, timezone, tzinfo
from typing import TypedDict

from ..clock import UserZone, format_clock, stamps
from ..index.records import IndexedRecording
from ..index.snapshot import Snapshot
from ..results import Moment
from . import cursors
from .rank import check_limit, in_folder, parse_filters

DEFAULT_LIST_LIMIT = 20
MAX_LIST_LIMIT = 50
SUMMARY_CHARS = 300


@dataclass(frozen=True)
class ListRequest:
    date_from: date | None = None
    date_to: date | None = None
    limit: int = DEFAULT_LIST_LIMIT
    speaker: str | None = None
    source: str = "any"
    after: tuple[str, str] | None = None  # (created_at UTC ISO, file_id) of the last shown
    source_kind: str = "any"
    zone: tzinfo = timezone.utc
    folder: str | None = None


def make_list_request(*, date_from: object = None, date_to: object = None,
                      limit: object = DEFAULT_LIST_LIMIT, speaker: object = None,
                      source: object = "any", cursor: object = None,
                      source_kind: object = "any", folder: object = None) -> ListRequest:
    """Validate ``plaud_list`` arguments as sent; each problem an ``InvalidQueryError``."""
    filters = parse_filters(date_from, date_to, speaker, source, source_kind, folder)
    return ListRequest(filters.date_from, filters.date_to, check_limit(limit, MAX_LIST_LIMIT),
                       filters.speaker, filters.source, decode_cursor(cursor),
                       source_kind=filters.source_kind, folder=filters.folder)


def encode_cursor(record: IndexedRecording) -> str:
    return cursors.encode(_utc(record).isoformat(), record.file_id)


def decode_cursor(cursor: object) -> tuple[str, str] | None:
    parts = cursors.decode(cursor, 2, "plaud_list", "start from the newest")
    if parts is None:
        return None
    instant, file_id = parts
    with cursors.checked(cursor, "plaud_list", "start from the newest"):
        return cursors.instant(instant), file_id


def _utc(record: IndexedRecording) -> datetime:
    return record.created.astimezone(timezone.utc)


def _wanted(record: IndexedRecording, request: ListRequest) -> bool:
    if request.source_kind not in ("any", record.source_kind):
        return False
    if request.folder and not in_folder(record.folders, request.folder):
        return False
    day = _utc(record).astimezone(request.zone).date()
    if (request.date_from and day < request.date_from) or \
            (request.date_to and day > request.date_to):
        return False
    if request.speaker and not any(request.speaker.casefold() in s.casefold()
                                   for s in record.speakers):
        return False
    if request.source == "notes" and not record.note_titles:
        return False
    return not (request.source == "transcript" and not record.speakers and
                record.duration_ms == 0)


def matching_recordings(snapshot: Snapshot, request: ListRequest) -> list[IndexedRecording]:
    """Every recording the filters let through, newest first."""
    return sorted((r for r in snapshot.recordings if _wanted(r, request)),
                  key=lambda r: (_utc(r), r.file_id), reverse=True)


def list_recordings(snapshot: Snapshot, request: ListRequest
                    ) -> tuple[list[IndexedRecording], int, str | None]:
    """One page newest first, how many match in all, and the next page's cursor."""
    matching = matching_recordings(snapshot, request)
    start = 0
    if request.after is not None:
        instant, file_id = request.after
        key = (datetime.fromisoformat(instant), file_id)
        start = next((i for i, r in enumerate(matching) if (_utc(r), r.file_id) < key),
                     len(matching))
    page = matching[start:start + request.limit]
    more = start + len(page) < len(matching)
    return page, len(matching), encode_cursor(page[-1]) if page and more else None


MAX_SPEAKERS = 12  # named in a list or get answer; the rest are counted
_PAREN = re.compile(r"\s*\([^()]*\)")
_TITLES = {"mr", "mrs", "ms", "miss", "mx", "dr", "prof", "professor", "hon", "honourable",
           "honorable", "right", "rt", "the", "sir", "dame", "lord", "lady"}
_SUFFIXES = {"am", "mp", "ms", "msp", "mla", "mep", "phd", "jr", "sr", "md", "qc", "kc"}


def person_key(name: str) -> str:
    """One key for the forms of one person's name: "Mr. Garnett Genuis (Sherwood Park,
    CPC)" and "Mr. Garnett Genuis" → "garnett genuis"; "The Chair (Hon. …)" → "chair"."""
    while _PAREN.search(name):
        name = _PAREN.sub("", name)
    words = [w.strip(".,") for w in name.casefold().split()]
    while len(words) > 1 and words[0] in _TITLES:
        words = words[1:]
    while len(words) > 1 and words[-1] in _SUFFIXES:
        words = words[:-1]
    return " ".join(words)


def people(speakers: Sequence[str], cap: int = MAX_SPEAKERS) -> tuple[tuple[str, ...], int]:
    """Each person once, by the shortest form of their name seen (``Mr. Garnett Genuis``
    beside ``Mr. Garnett Genuis (Sherwood Park, CPC)``; ``Rob (contractor)`` when that is
    the only form), in order of first appearance; at most ``cap`` of them, and how many
    more there are."""
    seen: dict[str, str] = {}
    for name in speakers:
        key = person_key(name)
        if key not in seen or len(name) < len(seen[key]):
            seen[key] = name
    names = tuple(seen.values())
    return names[:cap], max(0, len(names) - cap)


def marks_of(record: IndexedRecording) -> tuple[Moment, ...]:
    """The moments the user marked while recording, in time order."""
    return tuple(Moment(start=format_clock(ms), start_ms=ms, end_ms=ms, speaker="",
                        source="mark", snippet=text) for ms, text in sorted(record.marks))


def summary_of(snapshot: Snapshot, record: IndexedRecording,
               chars: int = SUMMARY_CHARS) -> str | None:
    """The opening of the recording's first note (Plaud's summary comes first), without
    its heading lines, cut at a word near ``chars``."""
    index = snapshot.by_id[record.file_id]
    notes = snapshot.chunks_of(index, "notes")
    if not notes:
        return None
    title = record.note_titles[0] if record.note_titles else ""
    lines = [line for line in notes[0].text.split("\n")
             if not title or (line != title and not line.startswith(f"{title} > "))]
    body = " ".join(" ".join(lines).split())
    if len(body) <= chars:
        return body
    cut = body.rfind(" ", 0, chars)
    return body[:cut if cut > chars // 2 else chars] + "…"


class AboutRecording(TypedDict):
    """What ``plaud_get`` and each row of ``plaud_list`` say of a recording alike."""
    file_id: str
    title: str
    created_at: str
    created_at_utc: str
    duration: str
    duration_ms: int
    speakers: tuple[str, ...]
    more_speakers: int
    notes: tuple[str, ...]
    source_kind: str
    path: str | None
    folders: tuple[str, ...]
    marks: tuple[Moment, ...]


def about(record: IndexedRecording, zone: UserZone) -> AboutRecording:
    """The one description of a recording that ``RecordingInfo`` and ``ListedRecording``
    share: its times in the user's zone and UTC, the speakers named (and how many more),
    the note titles, where it comes from and the moments the user marked."""
    local, utc = stamps(zone, record.created_at)
    named, more = people(record.speakers)
    return AboutRecording(
        file_id=record.file_id, title=record.title, created_at=local, created_at_utc=utc,
        duration=format_clock(record.duration_ms), duration_ms=record.duration_ms,
        speakers=named, more_speakers=more, notes=record.note_titles,
        source_kind=record.source_kind, path=record.origin or None, folders=record.folders,
        marks=marks_of(record))
