"""Frozen dataclasses shared by every stage of the pipeline."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime


@dataclass(frozen=True)
class Utterance:
    """One transcript segment: times in milliseconds from the recording start."""

    text: str
    start_ms: int
    end_ms: int
    speaker: str = ""


@dataclass(frozen=True)
class NoteSection:
    """One Markdown section of an AI note (heading path + body)."""

    note_title: str
    heading: str
    text: str


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
class Moment:
    """A place inside a recording where a query matched."""

    start_ms: int | None
    end_ms: int | None
    speaker: str
    source: str
    snippet: str


@dataclass(frozen=True)
class Hit:
    """One ranked recording in a search result."""

    file_id: str
    title: str
    created_at: str
    score: float
    snippet: str
    moments: tuple[Moment, ...] = field(default_factory=tuple)


@dataclass(frozen=True)
class SyncReport:
    """What one indexer cycle did."""

    listed: int = 0
    fetched: int = 0
    added: int = 0
    updated: int = 0
    deleted: int = 0
    unchanged: int = 0
    skipped: int = 0
    chunks_embedded: int = 0
    chunks_reused: int = 0
    commits: int = 0
    seconds: float = 0.0
    errors: tuple[str, ...] = ()
