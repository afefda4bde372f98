"""The keeper: the one place that decides to sync or change the index for a reader.

The reading side (``answers``) never syncs, takes the lock or writes the index. It asks the
keeper it was handed (by the server and the CLI), which:
- starts the first sync of an empty or partial index when nobody indexes (``sync.detached``
  for the server and the CLI: in a process of its own, so the answer comes now from what
  is committed; without one, in the caller, for an empty index);
- keeps a stale index fresh for a server without the agent (one sync, when no daemon runs
  and nobody indexes);
- converts an index an older version wrote, when nobody indexes (seconds, no re-embedding);
- tells the reader what it may know of the sync: whether someone indexes, who holds the
  lock, and why a sync it started failed.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from ..config import Config
from ..embedding.embedder import Embedder
from ..errors import PlaudIndexError, SourceError
from ..index.manifest import ModelInfo
from ..index.writer import open_writer
from ..sources import make_source
from .cycles import make_indexer
from .daemon import daemon_running
from .detached import DetachedSync
from .lock import IndexerLock, lock_holder
from .progress import SyncProgress, log_commits
from .state import SyncState

log = logging.getLogger(__name__)


class Keeper:
    """``sync``: how an incomplete or stale index gets synced (a process of its own);
    ``None`` syncs an empty index in the caller, with ``progress`` reporting."""

    def __init__(self, config: Config, sync: DetachedSync | None = None,
                 progress: Callable[[SyncProgress], object] = log_commits,
                 clock: Callable[[], float] = time.time) -> None:
        self.config = config
        self.sync = sync
        self.progress = progress
        self.clock = clock

    # -- what a reader may know ---------------------------------------------------------
    def holder(self) -> dict[str, Any] | None:
        """Who holds the indexer lock (``None``: nobody indexes)."""
        return lock_holder(self.config.lock_path)

    def indexing(self) -> bool:
        """A sync runs: one this keeper started, or anyone holding the lock."""
        return (self.sync is not None and self.sync.running(self.config)) or \
            self.holder() is not None

    def failure(self) -> str | None:
        """Why the sync this keeper started last ended in failure, in its own words."""
        return self.sync.failure(self.config) if self.sync is not None else None

    def waits_for_first_commit(self) -> bool:
        """A first sync of ours runs in a process of its own: a reader may wait for it."""
        return self.sync is not None and (self.sync.process is not None or
                                          self.sync.running(self.config))

    # -- what it decides -------------------------------------------------------------------
    def start_first_sync(self, wait: bool, needed: Callable[[], bool],
                         embedder: Callable[[], Embedder]) -> None:
        """The first sync of an empty (``wait``) or partial index, unless one runs; a
        ``SourceError`` (signed out) or a ``StorageError`` says why none can."""
        if self.sync is None and not wait:
            return
        source = make_source(self.config)  # fails fast when signed out
        if self.sync is not None:
            self.sync.start(self.config, needed)
            return
        lock = IndexerLock(self.config.lock_path)
        if not lock.try_acquire(role="search-fallback"):
            return
        try:
            log.info("The index is empty and no indexer is running: indexing now")
            make_indexer(self.config, embedder(), source, progress=self.progress).run_cycle()
        except SourceError as exc:
            log.warning("Fallback index cycle impossible: %s", exc)
        finally:
            lock.release()

    def keep_fresh(self, state: SyncState, stale: Callable[[SyncState], bool],
                   current: Callable[[], SyncState]) -> bool:
        """Without the agent: a server starts one incremental sync when the index is
        ``stale``, no daemon runs and nobody indexes. True when it started one."""
        if self.sync is None or self.sync.started_by != "server":
            return False
        if not stale(state) or daemon_running(state, self.clock()) or \
                self.holder() is not None:
            return False
        try:
            make_source(self.config)  # signed out: nothing to sync, and status says so
            return self.sync.start(self.config, lambda: stale(current()), kind="sync")
        except PlaudIndexError as exc:
            log.info("The index is older than its interval, but no sync can start: %s", exc)
            return False

    def upgrade(self, model: ModelInfo) -> bool:
        """Convert an index an older version wrote, now, if nobody indexes (otherwise the
        indexer does it on its next cycle). True when it was converted."""
        lock = IndexerLock(self.config.lock_path)
        if not lock.try_acquire(role="search-upgrade"):
            return False
        try:
            open_writer(self.config.index_dir, model)
        finally:
            lock.release()
        return True
