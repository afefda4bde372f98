"""The indexing commands: ``status``, ``indexer``, ``mirror``, ``demo``."""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
import tempfile
import threading
import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from ..answers import Answers, make_embedder
from ..config import Config, interval_banner
from ..errors import ConfigError, IndexBusyError
from ..render.answers import render_search
from ..render.reports import mirror_line, render_mirror_report, render_status
from ..search.rank import make_request
from ..setup.status import mirror_status, service_status
from ..sync.cycles import run_locked_cycle, run_mirror_pass
from ..sync.daemon import run_daemon
from ..sync.keeper import Keeper
from ..sync.terminal import reporter_for
from .setup import show

log = logging.getLogger("plaud_index")

DEMO_QUERIES = (
    "what did we decide about the Q3 budget?",
    "database outage root cause",
    "who is responsible for the launch checklist",
    "Lagerkosten für die Kartons",
)


def cmd_status(args: argparse.Namespace, config: Config) -> int:
    status = service_status(Answers.of(config, keeper=Keeper(config)).index)
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
        report = run_locked_cycle(config, embedder, should_stop=stop.is_set, progress=progress,
                                  role=args.role or "indexer", lock_fd=args.lock_fd)
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
    answers = Answers.of(demo, keeper=Keeper(demo))
    report = run_locked_cycle(demo, answers.index.embedder)
    print(f"Indexed {report.added} recordings into {report.chunks_embedded} chunks in "
          f"{time.perf_counter() - started:.1f}s (model {answers.index.embedder.model_id})")
    for query in args.queries or DEMO_QUERIES:
        t0 = time.perf_counter()
        result = answers.search.search(make_request(query, limit=3))
        print(f"\n=== {query}  ({(time.perf_counter() - t0) * 1000:.0f} ms)")
        print(render_search(result, terminal=True))
    return 0
