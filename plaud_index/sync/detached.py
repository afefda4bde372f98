"""A sync in a process of its own: ``indexer --once`` started by a server or the CLI, which
belongs to nobody's session and outlives it.

A question on an empty or partial index answers from what is committed at once, and the
first sync goes on after the session (or the command) ends: a client that starts a server
per call still gets a whole first sync. A server that finds the index older than its
interval and nobody indexing starts the same process for one incremental cycle (the index
stays fresh without the agent).

Exactly one, whoever asks first: the starter takes the indexer lock *before* it starts the
child and hands its descriptor down (``IndexerLock.hand_over``), so two servers started at
the same instant cannot both start one, ``status`` names the child from its first
instant, and a sync that finished a moment ago is not started again (whether it is still
needed is asked again under the lock). It logs to ``Home.sync_log``, appended and
rotated, never through a link; a log that cannot be used costs the log (the child writes
to the starter's stderr instead, and ``status`` says so), never the sync.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO

from ..config import Config
from ..fsio import log_problem, open_own_log
from ..home import Home
from .lock import IndexerLock, lock_holder
from .state import SyncStateStore

log = logging.getLogger(__name__)

LOG_ROTATE_BYTES = 1 << 20  # about a thousand runs' lines
FULL_DISK_BYTES = 64 * 1024  # free space under which a silent failure is the full disk
ROOM_BYTES = 4 * FULL_DISK_BYTES  # free again: a sync the full disk stopped starts at once


def sync_log_problem(home: Path) -> str | None:
    """Why the background sync cannot write its log (``None``: it can)."""
    why = log_problem(Home(home).sync_log)
    return None if why is None else (
        f"{Home(home).sync_log} cannot be used ({why}): the background sync logs to the stderr of "
        "the server or command that starts it instead; move it away")


class DetachedSync:
    RETRY_AFTER_S = 60.0  # a sync that failed is not restarted by every question

    def __init__(self, started_by: str = "cli",
                 popen: Callable[..., subprocess.Popen[bytes]] = subprocess.Popen,
                 clock: Callable[[], float] = time.time) -> None:
        self.started_by = started_by
        self._popen = popen
        self._clock = clock
        self.process: subprocess.Popen[bytes] | None = None
        self._ended_at: float | None = None  # when a failed child was first seen ended
        self._disk_was_full = False  # it failed on a full disk (what freeing it cures)
        self._log_from: int | None = None  # where this run's lines start in the log

    def start(self, config: Config, needed: Callable[[], bool] = lambda: True,
              kind: str = "first sync") -> bool:
        """Start one (``kind``: "first sync" or "sync", as ``status`` names it) unless one
        runs (ours, or anyone holding the indexer lock), one failed a moment ago, or
        ``needed()`` (asked again under the lock) says it no longer is. A full or
        read-only disk that refuses the lock is a ``StorageError``."""
        if self._running() or self._failed_recently(config):
            return False
        lock = IndexerLock(config.lock_path, role=f"{kind} ({self.started_by})",
                           mirror=str(config.mirror) if config.mirror else None)
        if not lock.try_acquire():
            return False
        try:
            if not needed():  # e.g. the sync that just ended finished the job
                lock.release()
                return False
            self.process = self._spawn(config, lock)
        except BaseException:
            lock.release()
            raise
        lock.hand_over(self.process.pid)
        self._ended_at, self._disk_was_full = None, False
        log.debug("Started a %s in a process of its own (pid %s, log %s)", kind,
                  self.process.pid, Home(config.home).sync_log)
        return True

    def _spawn(self, config: Config, lock: IndexerLock) -> subprocess.Popen[bytes]:
        assert lock.fd is not None
        config.home.mkdir(parents=True, exist_ok=True, mode=0o700)
        log_file = self._open_log(config)
        argv = [sys.executable, "-m", "plaud_index", "indexer", "--once",
                "--role", lock.role, "--lock-fd", str(lock.fd)]
        try:
            return self._popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=log_file, start_new_session=True, pass_fds=(lock.fd,))
        finally:
            if log_file is not None:
                log_file.close()

    def _open_log(self, config: Config) -> IO[bytes] | None:
        """This run's log, opened to append with a header line; ``None`` (the child writes
        to our stderr) when it cannot be used."""
        self._log_from = None
        try:
            log_file, self._log_from = open_own_log(Home(config.home).sync_log, LOG_ROTATE_BYTES)
        except OSError as exc:
            log.warning("%s", sync_log_problem(config.home) or
                        f"{Home(config.home).sync_log} cannot be used ({exc.strerror or exc}): the "
                        "background sync logs here instead")
            return None
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self._clock()))
        with contextlib.suppress(OSError):  # a full disk: the sync may still free it
            log_file.write(f"--- {stamp} a sync started by the {self.started_by} ---\n"
                           .encode())
            log_file.flush()
        return log_file

    def _running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def _failed_recently(self, config: Config) -> bool:
        """A child of ours that failed, or a failure on record, less than a minute ago
        (Plaud down, a full disk): not one attempt per question. A child that finished or
        was killed may start again at once, and so may one the full disk stopped once
        there is room again (the person freed space to get answers)."""
        now = self._clock()
        code = self.process.poll() if self.process is not None else None
        if code is not None and code > 0:
            if self._ended_at is None:
                self._ended_at = now
                self._disk_was_full = _free(config) < FULL_DISK_BYTES
            if self._disk_was_full and _free(config) >= ROOM_BYTES:
                return False
            if now - self._ended_at < self.RETRY_AFTER_S:
                return True
        state = SyncStateStore(config.home).read()
        if state.last_error_kind == "StorageError" and _free(config) >= ROOM_BYTES:
            return False
        return bool(state.last_error and state.last_attempt and
                    now - state.last_attempt < self.RETRY_AFTER_S)

    def failure(self, config: Config) -> str | None:
        """The message the child ended on, when it exited with an error."""
        if self.process is None or self.process.poll() in (None, 0):
            return None
        said = [line.removeprefix("plaud-index-mcp: ") for line in self._this_runs_lines(config)
                if line.startswith("plaud-index-mcp: ")]
        if said:
            return said[-1]
        # nothing in its log: on a full disk not even the message that says so fits
        with contextlib.suppress(OSError):
            if shutil.disk_usage(config.home).free < FULL_DISK_BYTES:
                return (f"the disk holding {config.home} is full: free some space; the next "
                        "question starts the sync again")
        return (f"it exited with status {self.process.returncode}; run `plaud-index-mcp "
                "indexer --once` to see why")

    def _this_runs_lines(self, config: Config) -> list[str]:
        if self._log_from is None:
            return []
        try:
            fd = os.open(Home(config.home).sync_log, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            return []
        with os.fdopen(fd, "rb") as fh:
            fh.seek(self._log_from)
            return fh.read(1 << 20).decode(errors="replace").splitlines()

    def running(self, config: Config) -> bool:
        """Still syncing: the child not yet exited, or someone holding the lock."""
        return self._running() or lock_holder(config.lock_path) is not None


def _free(config: Config) -> int:
    """Free bytes on the disk of the home (a large number when that cannot be told)."""
    try:
        return shutil.disk_usage(config.home if config.home.exists() else
                                 config.home.parent).free
    except OSError:
        return 1 << 40
