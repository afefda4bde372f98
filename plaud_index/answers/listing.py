"""``plaud_list``: recordings newest first in the user's local days, one page."""

from __future__ import annotations

from dataclasses import replace

from ..results import ListedRecording, RecordingList
from ..search.browse import ListRequest, about, list_recordings, summary_of
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
            rows = [ListedRecording(**about(rec, zone), summary=summary_of(snap, rec))
                    for rec in page]
        return RecordingList(tuple(rows), matched, cursor,
                             self.readiness.freshness(snap, state), self.reader.today())
