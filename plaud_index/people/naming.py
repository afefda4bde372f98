"""Naming a speaker of one recording, on this machine only (``plaud_name_speaker``,
``name-speaker``): the label is checked against the recording as Plaud gave it, then the
name is kept in the names file (``names``). Nothing is sent to Plaud.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from ..errors import InvalidQueryError, UnknownRecordingError
from ..index.records import IndexedRecording
from ..index.snapshot import Snapshot
from ..results import SpeakerNamed
from .names import NameStore, clean_name

log = logging.getLogger(__name__)


class Naming:
    """``opened``: the index as on disk, without local names (the labels as Plaud gave
    them); ``store``: where the names are kept."""

    def __init__(self, opened: Callable[[], Snapshot | None], store: NameStore) -> None:
        self.opened = opened
        self.store = store

    def name(self, file_id: object, label: object, name: object = None) -> SpeakerNamed:
        """Name ``label`` in ``file_id`` ``name``; without a name, undo the local name."""
        record = self._record(file_id)
        given = _text(label, "label")
        local = dict(self.store.names().of(record.file_id))
        target = _label(record, local, given)
        if name is None or name == "":
            before = self.store.set(record.file_id, target, None) if target in local else None
            note = (f"{target!r} shows as Plaud names it again in {record.title!r}."
                    if before else f"{target!r} had no local name in {record.title!r}.")
            return SpeakerNamed(record.file_id, record.title, target, None, before, note)
        if target not in record.speakers:
            raise InvalidQueryError(
                f"{target!r} is no longer a speaker of {record.title!r}: it was renamed in "
                "Plaud, and Plaud's name is used; undo the local name (no name) if you like")
        clean = clean_name(name)
        before = self.store.set(record.file_id, target, clean)
        log.info("Named a speaker of %s locally", record.file_id)
        return SpeakerNamed(record.file_id, record.title, target, clean, before,
                            f"{target!r} is {clean!r} in {record.title!r} on this machine "
                            "(search, the speaker filter, transcripts, notes, people and the "
                            "mirror); nothing was sent to Plaud, and a name given in Plaud "
                            "later replaces it.")

    def _record(self, file_id: object) -> IndexedRecording:
        fid = _text(file_id, "file_id")
        snap = self.opened()
        index = snap.by_id.get(fid) if snap is not None else None
        if snap is None or index is None:
            raise UnknownRecordingError(f"No recording with file_id {fid!r} is in the index; "
                                        "use plaud_search or plaud_list to find file ids.")
        return snap.recordings[index]


def _text(value: object, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidQueryError(f"{what} must be non-empty text")
    return " ".join(value.split())[:200]


def _label(record: IndexedRecording, local: dict[str, str], given: str) -> str:
    """The label ``given`` means: a speaker as Plaud named it, or a local name (to rename
    or undo it), any case."""
    key = given.casefold()
    for label in [*record.speakers, *local]:
        if key in (label.casefold(), local.get(label, "").casefold()):
            return label
    speakers = ", ".join(repr(s) for s in record.speakers) or "none"
    raise InvalidQueryError(f"{given!r} is not a speaker of {record.title!r}; its speakers "
                            f"are {speakers}")
