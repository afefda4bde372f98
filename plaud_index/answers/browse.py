"""``plaud_list``: recordings newest first in the user's local days, one page."""

from __future__ import annotations

from dataclasses import replace

from ..clock import format_clock, stamps
from ..results import ListedRecording, RecordingList
from ..search.browse import ListRequest, list_recordings, marks_of, people, summary_of
from .index import IndexReader
from .readiness import Readiness


class Browsing:
    def __init__(self, reader: IndexReader, readiness: Readiness) -> None:
        self.reader = reader
        self.readiness = readiness

    def list(self, request: ListRequest) -> RecordingList:
        zone = self.reader.config.zone
        with self.reader.damage_noted():
            snap, state = self.readiness.ready()
            page, matched, cursor = list_recordings(snap, replace(request, zone=zone.tz))
            rows = []
            for rec in page:
                local, utc = stamps(zone, rec.created_at)
                named, more = people(rec.speakers)
                rows.append(ListedRecording(
                    file_id=rec.file_id, title=rec.title, created_at=local,
                    created_at_utc=utc, duration=format_clock(rec.duration_ms),
                    duration_ms=rec.duration_ms, speakers=named, notes=rec.note_titles,
                    summary=summary_of(snap, rec), source_kind=rec.source_kind,
                    path=rec.origin or None, folders=rec.folders, marks=marks_of(rec),
                    more_speakers=more))
        return RecordingList(tuple(rows), matched, cursor,
                             self.readiness.freshness(snap, state), self.reader.today())
