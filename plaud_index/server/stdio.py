"""The stdio transport: the SDK's, with a reader that answers what the SDK would drop.

A request line the SDK cannot parse, or whose id it does not keep, gets no reply from it
(``jsonrpc_guard`` says which and why): its client waits forever. This reader parses each
line as the SDK's does before handing it over; such a line is answered here instead,
with the JSON-RPC error for its id, sent through the SDK's own write stream (one writer,
so frames never interleave). The fix belongs upstream in ``mcp.server.stdio``; until it
is there this is the smallest shim: one reader, no change to the SDK's parsing of every
other line. It needs the SDK's low-level server (a private attribute): if an SDK release
renames it, the server runs the SDK's plain transport and says so.
"""

from __future__ import annotations

import io
import logging
import math
import os
from typing import Any

import anyio
import anyio.from_thread
import mcp_types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from .jsonrpc_guard import Refusal, refusal

log = logging.getLogger(__name__)


def run(server: MCPServer) -> None:
    lowlevel = getattr(server, "_lowlevel_server", None)
    if lowlevel is None or not hasattr(lowlevel, "create_initialization_options"):
        log.warning("This mcp release has no _lowlevel_server: serving without the guard "
                    "for unparseable requests")
        server.run("stdio")
        return
    anyio.run(_serve, lowlevel)


async def _serve(lowlevel: Any) -> None:
    send, receive = anyio.create_memory_object_stream[Refusal](math.inf)
    stdin = anyio.wrap_file(AnsweringReader(_claim_stdin(), send))
    async with stdio_server(stdin=stdin) as (read_stream, write_stream), \
            anyio.create_task_group() as tasks:
        tasks.start_soon(_answer, receive, write_stream)
        await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())
        tasks.cancel_scope.cancel()


def _claim_stdin() -> io.BufferedReader:
    """The wire on a private descriptor, and fd 0 on the null device, as the SDK does when
    it reads stdin itself: code in this process, or a child, reads EOF, never a frame."""
    wire = os.dup(0)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    return io.BufferedReader(io.FileIO(wire, "rb", closefd=False))


class AnsweringReader(io.TextIOWrapper):
    """stdin as the SDK reads it (UTF-8, undecodable bytes replaced), minus the request
    lines it would leave unanswered: those go to ``refusals``, answered by ``_answer``."""

    def __init__(self, buffer: io.BufferedReader,
                 refusals: MemoryObjectSendStream[Refusal]) -> None:
        super().__init__(buffer, encoding="utf-8", errors="replace")
        self.refusals = refusals

    # (typeshed gives TextIOWrapper two readline signatures; this is the text one)
    def readline(self, size: int = -1, /) -> str:  # type: ignore[override]
        while True:
            line = super().readline(size)
            if not line.strip():
                return line
            message = _as_the_sdk_reads(line)
            # a request or response keeps its id; a notification may have lost one
            if message is not None and not isinstance(message,
                                                      mcp_types.JSONRPCNotification):
                return line
            owed = refusal(line, parsed=message is not None)
            if owed is None:
                return line
            log.warning("Answered a request the SDK cannot read (id %r) with error %s",
                        owed.id, owed.code)
            anyio.from_thread.run_sync(self.refusals.send_nowait, owed)


def _as_the_sdk_reads(line: str) -> Any:
    """The message the SDK's reader makes of ``line``, or ``None`` where it fails."""
    try:
        return mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValidationError:
        return None


async def _answer(refusals: MemoryObjectReceiveStream[Refusal],
                  write_stream: MemoryObjectSendStream[SessionMessage]) -> None:
    async with refusals:
        async for owed in refusals:
            error = mcp_types.JSONRPCError(jsonrpc="2.0", id=owed.id, error=mcp_types.ErrorData(
                code=owed.code, message=owed.message))
            await write_stream.send(SessionMessage(error))
