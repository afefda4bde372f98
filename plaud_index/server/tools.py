"""The reading tools: ``plaud_search``, ``plaud_list``, ``plaud_get``,
``plaud_transcript``, ``plaud_notes``, ``plaud_people``; and ``plaud_name_speaker``, the one
that writes (the person's own name for a speaker, on this machine). What each is for is in
``descriptions.py``.

Each answers from the local index (``answers``). What is wrong with a call is a
``ToolError`` of one line a model can act on; a state is a normal answer: an index being
built says how far it is, and nobody signed in answers with the sign-in link
(``account``). Arguments arrive as sent (``arguments``) and are checked by our code.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from typing import Annotated, Any, TypeVar

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, ToolAnnotations

from ..answers import Answers
from ..answers.readiness import NOT_READY, Building, NotReady, NotReadyYet, SignedOut
from ..redact import redact
from ..render.answers import render_list, render_recording, render_search
from ..render.pages import render_named, render_notes, render_people, render_transcript
from ..results import (
    IndexInfo,
    NotesResult,
    PeopleList,
    RecordingInfo,
    RecordingList,
    SearchResult,
    SpeakerNamed,
    TranscriptPage,
)
from ..search.browse import DEFAULT_LIST_LIMIT, MAX_LIST_LIMIT, make_list_request
from ..search.notes import make_notes_request
from ..search.people import DEFAULT_PEOPLE_LIMIT, MAX_PEOPLE_LIMIT, make_people_request
from ..search.rank import DEFAULT_LIMIT, MAX_LIMIT, SOURCE_KINDS, SOURCES, make_request
from ..search.transcript import DEFAULT_WINDOW_S, MAX_WINDOW_S, parse_at, parse_window
from . import arguments as arg
from .account import Account
from .descriptions import (
    GET_DESCRIPTION,
    LIST_DESCRIPTION,
    NAME_SPEAKER_DESCRIPTION,
    NOTES_DESCRIPTION,
    PEOPLE_DESCRIPTION,
    SEARCH_DESCRIPTION,
    TRANSCRIPT_DESCRIPTION,
)
from .failures import answered, checked, guarded

log = logging.getLogger(__name__)
R = TypeVar("R")

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True,
                            open_world_hint=False)
# Naming writes the person's own name for a speaker, on this machine: the same call twice
# leaves the same state, and nothing is lost that cannot be undone.
LOCAL_WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False,
                              idempotent_hint=True, open_world_hint=False)
_FOLDER = "Only recordings filed in the Plaud folder of this name (any case; the whole name)."
_KIND = ('"any", "plaud" (recordings from the Plaud account) or "folder" (files from the '
         "user's local folders; their results carry the file's path).")
_CURSOR = "next_cursor from the previous page."
_FILE_ID = "A file_id returned by plaud_search or plaud_list."


class Answering:
    """Runs an answer off the event loop and turns the index's states into answers."""

    def __init__(self, answers: Answers, account: Account) -> None:
        self.answers = answers
        self.account = account

    def info(self, progress: str | None = None, url: str | None = None) -> IndexInfo:
        base = self.answers.readiness.pending()
        return replace(base, progress=progress or base.progress, sign_in_url=url)

    async def answer(self, ctx: Context[Any, Any], compute: Callable[[], R],
                     empty: Callable[[str, IndexInfo], R]) -> R:
        """``compute``'s answer; before the index can answer, what the state calls for:
        a first sync under way is a normal answer (``empty``, with its progress), nobody
        signed in is the sign-in, anything else one line of what is wrong."""
        outcome = await anyio.to_thread.run_sync(checked, or_not_ready(compute))
        if isinstance(outcome, SignedOut):
            signing = await self.account.sign_in(ctx)
            if not signing.signed_in:
                return empty(signing.note, self.info("not signed in to Plaud",
                                                     signing.sign_in_url))
            # signed in a moment ago (another session): ask again
            outcome = await anyio.to_thread.run_sync(checked, or_not_ready(compute))
        if isinstance(outcome, Building):
            return empty(outcome.message, self.info())
        if isinstance(outcome, NOT_READY):
            raise ToolError(redact(outcome.message))
        return outcome

    def today(self) -> Any:
        return self.answers.index.today()


def or_not_ready(compute: Callable[[], R]) -> Callable[[], R | NotReady]:
    """``compute``, or the state that keeps the index from answering yet (a state, not an
    error: ``checked`` turns only what is wrong into a tool error)."""
    def run() -> R | NotReady:
        try:
            return compute()
        except NotReadyYet as not_yet:
            return not_yet.state
    return run


def _opt(name: str, value: object) -> str | None:
    return checked(arg.optional, name, value)


def register_reading_tools(server: MCPServer[Any], answers: Answers, account: Account) -> None:
    answering = Answering(answers, account)

    @server.tool(name="plaud_search", title="Search Plaud recordings",
                 description=SEARCH_DESCRIPTION, annotations=READ_ONLY)
    @guarded
    async def plaud_search(
        ctx: Context[Any, Any],
        query: Annotated[Any, arg.text("What to look for, in natural language or keywords (at "
                                       "most 1000 characters).")],
        date_from: Annotated[Any, arg.optional_day("Only recordings created on or after this "
                                                   "day, YYYY-MM-DD.")] = None,
        date_to: Annotated[Any, arg.optional_day("Only recordings created on or before this "
                                                 "day, YYYY-MM-DD.")] = None,
        limit: Annotated[Any, arg.as_sent(f"How many recordings to return, 1 to {MAX_LIMIT}.",
                                          type="integer", minimum=1, maximum=MAX_LIMIT,
                                          default=DEFAULT_LIMIT)] = DEFAULT_LIMIT,
        speaker: Annotated[Any, arg.optional_text(
            "Only passages spoken by a speaker whose name contains this text; set it for any "
            "question about what a person said or thought (the moments are then their own "
            "words).")] = None,
        source: Annotated[Any, arg.as_sent('"any", "transcript" (what was said) or "notes" '
                                           "(Plaud's AI notes).", type="string",
                                           enum=list(SOURCES), default="any")] = "any",
        source_kind: Annotated[Any, arg.as_sent(_KIND, type="string", enum=list(SOURCE_KINDS),
                                                default="any")] = "any",
        folder: Annotated[Any, arg.optional_text(_FOLDER)] = None,
    ) -> Annotated[CallToolResult, SearchResult]:
        request = checked(make_request, query, date_from=date_from, date_to=date_to,
                          limit=limit, speaker=_opt("speaker", speaker),
                          source=source, source_kind=source_kind,
                          folder=_opt("folder", folder))
        result = await answering.answer(ctx, lambda: answers.search.search(request),
                                     lambda why, info: SearchResult(
                                         request.query, (), info, note=why,
                                         today=answering.today()))
        return answered(render_search(result), result)

    @server.tool(name="plaud_get", title="Read one recording", description=GET_DESCRIPTION,
                 annotations=READ_ONLY)
    @guarded
    async def plaud_get(
        ctx: Context[Any, Any],
        file_id: Annotated[Any, arg.text(_FILE_ID)],
        query: Annotated[Any, arg.optional_text("Optional topic: choose snippets about it "
                                                "inside this recording.")] = None,
        at: Annotated[Any, arg.optional_text("Read around this time in the recording, "
                                             "hh:mm:ss or mm:ss (a moment's start from "
                                             "plaud_search).")] = None,
        at_ms: Annotated[Any, arg.as_sent("The same as at, in milliseconds from the start.",
                                          anyOf=[{"type": "integer", "minimum": 0},
                                                 {"type": "null"}], default=None)] = None,
        window: Annotated[Any, arg.as_sent(f"Seconds before and after at (default "
                                           f"{DEFAULT_WINDOW_S}).", anyOf=[
                                               {"type": "integer", "minimum": 1,
                                                "maximum": MAX_WINDOW_S}, {"type": "null"}],
                                           default=None)] = None,
    ) -> Annotated[CallToolResult, RecordingInfo]:
        fid = checked(arg.file_id, file_id)
        topic = _opt("query", query)
        moment = None if at is None and at_ms is None else checked(parse_at, at, at_ms)
        if moment is None and window is not None:
            raise ToolError("window needs at (or at_ms): the moment to read around")
        span = checked(parse_window, window)
        result = await answering.answer(ctx, lambda: answers.search.get(fid, topic, moment, span),
                                     lambda why, info: RecordingInfo(
                                         fid, "", "", "", 0, (), (), 0, (), "", note=why))
        return answered(render_recording(result), result)

    @server.tool(name="plaud_list", title="List Plaud recordings by date",
                 description=LIST_DESCRIPTION, annotations=READ_ONLY)
    @guarded
    async def plaud_list(
        ctx: Context[Any, Any],
        date_from: Annotated[Any, arg.optional_day("Only recordings from this local day on, "
                                                   "YYYY-MM-DD.")] = None,
        date_to: Annotated[Any, arg.optional_day("Only recordings up to this local day, "
                                                 "YYYY-MM-DD.")] = None,
        limit: Annotated[Any, arg.as_sent(f"How many recordings, 1 to {MAX_LIST_LIMIT}.",
                                          type="integer", minimum=1, maximum=MAX_LIST_LIMIT,
                                          default=DEFAULT_LIST_LIMIT)] = DEFAULT_LIST_LIMIT,
        speaker: Annotated[Any, arg.optional_text("Only recordings with a speaker whose name "
                                                  "contains this text.")] = None,
        source: Annotated[Any, arg.as_sent('"any", "transcript" or "notes" (only recordings '
                                           "that have one).", type="string",
                                           enum=list(SOURCES), default="any")] = "any",
        cursor: Annotated[Any, arg.optional_text(_CURSOR)] = None,
        source_kind: Annotated[Any, arg.as_sent(_KIND, type="string", enum=list(SOURCE_KINDS),
                                                default="any")] = "any",
        folder: Annotated[Any, arg.optional_text(_FOLDER)] = None,
    ) -> Annotated[CallToolResult, RecordingList]:
        request = checked(make_list_request, date_from=date_from, date_to=date_to,
                          limit=limit, speaker=_opt("speaker", speaker),
                          source=source, cursor=cursor, source_kind=source_kind,
                          folder=_opt("folder", folder))
        result = await answering.answer(ctx, lambda: answers.browse.list(request),
                                     lambda why, info: RecordingList(
                                         (), 0, None, info, today=answering.today(), note=why))
        return answered(render_list(result), result)

    @server.tool(name="plaud_transcript", title="Read a whole transcript",
                 description=TRANSCRIPT_DESCRIPTION, annotations=READ_ONLY)
    @guarded
    async def plaud_transcript(
        ctx: Context[Any, Any],
        file_id: Annotated[Any, arg.text(_FILE_ID)],
        cursor: Annotated[Any, arg.optional_text(_CURSOR)] = None,
    ) -> Annotated[CallToolResult, TranscriptPage]:
        fid = checked(arg.file_id, file_id)
        page = await answering.answer(ctx, lambda: answers.pages.transcript(fid, cursor),
                                   lambda why, info: TranscriptPage(
                                       fid, "", "", "", (), 0, 0, None, note=why))
        return answered(render_transcript(page), page)

    @server.tool(name="plaud_notes", title="Read AI notes and action items",
                 description=NOTES_DESCRIPTION, annotations=READ_ONLY)
    @guarded
    async def plaud_notes(
        ctx: Context[Any, Any],
        file_id: Annotated[Any, arg.optional_text("One recording's notes (from plaud_search "
                                                  "or plaud_list).")] = None,
        date_from: Annotated[Any, arg.optional_day("Notes of recordings from this local day "
                                                   "on, YYYY-MM-DD.")] = None,
        date_to: Annotated[Any, arg.optional_day("Notes of recordings up to this local day, "
                                                 "YYYY-MM-DD.")] = None,
        section: Annotated[Any, arg.optional_text(
            'Only this kind of section: "action items", "decisions", "risks", "summary", '
            '"highlights", "marks", or words of a heading.')] = None,
        folder: Annotated[Any, arg.optional_text(_FOLDER)] = None,
        speaker: Annotated[Any, arg.optional_text("Only recordings with a speaker whose name "
                                                  "contains this text.")] = None,
        cursor: Annotated[Any, arg.optional_text(_CURSOR)] = None,
    ) -> Annotated[CallToolResult, NotesResult]:
        request = checked(make_notes_request, file_id=file_id, date_from=date_from,
                          date_to=date_to, section=_opt("section", section),
                          folder=_opt("folder", folder),
                          speaker=_opt("speaker", speaker), cursor=cursor)
        result = await answering.answer(ctx, lambda: answers.pages.notes(request),
                                     lambda why, info: NotesResult(
                                         (), request.section, 0, None, info,
                                         today=answering.today(), note=why))
        return answered(render_notes(result), result)


def register_people_tools(server: MCPServer[Any], answers: Answers, account: Account) -> None:
    answering = Answering(answers, account)

    @server.tool(name="plaud_people", title="People in the recordings",
                 description=PEOPLE_DESCRIPTION, annotations=READ_ONLY)
    @guarded
    async def plaud_people(
        ctx: Context[Any, Any],
        date_from: Annotated[Any, arg.optional_day("Only recordings from this local day on, "
                                                   "YYYY-MM-DD.")] = None,
        date_to: Annotated[Any, arg.optional_day("Only recordings up to this local day, "
                                                 "YYYY-MM-DD.")] = None,
        folder: Annotated[Any, arg.optional_text(_FOLDER)] = None,
        name: Annotated[Any, arg.optional_text("Only people whose name contains this "
                                               "text.")] = None,
        limit: Annotated[Any, arg.as_sent(f"How many people, 1 to {MAX_PEOPLE_LIMIT}.",
                                          type="integer", minimum=1,
                                          maximum=MAX_PEOPLE_LIMIT,
                                          default=DEFAULT_PEOPLE_LIMIT)] = DEFAULT_PEOPLE_LIMIT,
        cursor: Annotated[Any, arg.optional_text(_CURSOR)] = None,
    ) -> Annotated[CallToolResult, PeopleList]:
        request = checked(make_people_request, date_from=date_from, date_to=date_to,
                          folder=_opt("folder", folder), name=_opt("name", name), limit=limit,
                          cursor=cursor)
        result = await answering.answer(ctx, lambda: answers.people.list(request),
                                     lambda why, info: PeopleList(
                                         (), 0, None, info, today=answering.today(), note=why))
        return answered(render_people(result), result)

    @server.tool(name="plaud_name_speaker", title="Name a speaker (on this machine)",
                 description=NAME_SPEAKER_DESCRIPTION, annotations=LOCAL_WRITE)
    @guarded
    async def plaud_name_speaker(
        file_id: Annotated[Any, arg.text(_FILE_ID)],
        label: Annotated[Any, arg.text("The speaker as the recording shows it, e.g. "
                                       '"Speaker 2" (or the name given here before, to '
                                       "change or undo it).")],
        name: Annotated[Any, arg.optional_text("Who the speaker is; leave it out to undo the "
                                               "local name.")] = None,
    ) -> Annotated[CallToolResult, SpeakerNamed]:
        named = await anyio.to_thread.run_sync(checked, answers.naming.name, file_id, label,
                                               name)
        return answered(render_named(named), named)
