"""The MCP server, assembled: its name, icon and instructions, the five reading tools, the
two sign-in tools and the prompts, over the answers of one process. ``serve`` runs it on
stdio (``http.serve_http`` over streamable HTTP: the same server, another transport).

Start-up never waits for the embedding model: it loads on a background thread while
``initialize`` and ``tools/list`` are answered, and a search that arrives first waits
for it. A server that finds the index older than its interval, no agent and nobody
indexing starts one sync in a process of its own (``Readiness.keep_fresh``).
"""

from __future__ import annotations

import base64
import logging
import os
import signal
import sys
import threading
import time
from importlib.resources import files
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.types import Icon

from .. import __version__
from ..answers import Answers
from ..answers.readiness import Ready
from ..config import Config
from ..errors import PlaudIndexError
from ..sync.detached import DetachedSync
from ..sync.keeper import Keeper
from . import lifeline, stdio
from .account import Account, register_account_tools
from .descriptions import INSTRUCTIONS
from .failures import missing_arguments_are_ours
from .prompts import prompt_requests_checked, register_prompts
from .tools import register_people_tools, register_reading_tools

log = logging.getLogger(__name__)

NAME = "plaud-index-mcp"
TITLE = "Plaud Index"
WEBSITE = "https://github.com/plaud-index/plaud-index-mcp"


def icon() -> Icon:
    """The icon as a data URI: a client shows it without fetching anything."""
    png = files("plaud_index.server").joinpath("icon.png").read_bytes()
    return Icon(src="data:image/png;base64," + base64.b64encode(png).decode(),
                mime_type="image/png", sizes=["256x256"])


def build_server(answers: Answers, account: Account, *, auth: Any = None,
                 provider: Any = None) -> MCPServer[Any]:
    """``auth`` and ``provider``: the remote authorization of ``serve --http --public-url``
    (``http.serve_http``); none for stdio."""
    server: MCPServer[Any] = MCPServer(NAME, title=TITLE, version=__version__,
                                       instructions=INSTRUCTIONS, website_url=WEBSITE,
                                       icons=[icon()], middleware=[missing_arguments_are_ours,
                                                   prompt_requests_checked],
                                       auth=auth, auth_server_provider=provider)
    register_reading_tools(server, answers, account)
    register_people_tools(server, answers, account)
    register_account_tools(server, account)
    register_prompts(server, answers)
    return server


def server_process(config: Config, started_by: str = "server") -> tuple[Answers, Account]:
    """What one server process holds: the answers (with the sync it may start in a process
    of its own, which outlives it: a client may start a server per call) and the sign-in
    desk, whose completion starts the first sync at once."""
    answers = Answers.of(config, keeper=Keeper(config, DetachedSync(started_by=started_by)))

    def first_sync() -> None:
        try:
            checked = answers.readiness.check()
        except PlaudIndexError as exc:  # a damaged index: the next question says so
            log.info("After the sign-in: %s", exc)
            return
        if not isinstance(checked, Ready):  # building (as it should), or what stops it
            log.info("After the sign-in: %s", checked.message)

    return answers, Account(config, first_sync)


def warm_up(answers: Answers) -> None:
    """Off the request path: load the model, and keep the index fresh if it is due."""
    def run() -> None:
        try:
            started = time.perf_counter()
            model = answers.index.embedder
            log.info("Embedding model %s ready in %.2fs", model.model_id,
                     time.perf_counter() - started)
        except PlaudIndexError as exc:  # searches will report it; keyword search still works
            log.error("%s", exc)
        try:
            if answers.readiness.keep_fresh():
                log.info("The index was older than its interval: a sync runs in a process of "
                         "its own")
        except PlaudIndexError as exc:
            log.info("No sync started at start-up: %s", exc)

    threading.Thread(target=run, name="warm-up", daemon=True).start()


def serve(config: Config) -> int:
    answers, account = server_process(config)
    warm_up(answers)
    lifeline.watch()
    signal.signal(signal.SIGTERM, lambda *_: _exit("SIGTERM", account))
    log.info("plaud-index-mcp %s serving MCP on stdio (index %s)", __version__,
             config.index_dir)
    stdio.run(build_server(answers, account))
    _exit("stdin closed", account)
    return 0  # not reached


def _exit(why: str, account: Account) -> None:
    """End the process now: nothing of ours runs in it but answers (a sync it started runs
    on in its own process; a sign-in it waited for is offered again by the next server)."""
    log.info("%s; exiting", why)
    account.close()
    logging.shutdown()
    sys.stderr.flush()
    os._exit(0)  # do not wait for a worker thread still finishing a request or a model run
