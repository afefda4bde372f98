"""The MCP stdio server: ``plaud_search``, ``plaud_list``, ``plaud_get``,
``plaud_transcript``, ``plaud_notes``. Every ``mcp`` import is here or in its transport
(``stdio.py``); what each tool is for is in ``descriptions.py``.

Start-up never waits for the embedding model: it loads on a background
thread while ``initialize`` and ``tools/list`` are answered, and a search that
arrives first simply waits for it. The index is reopened whenever its
manifest changes. Tools raise ``ToolError`` with a message a model can act
on; they never return error text as a result.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time
from dataclasses import asdict
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field, WithJsonSchema  # the SDK's schema layer (a dependency of mcp)

from .. import __version__
from ..answers import Answers
from ..config import Config
from ..errors import IndexNotReadyError, PlaudIndexError
from ..redact import redact
from ..render import render_list, render_recording, render_search
from ..render_reading import render_notes, render_transcript
from ..results import NotesResult, RecordingInfo, RecordingList, SearchResult, TranscriptPage
from ..search.browse import DEFAULT_LIST_LIMIT, MAX_LIST_LIMIT, make_list_request
from ..search.notes import make_notes_request
from ..search.rank import DEFAULT_LIMIT, MAX_LIMIT, SOURCE_KINDS, SOURCES, make_request
from ..search.transcript import (
    DEFAULT_WINDOW_S,
    MAX_WINDOW_S,
    parse_at,
    parse_window,
)
from ..sync.detached import DetachedSync
from . import lifeline, stdio
from .descriptions import (
    GET_DESCRIPTION,
    INSTRUCTIONS,
    LIST_DESCRIPTION,
    NOTES_DESCRIPTION,
    SEARCH_DESCRIPTION,
    TRANSCRIPT_DESCRIPTION,
)

log = logging.getLogger(__name__)

MAX_FILE_ID_CHARS = 200
_FOLDER_HELP = ("Only recordings filed in the Plaud folder of this name (any case; the "
                "whole name).")
_KIND_HELP = ('"any", "plaud" (recordings from the Plaud account) or "folder" (files from '
              "the user's local folders; their results carry the file's path).")
READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True,
                            open_world_hint=False)


def _as_sent(description: str, **schema: Any) -> WithJsonSchema:
    """Publish an argument's exact JSON Schema (bounds, enum) but hand the value over as the
    client sent it: ``make_request`` then rejects ``"8"`` or ``true`` for ``limit`` with a
    message a model can act on, instead of a silent coercion."""
    return WithJsonSchema({**schema, "description": description})


_OPTIONAL_DAY = {"anyOf": [{"type": "string", "format": "date",
                            "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"}, {"type": "null"}],
                 "default": None}


def _call(fn: Any, *args: Any, **kwargs: Any) -> Any:
    try:
        return fn(*args, **kwargs)
    except PlaudIndexError as exc:
        raise ToolError(redact(str(exc))) from exc


def _or_pending(fn: Any, pending: Any, *args: Any) -> Any:
    """``fn(*args)``, or while a first sync is still building the index, ``pending(why)``:
    an ordinary answer that says so (a client shows a tool error as a failure, and an index
    being built is no failure). What is wrong stays an error."""
    try:
        return fn(*args)
    except IndexNotReadyError as exc:
        if not exc.building:
            raise ToolError(redact(str(exc))) from exc
        return pending(str(exc))
    except PlaudIndexError as exc:
        raise ToolError(redact(str(exc))) from exc


def build_server(answers: Answers) -> MCPServer[Any]:
    server: MCPServer[Any] = MCPServer("plaud-index-mcp", version=__version__,
                                       instructions=INSTRUCTIONS)

    @server.tool(name="plaud_search", description=SEARCH_DESCRIPTION, annotations=READ_ONLY)
    def plaud_search(
        query: Annotated[str, Field(description="What to look for, in natural language or "
                                                "keywords (at most 1000 characters).")],
        date_from: Annotated[Any, _as_sent("Only recordings created on or after this day, "
                                           "YYYY-MM-DD.", **_OPTIONAL_DAY)] = None,
        date_to: Annotated[Any, _as_sent("Only recordings created on or before this day, "
                                         "YYYY-MM-DD.", **_OPTIONAL_DAY)] = None,
        limit: Annotated[Any, _as_sent(f"How many recordings to return, 1 to {MAX_LIMIT}.",
                                       type="integer", minimum=1, maximum=MAX_LIMIT,
                                       default=DEFAULT_LIMIT)] = DEFAULT_LIMIT,
        speaker: Annotated[str | None, Field(description="Only passages spoken by a speaker "
                                                         "whose name contains this text.")] = None,
        source: Annotated[Any, _as_sent('"any", "transcript" (what was said) or "notes" '
                                        "(Plaud's AI notes).", type="string",
                                        enum=list(SOURCES), default="any")] = "any",
        source_kind: Annotated[Any, _as_sent(_KIND_HELP, type="string",
                                             enum=list(SOURCE_KINDS), default="any")] = "any",
        folder: Annotated[str | None, Field(description=_FOLDER_HELP)] = None,
    ) -> Annotated[CallToolResult, SearchResult]:
        request = _call(make_request, query, date_from=date_from, date_to=date_to,
                        limit=limit, speaker=speaker, source=source, source_kind=source_kind,
                        folder=folder)
        result = _or_pending(answers.search.search, lambda why: SearchResult(
            request.query, (), answers.readiness.pending(), note=why,
            today=answers.index.today()), request)
        return CallToolResult(content=[TextContent(type="text", text=render_search(result))],
                              structured_content=asdict(result))

    @server.tool(name="plaud_get", description=GET_DESCRIPTION, annotations=READ_ONLY)
    def plaud_get(
        file_id: Annotated[str, Field(description="A file_id returned by plaud_search or "
                                                  "plaud_list.")],
        query: Annotated[str | None, Field(description="Optional topic: choose snippets about "
                                                       "it inside this recording.")] = None,
        at: Annotated[Any, _as_sent("Read around this time in the recording, hh:mm:ss or "
                                    "mm:ss (a moment's start from plaud_search).",
                                    anyOf=[{"type": "string"}, {"type": "null"}],
                                    default=None)] = None,
        at_ms: Annotated[Any, _as_sent("The same as at, in milliseconds from the start.",
                                       anyOf=[{"type": "integer", "minimum": 0},
                                              {"type": "null"}], default=None)] = None,
        window: Annotated[Any, _as_sent(f"Seconds before and after at (default "
                                        f"{DEFAULT_WINDOW_S}).", anyOf=[
                                            {"type": "integer", "minimum": 1,
                                             "maximum": MAX_WINDOW_S}, {"type": "null"}],
                                        default=None)] = None,
    ) -> Annotated[CallToolResult, RecordingInfo]:
        _check_file_id(file_id)
        moment = None if at is None and at_ms is None else _call(parse_at, at, at_ms)
        if moment is None and window is not None:
            raise ToolError("window needs at (or at_ms): the moment to read around")
        result = _call(answers.search.get, file_id, query, moment, _call(parse_window, window))
        return CallToolResult(content=[TextContent(type="text", text=render_recording(result))],
                              structured_content=asdict(result))

    @server.tool(name="plaud_list", description=LIST_DESCRIPTION, annotations=READ_ONLY)
    def plaud_list(
        date_from: Annotated[Any, _as_sent("Only recordings from this local day on, "
                                           "YYYY-MM-DD.", **_OPTIONAL_DAY)] = None,
        date_to: Annotated[Any, _as_sent("Only recordings up to this local day, YYYY-MM-DD.",
                                         **_OPTIONAL_DAY)] = None,
        limit: Annotated[Any, _as_sent(f"How many recordings, 1 to {MAX_LIST_LIMIT}.",
                                       type="integer", minimum=1, maximum=MAX_LIST_LIMIT,
                                       default=DEFAULT_LIST_LIMIT)] = DEFAULT_LIST_LIMIT,
        speaker: Annotated[str | None, Field(description="Only recordings with a speaker "
                                                         "whose name contains this text.")
                           ] = None,
        source: Annotated[Any, _as_sent('"any", "transcript" or "notes" (only recordings '
                                        "that have one).", type="string", enum=list(SOURCES),
                                        default="any")] = "any",
        cursor: Annotated[str | None, Field(description="next_cursor from the previous "
                                                        "page.")] = None,
        source_kind: Annotated[Any, _as_sent(_KIND_HELP, type="string",
                                             enum=list(SOURCE_KINDS), default="any")] = "any",
        folder: Annotated[str | None, Field(description=_FOLDER_HELP)] = None,
    ) -> Annotated[CallToolResult, RecordingList]:
        request = _call(make_list_request, date_from=date_from, date_to=date_to, limit=limit,
                        speaker=speaker, source=source, cursor=cursor, source_kind=source_kind,
                        folder=folder)
        result = _or_pending(answers.browse.list, lambda why: RecordingList(
            (), 0, None, answers.readiness.pending(), today=answers.index.today(), note=why),
            request)
        return CallToolResult(content=[TextContent(type="text", text=render_list(result))],
                              structured_content=asdict(result))

    @server.tool(name="plaud_transcript", description=TRANSCRIPT_DESCRIPTION,
                 annotations=READ_ONLY)
    def plaud_transcript(
        file_id: Annotated[str, Field(description="A file_id returned by plaud_search or "
                                                  "plaud_list.")],
        cursor: Annotated[str | None, Field(description="next_cursor from the previous "
                                                        "page.")] = None,
    ) -> Annotated[CallToolResult, TranscriptPage]:
        _check_file_id(file_id)
        page = _call(answers.reading.transcript, file_id, cursor)
        return CallToolResult(content=[TextContent(type="text", text=render_transcript(page))],
                              structured_content=asdict(page))

    @server.tool(name="plaud_notes", description=NOTES_DESCRIPTION, annotations=READ_ONLY)
    def plaud_notes(
        file_id: Annotated[str | None, Field(description="One recording's notes (from "
                                                         "plaud_search or plaud_list).")
                           ] = None,
        date_from: Annotated[Any, _as_sent("Notes of recordings from this local day on, "
                                           "YYYY-MM-DD.", **_OPTIONAL_DAY)] = None,
        date_to: Annotated[Any, _as_sent("Notes of recordings up to this local day, "
                                         "YYYY-MM-DD.", **_OPTIONAL_DAY)] = None,
        section: Annotated[str | None, Field(description='Only this kind of section: "action '
                                                         'items", "decisions", "risks", '
                                                         '"summary", "highlights", "marks", '
                                                         "or words of a heading.")] = None,
        folder: Annotated[str | None, Field(description=_FOLDER_HELP)] = None,
        speaker: Annotated[str | None, Field(description="Only recordings with a speaker "
                                                         "whose name contains this text.")
                           ] = None,
        cursor: Annotated[str | None, Field(description="next_cursor from the previous "
                                                        "page.")] = None,
    ) -> Annotated[CallToolResult, NotesResult]:
        request = _call(make_notes_request, file_id=file_id, date_from=date_from,
                        date_to=date_to, section=section, folder=folder, speaker=speaker,
                        cursor=cursor)
        result = _or_pending(answers.reading.notes, lambda why: NotesResult(
            (), request.section, 0, None, answers.readiness.pending(),
            today=answers.index.today(), note=why), request)
        return CallToolResult(content=[TextContent(type="text", text=render_notes(result))],
                              structured_content=asdict(result))

    return server


def _check_file_id(file_id: object) -> None:
    if not isinstance(file_id, str) or not file_id.strip():
        raise ToolError("file_id is empty: pass a file_id from plaud_search or plaud_list")
    if len(file_id) > MAX_FILE_ID_CHARS:
        raise ToolError(f"file_id is {len(file_id)} characters; file ids from plaud_search "
                        f"are at most {MAX_FILE_ID_CHARS}")


def _load_model_in_background(answers: Answers) -> None:
    def load() -> None:
        try:
            started = time.perf_counter()
            model = answers.index.embedder
            log.info("Embedding model %s ready in %.2fs", model.model_id,
                     time.perf_counter() - started)
        except PlaudIndexError as exc:  # searches will report it; keyword search still works
            log.error("%s", exc)

    threading.Thread(target=load, name="model-loader", daemon=True).start()


# How long a session's end waits for a background sync to commit what it has embedded.
def serve(config: Config) -> int:
    # The first sync runs in a process of its own that outlives this session: a client may
    # start a server per call (and end each session within a second or two)
    answers = Answers.of(config, sync=DetachedSync(started_by="server"))
    _load_model_in_background(answers)
    lifeline.watch()
    signal.signal(signal.SIGTERM, lambda *_: _exit("SIGTERM"))
    log.info("plaud-index-mcp %s serving MCP on stdio (index %s)", __version__,
             config.index_dir)
    stdio.run(build_server(answers))
    _exit("stdin closed")
    return 0  # not reached


def _exit(why: str) -> None:
    """End the process now: nothing of ours runs in it but answers (a first sync it started
    runs on in its own process)."""
    log.info("%s; exiting", why)
    logging.shutdown()
    sys.stderr.flush()
    os._exit(0)  # do not wait for a worker thread still finishing a request or a model run
