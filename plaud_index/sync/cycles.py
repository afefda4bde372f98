"""Running index cycles: one under the indexer lock, the first sync in a process of its own.

Shared by the CLI (``indexer --once``, ``search`` on an empty index), the
daemon and the search server, so each runs the same cycle the same way.
"""

from __future__ import annotations

import logging
import shutil
import subprocess
import sys
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
from ..fsio import open_private
from ..mirror import open_mirror
from ..models import MirrorReport, SyncReport
from ..plaud import RecordingSource
from ..plaud import make_source as make_plaud_source
from ..redact import redact
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
                     role: str = "indexer") -> SyncReport:
    """One cycle under the indexer lock; ``IndexBusyError`` if someone else holds it. A
    lock that cannot be taken at all (a folder in its place, no permission) fails the
    cycle like anything else: on record, so ``status`` says it. ``role`` is who holds the
    lock, as ``status`` and ``doctor`` name it."""
    lock = IndexerLock(config.lock_path, role=role,
                       mirror=str(config.mirror) if config.mirror else None)
    try:
        acquired = lock.try_acquire()
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


FULL_DISK_BYTES = 64 * 1024  # free space under which a silent failure is the full disk


class DetachedSync:
    """The first sync of the server and the CLI: ``indexer --once`` in a process of its own
    that belongs to nobody's session, so a question on an empty or partial index answers
    from what is committed at once, and the sync goes on after the session (or the command)
    ends: a client that starts a server per call (the Inspector CLI, scripts) still gets a
    whole first sync. It holds the indexer lock (role ``first sync (…)``: ``status`` and
    ``doctor`` name it), logs to ``LOG`` in the home, and stops on SIGTERM after committing
    what it embedded (``kill <pid>``)."""

    LOG = "background-sync.log"
    RETRY_AFTER_S = 60.0  # a first sync that failed is not restarted by every question

    def __init__(self, started_by: str = "cli",
                 popen: Callable[..., subprocess.Popen[bytes]] = subprocess.Popen,
                 clock: Callable[[], float] = time.time) -> None:
        self.started_by = started_by
        self._popen = popen
        self._clock = clock
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, config: Config, embedder: Callable[[], Embedder],
              source: RecordingSource) -> bool:
        """Start unless one runs (started here, or anyone holding the indexer lock), or a
        sync failed a moment ago (``embedder`` and ``source`` are the child's own to make)."""
        ended = self.process.poll() if self.process is not None else None
        if self.process is not None and (ended is None or ended > 0) or \
                lock_holder(config.lock_path) is not None:
            # running, or failed (``failure`` says why; a full disk may have kept it from
            # the record): a sync that finished or was killed may start again
            return False
        state = SyncStateStore(config.home).read()
        if state.last_error and state.last_attempt and \
                self._clock() - state.last_attempt < self.RETRY_AFTER_S:
            return False  # Plaud down or rate-limiting: not one attempt per question
        config.home.mkdir(parents=True, exist_ok=True, mode=0o700)
        with open_private(config.home / self.LOG) as log_file:
            self.process = self._popen(
                [sys.executable, "-m", "plaud_index", "indexer", "--once",
                 "--first-sync-for", self.started_by],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log_file,
                start_new_session=True)
        log.debug("Started the first sync in a process of its own (pid %s, log %s)",
                 self.process.pid, config.home / self.LOG)
        return True

    def failure(self, config: Config) -> str | None:
        """The message the child ended on, when it exited with an error."""
        if self.process is None or self.process.poll() in (None, 0):
            return None
        try:
            lines = (config.home / self.LOG).read_text(errors="replace").splitlines()
        except OSError:
            lines = []
        said = [line.removeprefix("plaud-index-mcp: ") for line in lines
                if line.startswith("plaud-index-mcp: ")]
        if said:
            return said[-1]
        # nothing in its log: on a full disk not even the message that says so fits
        if shutil.disk_usage(config.home).free < FULL_DISK_BYTES:
            return (f"the disk holding {config.home} is full: free some space, then run "
                    "`plaud-index-mcp indexer --once`")
        return (f"it exited with status {self.process.returncode}; run `plaud-index-mcp "
                "indexer --once` to see why")

    def running(self, config: Config) -> bool:
        """Still syncing: the child not yet exited, or someone holding the lock."""
        alive = self.process is not None and self.process.poll() is None
        return alive or lock_holder(config.lock_path) is not None
