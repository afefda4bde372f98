"""The names a person gives speakers on this machine, and the index read with them. Pure.

Plaud labels the voices it cannot name "Speaker 1", "Speaker 2", … and carries a rename
made in its app as the segment's ``speaker``. A person can also name a label locally, for
one recording (``plaud_name_speaker``): the name is kept beside the index, never sent
anywhere, and applied whenever that recording is read, so nothing is re-embedded and
undoing it is instant. A local name applies only while the label is in the recording: a
rename made later in Plaud replaces the label there, and the local name then has nothing
left to name (Plaud's wins).

Applied to a chunk, a name replaces the label at the start of that speaker's lines
(``Speaker 2: …`` → ``Marcus: …``) and in its speakers; in notes, where an action item's
owner may be a label, every whole-word mention of the label.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from ..models import NoteSection, Recording, Utterance
from .records import ChunkRow, IndexedRecording

MAX_NAME_CHARS = 100


@dataclass(frozen=True)
class SpeakerNames:
    """file id → {label as the index holds it: the local name}."""

    by_file: Mapping[str, Mapping[str, str]] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return any(self.by_file.values())

    def of(self, file_id: str) -> Mapping[str, str]:
        return self.by_file.get(file_id, {})

    def labels_named(self, wanted: str) -> list[tuple[str, str]]:
        """(file id, label) of every local name containing ``wanted`` (any case): what a
        speaker filter for ``wanted`` must find under those labels."""
        key = wanted.casefold()
        return [(fid, label) for fid, names in self.by_file.items()
                for label, name in names.items() if key in name.casefold()]


NO_NAMES = SpeakerNames()


def _mention(label: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w]){re.escape(label)}(?![\w])")


def named(name_of: Mapping[str, str], speaker: str) -> str:
    return name_of.get(speaker, speaker)


def named_text(text: str, line_speakers: tuple[str, ...], name_of: Mapping[str, str],
               notes: bool) -> str:
    """``text`` with each named label replaced: at the start of its own lines (a
    transcript), or wherever it is mentioned as a whole word (notes)."""
    if notes:
        for label, name in name_of.items():
            text = _mention(label).sub(name.replace("\\", "\\\\"), text)
        return text
    lines = text.split("\n")
    for i, who in enumerate(line_speakers[:len(lines)]):
        if who in name_of and lines[i].startswith(f"{who}: "):
            lines[i] = f"{name_of[who]}: {lines[i][len(who) + 2:]}"
    return "\n".join(lines)


def named_row(row: ChunkRow, names: SpeakerNames) -> ChunkRow:
    """A chunk as read with the local names of its recording."""
    name_of = names.of(row.file_id)
    if not name_of:
        return row
    return replace(row, text=named_text(row.text, row.line_speakers, name_of,
                                        row.source == "notes"),
                   speakers=tuple(named(name_of, s) for s in row.speakers),
                   line_speakers=tuple(named(name_of, s) for s in row.line_speakers))


def named_recording(record: IndexedRecording, names: SpeakerNames) -> IndexedRecording:
    name_of = names.of(record.file_id)
    if not name_of:
        return record
    return replace(record, speakers=tuple(dict.fromkeys(named(name_of, s)
                                                        for s in record.speakers)))


def named_source(recording: Recording, names: SpeakerNames) -> Recording:
    """A fetched recording with its local names (what the Markdown mirror writes)."""
    name_of = names.of(recording.file_id)
    if not name_of:
        return recording
    utterances = tuple(Utterance(u.text, u.start_ms, u.end_ms, named(name_of, u.speaker))
                       for u in recording.utterances)
    notes = tuple(NoteSection(s.note_title, s.heading,
                              named_text(s.text, (), name_of, notes=True), s.at_ms, s.kind,
                              s.error_code) for s in recording.notes)
    return replace(recording, utterances=utterances, notes=notes)
