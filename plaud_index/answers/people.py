"""``plaud_people``: everyone named in the recordings, one page; and the names a prompt's
person argument completes from."""

from __future__ import annotations

import builtins
from dataclasses import replace

from ..results import NoteItem, PeopleList
from ..search.notes import open_actions, rebuild
from ..search.people import PeopleRequest, known_names, people_page
from .index import IndexReader
from .readiness import Readiness


class People:
    def __init__(self, reader: IndexReader, readiness: Readiness) -> None:
        self.reader = reader
        self.readiness = readiness

    def list(self, request: PeopleRequest) -> PeopleList:
        with self.reader.damage_noted():
            snap, state = self.readiness.ready()

            def open_items(index: int) -> list[NoteItem]:
                return open_actions(rebuild(snap.chunks_of(index, "notes")))

            page, matched, cursor = people_page(
                snap, replace(request, zone=self.reader.config.zone), open_items)
        note = None if page else "Nobody is named in the recordings these filters let through."
        return PeopleList(tuple(page), matched, cursor, self.readiness.freshness(snap, state),
                          self.reader.today(), note)

    def names(self, prefix: str, limit: int = 100) -> builtins.list[str]:
        """Speakers' names starting with ``prefix``, from the index as it is (none while
        there is no index: completing never starts a sync)."""
        snap = self.reader.snapshot()
        return known_names(snap, prefix, limit) if snap is not None else []
