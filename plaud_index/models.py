"""Frozen dataclasses shared by every stage of the pipeline."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class Utterance:
    """One transcript segment: times in milliseconds from the recording start."""

    text: str
    start_ms: int
    end_ms: int
    speaker: str = ""


# The note titles of highlights and marks, whatever their source calls them: search tells a
# moment of these kinds by its note title (``search.rank.moment_source``).
NOTE_TITLES = {"highlight": "Highlights", "mark": "Marks"}


# How a folder that cannot be read is named among the skipped recordings (``status``)
UNREADABLE_FOLDER = "unreadable folder "


@dataclass(frozen=True)
class NoteSection:
    """One Markdown section of an AI note (heading path + body).

    ``at_ms`` places it in the recording: a highlight or a mark the user made carries the
    moment it points at; ``None`` for a note about the whole recording. ``kind`` says what
    it is: ``"note"`` (an AI note's section), ``"highlight"`` or ``"mark"``.
    ``error_code`` is Plaud's ``data_error_code`` of the note it came from, kept as said:
    a note with content is a note whatever its code (API.md §8)."""

    note_title: str
    heading: str
    text: str
    at_ms: int | None = None
    kind: str = "note"
    error_code: int = 0


@dataclass(frozen=True)
class Recording:
    """A normalised Plaud recording: everything the index needs, nothing else."""

    file_id: str
    title: str
    created_at: datetime
    start_at: datetime | None
    duration_ms: int
    utterances: tuple[Utterance, ...] = ()
    notes: tuple[NoteSection, ...] = ()
    origin: str = ""  # a folder file's path; "" for a Plaud recording
    folders: tuple[str, ...] = ()  # the Plaud folders (file tags) it is filed under
    # notes Plaud sent without content, each with its reason (named by ``status``)
    empty_notes: tuple[str, ...] = ()

    @property
    def speakers(self) -> tuple[str, ...]:
        seen: dict[str, None] = {}
        for u in self.utterances:
            if u.speaker:
                seen.setdefault(u.speaker, None)
        return tuple(seen)

    @property
    def has_content(self) -> bool:
        return bool(self.utterances or self.notes)


@dataclass(frozen=True)
class Chunk:
    """A searchable window of a recording.

    ``text`` is what a person reads (and what BM25 sees); ``embed_text`` is
    ``text`` with the title and date prefixed, which is what the model embeds.
    ``chunk_id`` is a content hash of ``file_id`` and ``embed_text``, so a chunk
    whose text did not change keeps its id and is never embedded twice.
    """

    chunk_id: str
    file_id: str
    source: str  # "transcript" | "notes"
    text: str
    embed_text: str
    start_ms: int | None = None
    end_ms: int | None = None
    speakers: tuple[str, ...] = ()
    heading: str = ""
    # Per line of ``text``: where that line starts (ms) and who speaks it, so a
    # match inside a window points at its own utterance, not the window's first.
    line_ms: tuple[int | None, ...] = ()
    line_speakers: tuple[str, ...] = ()


@dataclass(frozen=True)
class Listed:
    """One entry of a source's listing: enough to decide what to fetch."""

    file_id: str
    title: str
    version: str | None = None  # a folder file's mtime and size; Plaud lists no such marker
    duration_ms: int = 0  # as listed (0: unknown); sizes the time-left estimate
    remote_id: str = ""  # the id as the source spells it, to fetch by ("": ``file_id``)
    folders: tuple[str, ...] | None = None  # its Plaud folders, where the listing says
