"""The command line: argparse subcommands over ``service``; errors become exit codes."""

from __future__ import annotations

import argparse
import functools
import json
import logging
import os
import re
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any, TypeVar

from . import __version__
from .config import Config, interval_banner, load_config
from .errors import (
    ConfigError,
    IndexBusyError,
    IndexNotReadyError,
    InvalidQueryError,
    PlaudIndexError,
    UnknownRecordingError,
)
from .fsio import raise_open_file_limit
from .redact import RedactingFilter, redact
from .render import (
    mirror_line,
    render_list,
    render_mirror_report,
    render_recording,
    render_search,
    render_status,
)
from .search.browse import DEFAULT_LIST_LIMIT, MAX_LIST_LIMIT, make_list_request
from .search.rank import (
    DEFAULT_LIMIT,
    MAX_LIMIT,
    MODES,
    SOURCE_KINDS,
    SOURCES,
    make_request,
)
from .search.transcript import DEFAULT_WINDOW_S, parse_at, parse_window
from .service import SearchService, make_embedder
from .setup.client_config import CLIENTS
from .setup.commands import (
    cmd_auth_status,
    cmd_config,
    cmd_doctor,
    cmd_install_agent,
    cmd_login,
    cmd_logout,
    cmd_uninstall_agent,
    show,
)
from .setup.status import mirror_status, service_status
from .sync.cycles import DetachedSync, run_locked_cycle, run_mirror_pass
from .sync.daemon import run_daemon
from .sync.progress import SyncProgress
from .sync.terminal import LineSafeHandler, reporter_for

log = logging.getLogger("plaud_index")
CLI = "plaud-index-mcp"
T = TypeVar("T")

DEMO_QUERIES = (
    "what did we decide about the Q3 budget?",
    "database outage root cause",
    "who is responsible for the launch checklist",
    "Lagerkosten für die Kartons",
)


# The tools' argument names, as this command line spells them (errors are worded for
# the MCP tools; a terminal user typed flags).
FLAGS = {"date_from": "--from", "date_to": "--to", "source_kind": "--source-kind",
         "limit": "--limit", "speaker": "--speaker", "source": "--source", "mode": "--mode",
         "cursor": "--cursor", "window": "--window", "folder": "--folder", "at_ms": "--at",
         "at": "--at",
         "plaud_search": "plaud-index-mcp search", "plaud_list": "plaud-index-mcp list",
         "plaud_get": "plaud-index-mcp get"}
_FLAG_WORDS = re.compile(r"(?<![\w-])(" + "|".join(sorted(FLAGS, key=len, reverse=True)) +
                         r")(?![\w-])(=?)")


def as_flags(message: str) -> str:
    """``date_from must be YYYY-MM-DD`` → ``--from must be YYYY-MM-DD``."""
    return _FLAG_WORDS.sub(lambda m: FLAGS[m.group(1)] + (" " if m.group(2) else ""), message)


def setup_logging(verbose: bool) -> None:
    # stdout is reserved for the MCP protocol; a live progress line stays below the records
    handler = LineSafeHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.addFilter(RedactingFilter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.DEBUG if verbose else logging.INFO)


def cmd_search(args: argparse.Namespace, config: Config) -> int:
    request = make_request(args.query, date_from=args.date_from, date_to=args.date_to,
                           limit=args.limit, speaker=args.speaker, source=args.source,
                           mode=args.mode, source_kind=args.source_kind, folder=args.folder)
    result = answer(config, lambda service: service.search(request))
    show(args.json, asdict(result), lambda: render_search(result, terminal=True))
    return 0


def cmd_get(args: argparse.Namespace, config: Config) -> int:
    at_ms = parse_at(args.at) if args.at is not None else None
    window = parse_window(args.window)
    info = answer(config, lambda service: service.get(args.file_id, args.query, at_ms, window))
    show(args.json, asdict(info), lambda: render_recording(info, terminal=True))
    return 0


def cmd_list(args: argparse.Namespace, config: Config) -> int:
    request = make_list_request(date_from=args.date_from, date_to=args.date_to,
                                limit=args.limit, speaker=args.speaker, source=args.source,
                                cursor=args.cursor, source_kind=args.source_kind,
                                folder=args.folder)
    listing = answer(config, lambda service: service.browse(request))
    show(args.json, asdict(listing), lambda: render_list(listing, terminal=True))
    return 0


def answer(config: Config, ask: Callable[[SearchService], T]) -> T:
    """``ask`` the index as the server would: an empty or partial index has its first sync
    started in the background (``DetachedSync``); an empty one is waited for, its progress
    shown, until the first commit (seconds), then answered from what is committed."""
    sync = DetachedSync()
    service = SearchService(config, first_sync=sync)
    try:
        result = ask(service)
    except IndexNotReadyError:
        if sync.process is None and not sync.running(config):
            raise
        _wait_for_first_commit(service, sync)  # (at once when the child already ended)
        try:
            result = ask(service)
        except IndexNotReadyError:
            if why := sync.failure(config):  # e.g. a full disk: no state could record it
                raise IndexNotReadyError(f"Plaud index not available: the first sync failed: "
                                         f"{why}") from None
            raise
    if sync.process is not None:
        print(f"The first sync goes on in the background (pid {sync.process.pid}): "
              f"`{CLI} status` shows how far it is; its log is "
              f"{config.home / DetachedSync.LOG}", file=sys.stderr)
    return result


def _wait_for_first_commit(service: SearchService, sync: DetachedSync) -> None:
    """A Ctrl-C stops the waiting, not the sync (it runs in a session of its own)."""
    progress = reporter_for(sys.stderr)
    try:
        while sync.running(service.config):
            snapshot = service.snapshot()
            if snapshot is not None and snapshot.recordings:
                break
            if now := SyncProgress.from_state(service.state.read().progress):
                progress(now)
            time.sleep(0.5)  # a poll of the sync's own record, not a race with it
    finally:
        progress.finish(then="answering from what is committed")


def cmd_status(args: argparse.Namespace, config: Config) -> int:
    status = service_status(SearchService(config))
    show(args.json, asdict(status), lambda: render_status(status, config.zone))
    return 0


def _log_report(report: Any) -> None:
    log.info("Cycle done: %s", json.dumps(asdict(report)))


def stop_on_signals() -> tuple[threading.Event, list[int]]:
    """SIGTERM (launchd, a client ending its session) and Ctrl-C ask the running cycle to
    commit what it has embedded and stop; a second Ctrl-C interrupts at once. Returns the
    event and the signals received."""
    stop, received = threading.Event(), []

    def handle(signum: int, frame: object) -> None:
        if stop.is_set() and signum == signal.SIGINT:
            raise KeyboardInterrupt
        received.append(signum)
        stop.set()

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, handle)
    return stop, received


def cmd_indexer(args: argparse.Namespace, config: Config) -> int:
    log.info("%s", interval_banner(config))
    embedder = make_embedder(config)  # once per process, never per cycle
    progress = reporter_for(sys.stderr)
    stop, received = stop_on_signals()
    if not args.once:
        run_daemon(config, embedder, stop, progress=progress)
        return 0
    try:
        report = run_locked_cycle(config, embedder, should_stop=stop.is_set, progress=progress)
    except IndexBusyError as exc:
        log.info("%s", exc)
        return 0
    finally:
        progress.finish()
    _log_report(report)
    return 128 + received[0] if received and report.stopped else 0


def cmd_mirror(args: argparse.Namespace, config: Config) -> int:
    if not args.once:  # where it is and what it holds
        mirror = mirror_status(config)
        if mirror is None:
            raise ConfigError("No mirror folder is set: add \"mirror\": \"~/Notes/Plaud\" to "
                              f"{config.config_path}, or set PLAUD_INDEX_MIRROR")
        show(args.json, asdict(mirror), lambda: "Mirror: " + mirror_line(mirror, config.zone))
        return 0
    progress = reporter_for(sys.stderr, mirror=True)
    try:
        report = run_mirror_pass(config, progress=progress)
    finally:
        progress.finish()
    show(args.json, asdict(report), lambda: render_mirror_report(report))
    return 1 if report.failed else 0


def cmd_demo(args: argparse.Namespace, config: Config) -> int:
    with tempfile.TemporaryDirectory(prefix="plaud-index-demo-") as home:
        return _demo(args, replace(config, home=Path(home), client="mock", mock_corpus=None))


def _demo(args: argparse.Namespace, demo: Config) -> int:
    home = demo.home
    print(f"Demo index in {home} (bundled sample corpus, real embedding model)")
    started = time.perf_counter()
    service = SearchService(demo)
    report = run_locked_cycle(demo, service.embedder)
    print(f"Indexed {report.added} recordings into {report.chunks_embedded} chunks in "
          f"{time.perf_counter() - started:.1f}s (model {service.embedder.model_id})")
    for query in args.queries or DEMO_QUERIES:
        t0 = time.perf_counter()
        result = service.search(make_request(query, limit=3))
        print(f"\n=== {query}  ({(time.perf_counter() - t0) * 1000:.0f} ms)")
        print(render_search(result, terminal=True))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="plaud-index-mcp", description=(
        "Private, local semantic search over your Plaud recordings. Without a subcommand, "
        "serves MCP over stdio."))
    parser.add_argument("--version", action="version", version=__version__)
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging (stderr)")
    # -v after the subcommand too (`indexer --once -v`); SUPPRESS keeps one given before it
    verbose = argparse.ArgumentParser(add_help=False)
    verbose.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS,
                         help="debug logging (stderr)")
    sub = parser.add_subparsers(dest="command")
    add = functools.partial(sub.add_parser, parents=[verbose])

    p = add("search", help="search the index from a terminal")
    p.add_argument("query", help="what to look for, in words or a question")
    p.add_argument("--from", dest="date_from", metavar="YYYY-MM-DD",
                   help="only recordings from this local day on")
    p.add_argument("--to", dest="date_to", metavar="YYYY-MM-DD",
                   help="only recordings up to this local day")
    p.add_argument("--limit", type=int, default=DEFAULT_LIMIT,
                   help=f"recordings to show, 1..{MAX_LIMIT} (default {DEFAULT_LIMIT})")
    p.add_argument("--speaker", help="only passages by a speaker whose name contains this")
    p.add_argument("--source", choices=SOURCES, default="any",
                   help="what was said (transcript), Plaud's AI notes, or both (any)")
    p.add_argument("--source-kind", choices=SOURCE_KINDS, default="any",
                   help="plaud recordings or folder files only")
    p.add_argument("--folder", metavar="NAME",
                   help="only recordings filed in this Plaud folder (any case)")
    p.add_argument("--mode", choices=MODES, default="hybrid",
                   help="meaning and keywords (hybrid), meaning only, or keywords only")
    p.add_argument("--json", action="store_true", help="the MCP tool's structured result")
    p.set_defaults(func=cmd_search)

    p = add("get", help="one recording's details and snippets")
    p.add_argument("file_id", help="a file_id from search or list")
    p.add_argument("--query", help="choose snippets about this topic")
    p.add_argument("--at", metavar="HH:MM:SS", help="show what was said around this time")
    p.add_argument("--window", type=int, metavar="SECONDS",
                   help=f"before and after --at (default {DEFAULT_WINDOW_S})")
    p.add_argument("--json", action="store_true", help="the MCP tool's structured result")
    p.set_defaults(func=cmd_get)

    p = add("list", help="recordings newest first, by local date")
    p.add_argument("--from", dest="date_from", metavar="YYYY-MM-DD",
                   help="only recordings from this local day on")
    p.add_argument("--to", dest="date_to", metavar="YYYY-MM-DD",
                   help="only recordings up to this local day")
    p.add_argument("--limit", type=int, default=DEFAULT_LIST_LIMIT,
                   help=f"recordings per page, 1..{MAX_LIST_LIMIT} (default "
                   f"{DEFAULT_LIST_LIMIT})")
    p.add_argument("--speaker", help="only recordings with a speaker whose name contains this")
    p.add_argument("--source", choices=SOURCES, default="any",
                   help="only recordings that have AI notes, or a transcript")
    p.add_argument("--source-kind", choices=SOURCE_KINDS, default="any",
                   help="plaud recordings or folder files only")
    p.add_argument("--folder", metavar="NAME",
                   help="only recordings filed in this Plaud folder (any case)")
    p.add_argument("--cursor", help="next_cursor of the previous page")
    p.add_argument("--json", action="store_true", help="the MCP tool's structured result")
    p.set_defaults(func=cmd_list)

    p = add("doctor", help="check the model, sign-in, Plaud, indexer and index")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=cmd_doctor)

    p = add("auth", help="the Plaud sign-in")
    auth = p.add_subparsers(dest="auth_command", required=True)
    a = auth.add_parser("status", parents=[verbose],
                        help="who is signed in, until when, where the token lives")
    a.add_argument("--offline", action="store_true", help="do not ask Plaud")
    a.add_argument("--json", action="store_true", help="print the result as JSON")
    a.set_defaults(func=cmd_auth_status)

    p = add("status", help="index health")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=cmd_status)

    p = add("indexer", help="keep the index fresh (foreground daemon)")
    p.add_argument("--once", action="store_true", help="one cycle, then exit")
    p.set_defaults(func=cmd_indexer)

    p = add("login", help="sign in to Plaud in the browser (OAuth PKCE)")
    p.add_argument("--no-browser", action="store_true",
                   help="only print the sign-in URL (e.g. over ssh -L 8199:localhost:8199)")
    p.add_argument("--timeout", type=int, metavar="SECONDS",
                   help="how long to wait for the browser (default 300, or "
                   "PLAUD_LOGIN_TIMEOUT_S)")
    p.set_defaults(func=cmd_login)

    p = add("logout", help="revoke (best effort) and delete the Plaud sign-in")
    p.set_defaults(func=cmd_logout)

    p = add("install-agent", help="run the indexer at login (launchd / systemd)")
    p.add_argument("--print", action="store_true", help="only show what would be installed")
    p.set_defaults(func=cmd_install_agent)

    p = add("uninstall-agent", help="stop and remove the indexer agent")
    p.set_defaults(func=cmd_uninstall_agent)

    p = add("config", help="the MCP client config that starts this server")
    p.add_argument("client", choices=CLIENTS, help="the MCP client to set up")
    p.add_argument("--install", action="store_true",
                   help="merge it into the client's config file (backed up first)")
    p.set_defaults(func=cmd_config)

    p = add("mirror", help="the Markdown mirror of your recordings (see README)")
    p.add_argument("--once", action="store_true",
                   help="fetch every Plaud recording now and write or refresh its file")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.set_defaults(func=cmd_mirror)
    p = add("demo", help="index the bundled sample with the real model and search it")
    p.add_argument("queries", nargs="*", help="your own queries (default: a few examples)")
    p.set_defaults(func=cmd_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    setup_logging(args.verbose)
    raise_open_file_limit()
    if args.command is None:
        from .server.tools import serve  # the only path that imports mcp

        return serve(load_config())
    try:
        return int(args.func(args, load_config()))
    except PlaudIndexError as exc:
        message = redact(str(exc))
        if isinstance(exc, InvalidQueryError | UnknownRecordingError):
            message = as_flags(message)
        print(f"plaud-index-mcp: {message}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `… | head` closed the pipe: stop quietly, as cat does
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # Python flushes stdout again at exit
        return 0


def indexer_main() -> int:
    return main(["indexer", *sys.argv[1:]])


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
