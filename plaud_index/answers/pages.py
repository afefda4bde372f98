"""``plaud_transcript`` and ``plaud_notes``: reading a recording whole, and AI notes across
recordings, from what the index holds (no call to Plaud)."""

from __future__ import annotations

from dataclasses import replace

from ..errors import UnknownRecordingError
from ..results import NotesResult, TranscriptPage
from ..search.notes import NotesRequest
from ..search.pages import notes_result, transcript_page
from .index import IndexReader
from .readiness import Readiness


class Pages:
    def __init__(self, reader: IndexReader, readiness: Readiness) -> None:
        self.reader = reader
        self.readiness = readiness

    def transcript(self, file_id: str, cursor: object = None) -> TranscriptPage:
        """One page of a recording's whole transcript."""
        with self.reader.damage_noted():
            snap, state = self.readiness.ready()
            try:
                return transcript_page(snap, file_id, cursor, self.reader.config.zone)
            except UnknownRecordingError as exc:
                raise self.readiness.unknown(exc, snap, state) from None

    def notes(self, request: NotesRequest) -> NotesResult:
        """AI notes (a kind of section, or whole) of one recording or of every recording
        the filters let through, newest first, one page."""
        with self.reader.damage_noted():
            snap, state = self.readiness.ready()
            try:
                return notes_result(snap, replace(request, zone=self.reader.config.zone),
                                    self.readiness.freshness(snap, state),
                                    self.reader.today())
            except UnknownRecordingError as exc:
                raise self.readiness.unknown(exc, snap, state) from None
