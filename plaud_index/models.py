"""Frozen dataclasses shared by every stage of the pipeline."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any


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


# Results. These are the one shape of each answer: the service returns them, the MCP
# server publishes them as output schemas (the SDK derives JSON Schema from dataclasses),
# ``render`` turns them into text, and ``dataclasses.asdict`` into JSON.


@dataclass(frozen=True)
class Moment:
    """A place inside a recording where a query matched."""

    start: str  # hh:mm:ss from the recording start, "" for notes
    start_ms: int | None
    end_ms: int | None
    speaker: str
    # "transcript" | "notes" | "highlight" (a highlight of Plaud's notes) | "mark" (a moment
    # the user marked while recording)
    source: str
    snippet: str


@dataclass(frozen=True)
class Today:
    """The user's clock, in every answer, so a model resolves "yesterday" in their zone."""

    date: str  # YYYY-MM-DD, local
    weekday: str  # "Thursday"
    timezone: str  # "America/New_York"
    utc_offset: str  # "-05:00" now
    now: str  # ISO-8601 local time with offset


@dataclass(frozen=True)
class Hit:
    """One ranked recording in a search result."""

    file_id: str
    title: str
    created_at: str  # local time with offset (the user's zone)
    score: float
    snippet: str
    moments: tuple[Moment, ...] = ()
    fetch: str = ""  # how to get the full text
    similarity: float | None = None  # cosine of its closest passage (None: keyword only)
    created_at_utc: str = ""  # the same instant in UTC
    source_kind: str = "plaud"  # "plaud" | "folder"
    path: str | None = None  # the file, for a folder recording
    folders: tuple[str, ...] = ()  # the Plaud folders it is filed in


@dataclass(frozen=True)
class IndexInfo:
    """How fresh the index behind an answer is."""

    recordings: int
    chunks: int
    last_sync: str | None  # the last sync that finished, local time (as ``status`` says)
    last_error: str | None
    complete: bool = True  # False while the first sync has not finished: results are partial
    progress: str | None = None  # "12 of 73 recordings, about 4 minutes left" when partial
    last_commit: str | None = None  # when the index last changed, local time


@dataclass(frozen=True)
class SearchResult:
    query: str
    results: tuple[Hit, ...]
    index: IndexInfo
    note: str | None = None  # said plainly when nothing matches, or nothing matches well
    today: Today | None = None


@dataclass(frozen=True)
class Spoken:
    """One utterance of a transcript window."""

    start: str  # hh:mm:ss from the recording start
    start_ms: int
    speaker: str
    text: str


@dataclass(frozen=True)
class Around:
    """``plaud_get(at=…)``: the utterances around one moment, as the index stores them."""

    at: str  # hh:mm:ss asked for
    at_ms: int
    from_ms: int  # the window asked for, clipped to the recording
    to_ms: int
    utterances: tuple[Spoken, ...]
    truncated: bool  # the character cap cut utterances at the window's far ends
    max_chars: int  # that cap


@dataclass(frozen=True)
class RecordingInfo:
    """``plaud_get``: one recording's metadata and a few snippets, or the conversation
    around a moment (``around``)."""

    file_id: str
    title: str
    created_at: str  # local time with offset
    duration: str
    duration_ms: int
    speakers: tuple[str, ...]
    notes: tuple[str, ...]
    chunks: int
    snippets: tuple[Moment, ...]
    fetch: str
    created_at_utc: str = ""
    around: Around | None = None
    today: Today | None = None
    source_kind: str = "plaud"
    path: str | None = None
    folders: tuple[str, ...] = ()
    marks: tuple[Moment, ...] = ()  # the moments the user marked while recording
    more_speakers: int = 0  # speakers beyond those named in ``speakers``


@dataclass(frozen=True)
class ListedRecording:
    """One row of ``plaud_list``."""

    file_id: str
    title: str
    created_at: str  # local time with offset
    created_at_utc: str
    duration: str
    duration_ms: int
    speakers: tuple[str, ...]
    notes: tuple[str, ...]  # note titles
    summary: str | None  # the first lines of the summary note, when there is one
    source_kind: str = "plaud"
    path: str | None = None
    folders: tuple[str, ...] = ()
    marks: tuple[Moment, ...] = ()  # the moments the user marked while recording
    more_speakers: int = 0  # speakers beyond those named in ``speakers``


@dataclass(frozen=True)
class TranscriptPage:
    """``plaud_transcript``: a recording's whole transcript, one page of whole utterances
    from the local index."""

    file_id: str
    title: str
    created_at: str  # local time with offset
    duration: str
    utterances: tuple[Spoken, ...]
    first: int  # the position of this page's first utterance (0-based)
    total: int  # utterances in the whole transcript
    next_cursor: str | None  # pass it back for the next page; None on the last
    note: str | None = None  # e.g. a recording with notes only
    source_kind: str = "plaud"
    path: str | None = None


@dataclass(frozen=True)
class NoteItem:
    """One line of an AI note's section: a bullet, a paragraph, a highlight, a mark."""

    text: str
    heading: str  # the section's heading path, "Summary > Action items"
    note: str  # the note (tab) it is in
    kind: str  # "note" | "highlight" | "mark"
    start: str = ""  # hh:mm:ss for a highlight or a mark
    start_ms: int | None = None
    owner: str | None = None  # who the line names as doing it, where it names one


@dataclass(frozen=True)
class RecordingNotes:
    file_id: str
    title: str
    created_at: str  # local time with offset
    items: tuple[NoteItem, ...]
    more: bool = False  # the page ended inside this recording's notes: the cursor goes on
    source_kind: str = "plaud"
    path: str | None = None


@dataclass(frozen=True)
class NotesResult:
    """``plaud_notes``: the AI notes of one recording, or of every recording in a range,
    newest first, one page."""

    recordings: tuple[RecordingNotes, ...]
    section: str | None  # the kind of section asked for (None: the notes whole)
    searched: int  # recordings whose notes were read for this page
    next_cursor: str | None
    index: IndexInfo
    today: Today | None = None
    note: str | None = None


@dataclass(frozen=True)
class RecordingList:
    """``plaud_list``: recordings newest first, one page."""

    recordings: tuple[ListedRecording, ...]
    matched: int  # recordings matching the filters, all pages
    next_cursor: str | None  # pass it back for the next page; None on the last
    index: IndexInfo
    today: Today | None = None
    note: str | None = None  # said plainly when nothing can be listed yet


@dataclass(frozen=True)
class AuthStatus:
    """``auth status``: who is signed in to Plaud, how, and whether Plaud accepts it."""

    signed_in: bool
    method: str  # "oauth" | "web token (PLAUD_API_TOKEN)" | "mock"
    account: str | None  # "Ada (ada@example.com)", remembered at sign-in
    api_base: str
    token_store: str  # where the token lives
    expires_at: str | None = None  # the access token's expiry, local time with offset
    refreshable: bool = False  # a refresh token renews it without a browser
    reachable: bool | None = None  # None: not checked (no network call made)
    problem: str | None = None  # what is wrong and what to do


@dataclass(frozen=True)
class Check:
    """One ``doctor`` check."""

    name: str
    status: str  # "ok" | "fail" | "warn" | "skip"
    detail: str
    fix: str | None = None  # what to do, for "fail" and "warn"


@dataclass(frozen=True)
class Health:
    ok: bool
    flags: tuple[str, ...]  # each a sentence a user can act on


@dataclass(frozen=True)
class MirrorReport:
    """What ``mirror --once`` did."""

    folder: str
    listed: int = 0
    written: int = 0
    unchanged: int = 0
    renamed: int = 0
    kept_edits: int = 0
    trashed: int = 0
    failed: int = 0  # writes that failed (the reason is in ``status``)
    skipped: int = 0  # recordings Plaud gave that cannot be read
    seconds: float = 0.0
    errors: tuple[str, ...] = ()


@dataclass(frozen=True)
class MirrorStatus:
    """The Markdown mirror: where it is, how many files it keeps, its last write."""

    folder: str
    files: int
    last_write: float | None
    kept_edits: int  # edited files left alone, the new version written beside
    last_error: str | None  # the last write that failed, until one succeeds


@dataclass(frozen=True)
class Status:
    """``status``: where the index is, what it holds, and whether it is being kept fresh."""

    home: str
    index: str
    recordings: int
    chunks: int
    generation: int
    model: dict[str, Any] | None
    last_commit: str | None
    last_success: float | None
    last_attempt: float | None
    last_error: str | None
    last_error_kind: str | None
    last_report: dict[str, Any] | None
    pending: int | None
    held_deletion: dict[str, Any] | None
    daemon: dict[str, Any] | None
    progress: dict[str, Any] | None
    skipped: dict[str, str]  # file_id -> why it cannot be indexed
    lock_holder: dict[str, Any] | None
    health: Health
    auth: AuthStatus | None = None  # the sign-in, as known locally (no network call)
    # set when most indexed text is in languages the index's model does not read
    language_advice: str | None = None
    mirror: MirrorStatus | None = None  # when a mirror folder is set
    # recordings Plaud keeps failing for: id -> since, tries, last, next (epoch s), error
    failing: dict[str, dict[str, Any]] | None = None
    empty_notes: dict[str, str] | None = None  # id -> the notes Plaud sent without text
    folders_note: str | None = None  # where the Plaud folders come from (or why not)


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
    mirrored: int = 0  # Markdown files written into the mirror
    seconds: float = 0.0
    errors: tuple[str, ...] = ()
    stopped: bool = False  # asked to stop (SIGTERM, session end) before it was through
