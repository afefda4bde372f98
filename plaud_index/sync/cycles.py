"""Running index cycles: one under the indexer lock, and the mirror's own pass.

Shared by the CLI (``indexer --once``, ``search`` on an empty index), the
daemon and the search server, so each runs the same cycle the same way.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from ..config import Config
from ..embedding.embedder import Embedder
from ..errors import (
    ConfigError,
    IndexBusyError,
    PlaudAuthError,
    PlaudIndexError,
    PlaudTransientError,
)
from ..folders.source import PREFIX as FOLDER_PREFIX
from ..mirror import open_mirror
from ..plaud import RecordingSource
from ..plaud import make_source as make_plaud_source
from ..redact import redact
from ..reports import MirrorReport, SyncReport
from ..sources import make_source
from .indexer import Indexer
from .lock import IndexerLock, lock_holder
from .policy import decide_deletions, mirror_deletions
from .progress import SyncProgress, log_commits
from .state import SyncStateStore

log = logging.getLogger(__name__)


def make_indexer(config: Config, embedder: Embedder, source: RecordingSource | None = None,
                 should_stop: Callable[[], bool] = lambda: False,
                 progress: Callable[[SyncProgress], object] = log_commits) -> Indexer:
    return Indexer(source or make_source(config), embedder, config.home,
                   interval_s=config.interval_ms / 1000, should_stop=should_stop,
                   progress=progress, mirror=open_mirror(config))


WAIT_S = 2.0  # between looks at the lock while ``mirror --once`` waits for a cycle


def run_mirror_pass(config: Config, source: RecordingSource | None = None,
                    progress: Callable[[SyncProgress], object] = log_commits,
                    clock: Callable[[], float] = time.time,
                    wait: Callable[[float], object] | None = time.sleep) -> MirrorReport:
    """``mirror --once``: every Plaud recording fetched and its file written or refreshed
    now, and deleted ones moved to the trash as a cycle would (under the indexer lock, so
    no cycle writes the mirror meanwhile). The index is not touched. A running cycle that
    writes this mirror makes it unnecessary (said, and nothing done); one that does not
    (a first sync started by a client without the mirror setting) is waited for
    (``wait=None``: said instead)."""
    mirror = open_mirror(config)
    if mirror is None:
        raise ConfigError("No mirror folder is set: add \"mirror\": \"~/Notes/Plaud\" to "
                          f"{config.config_path}, or set PLAUD_INDEX_MIRROR")
    lock = IndexerLock(config.lock_path, role="mirror")
    while not lock.try_acquire():
        holder = lock_holder(config.lock_path) or {}
        if holder.get("mirror") == str(mirror.folder):
            raise IndexBusyError(f"The running cycle (pid {holder.get('pid')}, "
                                 f"{holder.get('role')}) writes this mirror too: its files "
                                 "come with it (`status` shows how far it is)")
        if not wait:  # it does not write the mirror: after it, this does
            raise IndexBusyError(f"A cycle that does not write the mirror is running (pid "
                                 f"{holder.get('pid')}, {holder.get('role')}): run "
                                 "`plaud-index-mcp mirror --once` again when it ends")
        log.info("Waiting for the running cycle (pid %s, %s) to end: it does not write the "
                 "mirror, so this writes it after", holder.get("pid"), holder.get("role"))
        wait(WAIT_S)
    started, errors, ids = clock(), [], []
    try:
        source = source or make_plaud_source(config)
        ids = [fid for fid in source.list_recordings() if not fid.startswith(FOLDER_PREFIX)]
        fetch_s = 0.0
        for done, file_id in enumerate(ids, 1):
            fetching = clock()
            try:
                mirror.put(source.get_recording(file_id))
            except (PlaudAuthError, PlaudTransientError):
                raise
            except PlaudIndexError as exc:  # this recording only
                errors.append(f"{file_id}: {exc}")
            fetch_s += clock() - fetching
            progress(SyncProgress(done, len(ids), started, committed=done - done % 25,
                                  updated=clock(), fetched=done, fetch_s=fetch_s))
        decision = decide_deletions(ids, mirror.ids(), None)
        mirror.remove(mirror_deletions(decision, ids, mirror.ids()))
    finally:
        mirror.save()
        lock.release()
    counts = mirror.counts
    return MirrorReport(str(mirror.folder), len(ids), counts["written"], counts["unchanged"],
                        counts["renamed"], counts["kept_edits"], counts["trashed"],
                        counts["failed"], len(errors), round(clock() - started, 3),
                        tuple(errors))


def run_locked_cycle(config: Config, embedder: Embedder,
                     source: RecordingSource | None = None,
                     should_stop: Callable[[], bool] = lambda: False,
                     progress: Callable[[SyncProgress], object] = log_commits,
                     role: str = "indexer", lock_fd: int | None = None) -> SyncReport:
    """One cycle under the indexer lock; ``IndexBusyError`` if someone else holds it. A
    lock that cannot be taken at all (a folder in its place, no permission) fails the
    cycle like anything else: on record, so ``status`` says it. ``role`` is who holds the
    lock, as ``status`` and ``doctor`` name it; ``lock_fd`` is the lock a parent took for
    this process and handed down (``sync.detached``)."""
    lock = IndexerLock(config.lock_path, role=role,
                       mirror=str(config.mirror) if config.mirror else None)
    try:
        acquired = lock_fd is not None and lock.adopt(lock_fd) or lock.try_acquire()
    except PlaudIndexError as exc:
        record_failure(config, exc)
        raise
    if not acquired:
        raise IndexBusyError
    try:
        indexer = make_indexer(config, embedder, source, should_stop, progress)
    except PlaudIndexError as exc:  # no source to sync (signed out, an unreadable corpus)
        record_failure(config, exc)
        lock.release()
        raise
    try:
        return indexer.run_cycle()
    finally:
        indexer.settle()
        lock.release()


def record_failure(config: Config, exc: PlaudIndexError) -> None:
    """A cycle that failed before it could start, in the sync state (or beside it)."""
    try:
        SyncStateStore(config.home).record_failure(
            last_attempt=time.time(), last_error=redact(str(exc))[:2000],
            last_error_kind=type(exc).__name__)
    except OSError as again:
        log.error("Cannot record the failure anywhere in %s: %s", config.home,
                  again.strerror or again)
