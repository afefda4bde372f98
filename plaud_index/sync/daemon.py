"""The always-on indexer: a cycle every interval, a heartbeat, a clean stop.

The indexer lock is held only while a cycle runs, so the search server's
fallback and ``indexer --once`` interleave with the daemon. SIGTERM/SIGINT stop
the loop; a running cycle stops after its current commit (everything committed
is durable; the rest resumes next start). The heartbeat and pid go into the
sync state so ``status`` can tell a dead daemon from a quiet one.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable

from ..config import Config
from ..embedding.embedder import Embedder
from ..errors import IndexBusyError, PlaudIndexError
from ..fsio import process_alive
from .cycles import run_locked_cycle
from .progress import Reporter, log_commits
from .state import SyncState, SyncStateStore

log = logging.getLogger(__name__)

HEARTBEAT_S = 60.0
MAX_BACKOFF_S = 3600.0


def daemon_running(state: SyncState, now: float) -> bool:
    """Does the always-on indexer (the agent) keep this index fresh? Its process lives and
    its heartbeat is recent (a heartbeat every minute, a cycle every interval)."""
    daemon = state.daemon or {}
    if not process_alive(daemon.get("pid")):
        return False
    beat_at = daemon.get("heartbeat")
    interval_s = float(daemon.get("interval_ms") or 300_000) / 1000
    return isinstance(beat_at, (int, float)) and now - beat_at < 2 * max(interval_s,
                                                                        HEARTBEAT_S)


def beat(config: Config, clock: Callable[[], float] = time.time, *, running: bool = True) -> None:
    SyncStateStore(config.home).update(daemon={
        "pid": os.getpid() if running else None, "heartbeat": clock(),
        "interval_ms": config.interval_ms})


def run_daemon(config: Config, embedder: Embedder, stop: threading.Event,
               clock: Callable[[], float] = time.time,
               progress: Reporter = log_commits) -> None:
    """Cycles until ``stop``. Nothing a cycle raises ends the loop: the failure is logged
    and recorded, and the next try waits longer (the interval, doubling per consecutive
    failure, at most ``MAX_BACKOFF_S``)."""
    log.info("Indexer daemon started (pid %s)", os.getpid())
    failures = 0
    while not stop.is_set():
        _beat_safely(config, clock)
        try:
            try:
                report = run_locked_cycle(config, embedder, should_stop=stop.is_set,
                                          progress=progress)
            finally:
                progress.finish()
            failures = 0
            log.info("Cycle done: %d listed, %d fetched, %d added, %d updated, %d deleted, "
                     "%d skipped, %d chunks embedded in %.1fs", report.listed, report.fetched,
                     report.added, report.updated, report.deleted, report.skipped,
                     report.chunks_embedded, report.seconds)
        except IndexBusyError as exc:
            log.info("%s", exc)
        except PlaudIndexError as exc:  # recorded in the sync state by the cycle
            failures += 1
            log.error("Index cycle failed: %s", exc)
        except Exception:  # noqa: BLE001 - a bug must not stop the daemon; launchd would
            failures += 1  # only restart it into the same crash
            log.exception("Index cycle failed unexpectedly; trying again later")
        wait = config.interval_ms / 1000 * (2 ** min(max(failures - 1, 0), 6))
        deadline = clock() + min(wait, max(MAX_BACKOFF_S, config.interval_ms / 1000))
        while not stop.is_set() and clock() < deadline:
            stop.wait(min(HEARTBEAT_S, max(deadline - clock(), 0.0)))
            if not stop.is_set():
                _beat_safely(config, clock)
    _beat_safely(config, clock, running=False)
    log.info("Indexer stopped")


def _beat_safely(config: Config, clock: Callable[[], float], *, running: bool = True) -> None:
    try:
        beat(config, clock, running=running)
    except (OSError, PlaudIndexError) as exc:  # a full disk must not stop the loop
        log.warning("Cannot write the heartbeat: %s", exc)
