"""The answers' shapes: what each tool returns. Frozen dataclasses, importing nothing of the
package.

These are the one shape of each answer: the reading services (``answers``) return them,
the MCP server publishes them as output schemas (the SDK derives JSON Schema from
dataclasses), ``render`` turns them into text, and ``dataclasses.asdict`` into JSON.
"""

from __future__ import annotations

from dataclasses import dataclass


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
    sign_in_url: str | None = None  # signed out, nothing indexed: open it to sign in to Plaud


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
    note: str | None = None  # said plainly when there is nothing to read yet (signed out)


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
    note: str | None = None  # said plainly when there is nothing to read yet (signed out)


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
class Owed:
    """An open action item a person owns."""

    text: str
    file_id: str
    title: str
    created_at: str  # the recording's local time with offset


@dataclass(frozen=True)
class Person:
    """One person across the recordings: a speaker's name, an action item's owner, or both.
    A label Plaud gave an unnamed voice ("Speaker 2") is one person in one recording only:
    ``file_id`` names it (and ``plaud_name_speaker`` can give it a name)."""

    name: str
    recordings: int  # recordings they speak in or own an item of
    first_met: str  # local time of the first of those recordings
    last_met: str  # and of the last
    folders: tuple[str, ...]
    open_items: tuple[Owed, ...]  # newest first, at most a few
    more_open_items: int = 0  # beyond those shown
    spoke_in: int = 0  # recordings they speak in (the rest: only named as an owner)
    file_id: str | None = None  # the one recording of an unnamed speaker label
    title: str | None = None  # its title
    locally_named: bool = False  # a name given on this machine (plaud_name_speaker)


@dataclass(frozen=True)
class PeopleList:
    """``plaud_people``: everyone named in the recordings the filters let through, those in
    the most recordings first, one page."""

    people: tuple[Person, ...]
    matched: int  # people matching the filters, all pages
    next_cursor: str | None
    index: IndexInfo
    today: Today | None = None
    note: str | None = None


@dataclass(frozen=True)
class SpeakerNamed:
    """``plaud_name_speaker``: a label of one recording named (or its name undone) on this
    machine only."""

    file_id: str
    title: str
    label: str  # as Plaud gave it
    name: str | None  # the local name now (None: undone, the label shows again)
    previous: str | None  # the local name it had before
    note: str


@dataclass(frozen=True)
class SignInResult:
    """``plaud_sign_in`` / ``plaud_sign_out``: whether Plaud is signed in, as whom, and
    the link that signs in (never a token)."""

    signed_in: bool
    account: str | None
    note: str
    sign_in_url: str | None = None  # open it in a browser to sign in
    expires_at: str | None = None  # local time: the link works until then
