"""The indexer lock: one ``fcntl.flock`` on ``<home>/indexer.lock``.

Whoever holds it may write the index (the daemon's cycle, ``indexer --once``,
or the search server's one-off fallback cycle). The holder's pid and start
time are written into the file so ``status`` can say who is indexing. The
kernel drops the lock when the process dies, so a ``kill -9`` never leaves a
stale lock behind.
"""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path
from types import TracebackType

from ..errors import IndexBusyError, PlaudIndexError
from ..fsio import open_lock_file, storage_error, try_flock, unflock

log = logging.getLogger(__name__)


class IndexerLock:
    def __init__(self, path: Path, role: str = "indexer", mirror: str | None = None) -> None:
        self.path = path
        self.role = role  # who holds it, as ``status`` shows
        self.mirror = mirror  # the mirror folder its cycle writes (``mirror --once`` asks)
        self._fd: int | None = None

    def try_acquire(self, role: str | None = None) -> bool:
        try:
            fd = open_lock_file(self.path)
        except OSError as exc:  # a read-only or full disk: say so, not a traceback
            raise storage_error(exc, self.path.parent) from exc
        if not try_flock(fd):
            os.close(fd)
            return False
        self.role = role or self.role
        try:
            self._write_record(fd, os.getpid(), self.role)
        except PlaudIndexError:
            unflock(fd)
            os.close(fd)
            raise
        self._fd = fd
        return True

    @property
    def fd(self) -> int | None:
        return self._fd

    def hand_over(self, pid: int) -> None:
        """The lock now belongs to the child ``pid`` that inherited our descriptor: the
        record names it, and our copy closes without unlocking (a ``flock`` lives as long
        as any descriptor of its open file, so the child holds it until it exits)."""
        if self._fd is None:
            return
        self._write_record(self._fd, pid, self.role)
        os.close(self._fd)
        self._fd = None

    def adopt(self, fd: int) -> bool:
        """Take over the lock a parent acquired and passed down as ``fd`` (see
        ``hand_over``); ``False`` when ``fd`` is not this lock's file held by us."""
        try:
            mine, there = os.fstat(fd), os.stat(self.path, follow_symlinks=False)
        except OSError:
            return False
        if (mine.st_dev, mine.st_ino) != (there.st_dev, there.st_ino) or not try_flock(fd):
            return False  # (flock on our own held description succeeds at once)
        self._fd = fd
        self._write_record(fd, os.getpid(), self.role)
        return True

    def _write_record(self, fd: int, pid: int, role: str) -> None:
        record: dict[str, object] = {"pid": pid, "role": role, "since": int(time.time())}
        if self.mirror:
            record["mirror"] = self.mirror
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(record).encode(), 0)
        except OSError as exc:  # a full disk refuses even these few bytes: say so
            raise storage_error(exc, self.path.parent) from exc

    def release(self) -> None:
        if self._fd is not None:
            unflock(self._fd)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> IndexerLock:
        if not self.try_acquire():
            raise IndexBusyError
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.release()


def lock_holder(path: Path) -> dict[str, object] | None:
    """Who holds the lock (pid, role, since), or ``None`` if nobody does."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)  # a FIFO: no hang
    except FileNotFoundError:
        return None
    except OSError as exc:  # unreadable: nobody we can name holds it
        log.warning("Cannot read the indexer lock %s: %s", path, exc)
        return None
    try:
        if not try_flock(fd, shared=True):
            raw = os.read(fd, 4096)
            try:
                info = json.loads(raw)
            except ValueError:
                info = {}
            return info if isinstance(info, dict) else {}
        unflock(fd)
        return None
    finally:
        os.close(fd)
