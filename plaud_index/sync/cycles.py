"""Running index cycles: one under the indexer lock, or the server's first sync on a thread.

Shared by the CLI (``indexer --once``, ``search`` on an empty index), the
daemon and the search server, so each runs the same cycle the same way.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from ..config import Config
from ..embedder import Embedder
from ..errors import PlaudIndexError
from ..mirror import open_mirror
from ..models import SyncReport
from ..plaud import RecordingSource
from ..sources import make_source
from .indexer import Indexer
from .lock import IndexerLock
from .progress import SyncProgress, log_commits

log = logging.getLogger(__name__)


def make_indexer(config: Config, embedder: Embedder, source: RecordingSource | None = None,
                 should_stop: Callable[[], bool] = lambda: False,
                 progress: Callable[[SyncProgress], object] = log_commits) -> Indexer:
    return Indexer(source or make_source(config), embedder, config.home,
                   interval_s=config.interval_ms / 1000, should_stop=should_stop,
                   progress=progress, mirror=open_mirror(config))


def run_locked_cycle(config: Config, embedder: Embedder,
                     source: RecordingSource | None = None,
                     should_stop: Callable[[], bool] = lambda: False,
                     progress: Callable[[SyncProgress], object] = log_commits) -> SyncReport:
    """One cycle under the indexer lock; ``IndexBusyError`` if someone else holds it."""
    with IndexerLock(config.lock_path):
        return make_indexer(config, embedder, source, should_stop, progress).run_cycle()


class BackgroundSync:
    """The search server's first sync: one cycle on a worker thread that holds the indexer
    lock, so a tool call answers at once with the progress instead of blocking until the
    client gives up. ``stop()`` asks it to finish its current commit (the session ended);
    whatever is committed stays, and the next session resumes from there."""

    RETRY_AFTER_S = 60.0  # a sync that ended (failed, say) is not restarted by every call

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._guard = threading.Lock()
        self._clock = clock
        self._started: float | None = None

    def start(self, config: Config, embedder: Callable[[], Embedder],
              source: RecordingSource) -> bool:
        """Start unless one is running here or another process holds the lock.
        ``embedder`` is called on the worker thread (the model may still be loading)."""
        with self._guard:
            if self._thread is not None and self._thread.is_alive():
                return False
            if self._started is not None and \
                    self._clock() - self._started < self.RETRY_AFTER_S:
                return False  # Plaud down or rate-limiting: not one attempt per question
            lock = IndexerLock(config.lock_path)
            if not lock.try_acquire(role="search-first-sync"):
                return False
            self._thread = threading.Thread(target=self._run,
                                            args=(config, embedder, source, lock),
                                            name="first-sync", daemon=True)
            self._started = self._clock()
            self._thread.start()
            return True

    def _run(self, config: Config, embedder: Callable[[], Embedder],
             source: RecordingSource, lock: IndexerLock) -> None:
        try:
            log.info("The index is not complete and no indexer is running: syncing in the "
                     "background")
            make_indexer(config, embedder(), source, should_stop=self._stop.is_set
                         ).run_cycle()
        except PlaudIndexError as exc:  # recorded in the sync state; answers say it
            log.warning("The background sync stopped: %s", exc)
        except Exception:  # noqa: BLE001 - a bug must not take the server down
            log.exception("The background sync failed")
        finally:
            lock.release()

    def stop(self, timeout_s: float) -> None:
        self._stop.set()
        thread = self._thread
        if thread is not None:
            thread.join(timeout_s)
