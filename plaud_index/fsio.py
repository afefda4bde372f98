"""Atomic writes, fsync and file locks: the one place the index, tokens and state write from;
and whether the process a record or a lock names is still alive (``process_alive``).

A file is written beside its destination, fsynced, renamed over it with
``os.replace`` and its directory fsynced, so a reader or a crash sees the old
file or the new one, never a torn one. ``flocked`` is the one ``fcntl.flock``
helper (the indexer lock, refresh serialisation and the sync-state update).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import logging
import os
import resource
import secrets
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from .errors import StorageError

log = logging.getLogger(__name__)

MAX_STATE_BYTES = 64 * 1024 * 1024  # state, manifest and config files: kilobytes to megabytes


def read_state_file(path: Path, limit: int = MAX_STATE_BYTES, follow: bool = False) -> str:
    """The UTF-8 text of a small file we keep (a manifest, the sync state, a config),
    refusing what cannot be one: a FIFO (reading would block forever), a device or a
    symlink to one (``/dev/zero`` reads without end), a folder, a file over ``limit``.
    Symlinks are not followed unless ``follow`` (a user's dotfiles may link config.json):
    then the target must be a regular file. ``FileNotFoundError`` when absent; any other
    refusal an ``OSError`` naming the file; ``UnicodeDecodeError`` for bytes not UTF-8."""
    flags = os.O_RDONLY | os.O_NONBLOCK | (0 if follow else os.O_NOFOLLOW)
    fd = os.open(path, flags)
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise IsADirectoryError(errno.EISDIR, "a folder, not a file", str(path))
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        if info.st_size > limit:
            raise OSError(errno.EFBIG, f"{info.st_size} bytes: larger than such a file can "
                          "be", str(path))
        chunks, size = [], 0
        while size <= limit and (block := os.read(fd, 1 << 20)):
            chunks.append(block)
            size += len(block)
        if size > limit:  # grew while being read
            raise OSError(errno.EFBIG, "larger than such a file can be", str(path))
    finally:
        os.close(fd)
    return b"".join(chunks).decode("utf-8")


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextmanager
def atomic_file(path: Path) -> Iterator[IO[bytes]]:
    """Write ``path`` via a fsynced temp file and ``os.replace``; never a torn file."""
    tmp = path.with_name(f".tmp-{secrets.token_hex(6)}-{path.name}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_json_atomic(path: Path, data: object) -> None:
    with atomic_file(path) as fh:
        fh.write(json.dumps(data, separators=(",", ":")).encode())
    fsync_dir(path.parent)


def open_private(path: Path) -> IO[bytes]:
    """``path`` opened for writing from the start, readable by this user only (0600, also
    when it existed with a looser mode): every file of ours holds the user's data. Never
    through a link, never a FIFO or a folder (an ``OSError`` instead)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK |
                 os.O_CLOEXEC, 0o600)
    if not stat.S_ISREG(os.fstat(fd).st_mode):  # checked before anything is cut short
        os.close(fd)
        raise OSError(errno.EINVAL, "not a regular file", str(path))
    os.ftruncate(fd, 0)
    os.fchmod(fd, 0o600)
    return os.fdopen(fd, "wb")


def own_secret(path: Path, make: Callable[[], bytes], usable: Callable[[bytes], bool]) -> bytes:
    """A secret of the home, made once: created exclusively (0600, never through a link,
    so two processes agree on one), else read back; one that is not ``usable`` (damaged,
    cut short) is replaced by a new one."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        with os.fdopen(os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK), "rb") as fh:
            held = fh.read(4096)
            mode = stat.S_IMODE(os.fstat(fh.fileno()).st_mode)
            if mode & 0o077 and usable(held):  # open to others: this user's only, and said
                os.fchmod(fh.fileno(), 0o600)
                log.warning("%s was open to other users (mode %o); it is this user's only "
                            "now (0600)", path, mode)
        if usable(held):
            return held
        path.unlink()
        return own_secret(path, make, usable)
    secret = make()
    with os.fdopen(fd, "wb") as fh:
        fh.write(secret)
    return secret


def open_own_log(path: Path, rotate_at: int) -> tuple[IO[bytes], int]:
    """A log of ours, opened to append (never truncating an earlier run's lines), 0600: a
    regular file only, never through a link (a link to the user's notes would be written
    into), never blocking (a FIFO). Past ``rotate_at`` bytes it moves to ``<name>.1`` (the
    previous ``.1`` goes) and starts again. Returns the file and the offset this run's
    lines start at; an ``OSError`` says why it cannot be used."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | \
        os.O_CLOEXEC
    for _ in range(2):
        fd = os.open(path, flags, 0o600)
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            os.close(fd)
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        if info.st_size < rotate_at:
            break
        os.close(fd)
        os.replace(path, path.with_name(path.name + ".1"))  # the name, never a link's target
    os.fchmod(fd, 0o600)
    return os.fdopen(fd, "ab"), os.fstat(fd).st_size


def log_problem(path: Path) -> str | None:
    """Why ``open_own_log`` would refuse ``path`` (``None``: it can be used), without
    writing anything."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        writable = os.access(path.parent, os.W_OK) if path.parent.exists() else True
        return None if writable else f"{path.parent} cannot be written"
    except OSError as exc:
        return exc.strerror or str(exc)
    if stat.S_ISLNK(info.st_mode):
        return "it is a link (we never write through one)"
    if not stat.S_ISREG(info.st_mode):
        return "it is a folder" if stat.S_ISDIR(info.st_mode) else "it is not a regular file"
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        return f"it cannot be written ({exc.strerror})"
    os.close(fd)
    return None


def open_lock_file(path: Path) -> int:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    return os.open(path, os.O_RDWR | os.O_CREAT, 0o600)


def try_flock(fd: int, *, shared: bool = False) -> bool:
    """Take the lock without waiting; False if another process holds it."""
    try:
        fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def unflock(fd: int) -> None:
    fcntl.flock(fd, fcntl.LOCK_UN)


@contextmanager
def flocked(path: Path) -> Iterator[int]:
    """Hold an exclusive lock on ``path`` (waiting for it); released on exit or death."""
    fd = open_lock_file(path)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield fd
    finally:
        os.close(fd)


# The errors that mean "no room": a full disk, a file too big for it, a spent quota.
DISK_FULL = (errno.ENOSPC, errno.EFBIG, errno.EDQUOT)


def storage_error(exc: OSError, home: Path) -> StorageError:
    """An ``OSError`` from writing the index or state → a message that says what to do."""
    where = exc.filename2 or exc.filename or home
    if exc.errno in DISK_FULL:
        what = f"the disk holding {home} is full: free some space"
    elif exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        what = f"{where} cannot be written ({exc.strerror}): check that {home} is writable"
    elif exc.errno in (errno.EISDIR, errno.ENOTDIR):
        # something made a folder where a file of ours goes (or the other way round)
        what = f"{where} is in the way ({exc.strerror}): move it away, nothing else is needed"
    else:
        what = f"writing {where} failed ({exc.strerror or exc})"
    return StorageError(f"The index was not updated: {what}. Everything committed before is "
                        "intact; the indexer tries again next cycle.")


OPEN_FILES = 4096


def raise_open_file_limit(wanted: int = OPEN_FILES) -> None:
    """Lift the soft open-file limit towards ``wanted`` (within the hard limit): every
    memory-mapped index file holds a descriptor, and macOS starts processes at 256."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if soft != resource.RLIM_INFINITY and soft < target:
        with contextlib.suppress(ValueError, OSError):  # refused: the default applies
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))


def process_alive(pid: object) -> bool | None:
    """Is ``pid`` (as a record or a lock's holder names it) a live process? ``None`` when
    it is no pid at all."""
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's: alive
        return True
    return True
