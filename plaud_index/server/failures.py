"""How a tool answers and fails: its result as text and structured content (``answered``),
and one line a model can act on when it fails, never an empty "Error executing tool".

``checked`` turns what is wrong with a call (a ``PlaudIndexError``) into a ``ToolError``
with its message; ``guarded`` wraps a whole tool so that anything else (a bug) is named
as one, with its traceback in the server's log (stderr), not sent to the client; a
required argument left out is ours to report too (``missing_arguments_are_ours``).
"""

from __future__ import annotations

import dataclasses
import functools
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent

from ..errors import PlaudIndexError
from ..redact import redact

log = logging.getLogger(__name__)
R = TypeVar("R")


def answered(text: str, data: Any) -> CallToolResult:
    """A tool's answer: ``text`` for the model to read, ``data`` (a result dataclass) as
    its structured content."""
    return CallToolResult(content=[TextContent(type="text", text=text)],
                          structured_content=dataclasses.asdict(data))


def guarded(tool: Callable[..., Awaitable[R]]) -> Callable[..., Awaitable[R]]:
    """A tool whose every failure is one line for the model: ours as said, anything else
    (a bug) named as one, with its traceback in the server's log (stderr)."""
    @functools.wraps(tool)
    async def call(*args: Any, **kwargs: Any) -> R:
        try:
            return await tool(*args, **kwargs)
        except ToolError:
            raise
        except Exception as exc:
            log.exception("%s failed", tool.__name__)
            raise ToolError(f"{tool.__name__} failed inside the server ({type(exc).__name__}); "
                            "this is a bug: the server's log has the details") from exc
    return call


def checked(fn: Callable[..., R], *args: Any, **kwargs: Any) -> R:
    """An argument check or a reading: what is wrong is one line for the model."""
    try:
        return fn(*args, **kwargs)
    except PlaudIndexError as exc:
        raise ToolError(redact(str(exc))) from exc


# The arguments each tool cannot do without. The SDK's own check of a missing one answers
# with pydantic's report (several lines, a URL); filled in as null, ours answers instead, in
# one line ("file_id must be a file_id from plaud_search or plaud_list, got None").
REQUIRED: dict[str, tuple[str, ...]] = {"plaud_search": ("query",), "plaud_get": ("file_id",),
            "plaud_transcript": ("file_id",),
            "plaud_name_speaker": ("file_id", "label")}


async def missing_arguments_are_ours(ctx: Any, call_next: Any) -> Any:
    """Server middleware (before the SDK validates a call): a missing required argument
    reaches our checks as null."""
    params = ctx.params
    if ctx.method == "tools/call" and isinstance(params, Mapping):
        needed = REQUIRED.get(str(params.get("name")), ())
        given = params.get("arguments")
        if needed and (given is None or isinstance(given, Mapping)):
            filled = {**dict.fromkeys(needed), **(given or {})}
            ctx = dataclasses.replace(ctx, params={**params, "arguments": filled})
    return await call_next(ctx)
