"""Reading whole: a recording's transcript page by page, and AI notes across recordings.
Pure: a snapshot and a request in, the answer out (times in the user's zone).

Both read what the index already holds (no call to Plaud): the transcript rebuilt from
its chunks (``transcript.utterances``), the notes from theirs (``notes.rebuild``).
"""

from __future__ import annotations

from datetime import datetime, timezone

from ..clock import UserZone, format_clock, stamps
from ..errors import UnknownRecordingError
from ..index.snapshot import Snapshot
from ..results import IndexInfo, NoteItem, NotesResult, RecordingNotes, Today, TranscriptPage
from .browse import ListRequest, matching_recordings
from .notes import NotesRequest, encode_position, items_of, paginate, rebuild
from .rank import echo
from .transcript import decode_offset, encode_offset, page_of, utterances


def recording_index(snap: Snapshot, file_id: str) -> int:
    index = snap.by_id.get(file_id.strip())
    if index is None:
        raise UnknownRecordingError(f"No recording with file_id {echo(file_id)} is in the "
                                    "index; use plaud_search or plaud_list to find file ids.")
    return index


def transcript_page(snap: Snapshot, file_id: str, cursor: object, zone: UserZone
                    ) -> TranscriptPage:
    index = recording_index(snap, file_id)
    rec = snap.recordings[index]
    first = decode_offset(cursor, rec.file_id)
    spoken = utterances(snap.chunks_of(index, "transcript"))
    page, following = page_of(spoken, first)
    note = None if spoken else (
        "This recording has no transcript in the index, only notes: read them with "
        "plaud_notes(file_id=…)." if rec.note_titles else
        "This recording has no transcript yet (Plaud may still be processing it).")
    return TranscriptPage(
        file_id=rec.file_id, title=rec.title, created_at=stamps(zone, rec.created_at)[0],
        duration=format_clock(rec.duration_ms), utterances=tuple(page), first=first,
        total=len(spoken), note=note, source_kind=rec.source_kind, path=rec.origin or None,
        next_cursor=encode_offset(rec.file_id, following) if following is not None else None)


def _order(snap: Snapshot, request: NotesRequest) -> list[int]:
    """The recordings to read, newest first: one, or every one the filters let through."""
    if request.file_id is not None:
        return [recording_index(snap, request.file_id)]
    wanted = matching_recordings(snap, ListRequest(
        request.date_from, request.date_to, speaker=request.speaker, folder=request.folder,
        zone=request.zone.tz))
    return [snap.by_id[r.file_id] for r in wanted]


def _start(snap: Snapshot, request: NotesRequest, order: list[int]) -> tuple[int, int] | None:
    """Where a cursor opens: its recording and item; the next older one if it is gone."""
    if request.start is None:
        return None
    instant, file_id, offset = request.start
    index = snap.by_id.get(file_id, -1)
    if index in order:
        return index, offset
    key = (datetime.fromisoformat(instant), file_id)
    return next(((i, 0) for i in order if (
        snap.recordings[i].created.astimezone(timezone.utc), snap.recordings[i].file_id) < key),
        (-1, 0))


def notes_result(snap: Snapshot, request: NotesRequest, index_info: IndexInfo,
                 today: Today | None) -> NotesResult:
    order = _order(snap, request)

    def items_for(index: int) -> list[NoteItem]:
        return items_of(rebuild(snap.chunks_of(index, "notes")), request.section)

    page = paginate(order, items_for, _start(snap, request, order))
    rows = []
    for index, items, more in page.recordings:
        rec = snap.recordings[index]
        rows.append(RecordingNotes(rec.file_id, rec.title, stamps(request.zone, rec.created_at)[0],
                                   tuple(items), more, rec.source_kind, rec.origin or None))
    following = None if page.next_at is None else \
        encode_position(snap.recordings[page.next_at[0]], page.next_at[1])
    nothing = None if rows else (
        f"No notes with a section of the kind {request.section!r} in these recordings."
        if request.section else "No AI notes in these recordings.")
    return NotesResult(tuple(rows), request.section, page.searched, following, index_info,
                       today, nothing)
