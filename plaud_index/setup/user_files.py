"""Reading and writing a file the user owns (a client's config): never a hang, never a
write anywhere but the file itself, never a silent change of what it is.

- A link (``~/.cursor/mcp.json -> ~/dotfiles/cursor/mcp.json``) is written through to its
  target, so the user's real file changes and the link stays; a link to nothing (or
  round in a loop) is refused with the target's name.
- Only a regular file is read: a FIFO is opened without blocking and refused, as is a
  folder or a device.
- A read-only file (no write bit for its owner) is refused, whoever we run as: the user
  made it so.
- The old bytes go to a backup beside the file first; the new text replaces the file
  atomically with its mode kept; a file that changed while we edited it is not
  overwritten. Taking our entry out keeps no backup (the file then holds everything of
  the user's), and a write that gives the file back bytes a backup of ours holds (an
  uninstall after an install) removes that backup: install then uninstall leaves each
  file as it was and nothing beside it.
Every refusal is a ``ConfigError`` naming the file and what to do.
"""

from __future__ import annotations

import contextlib
import errno
import glob
import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path

from ..errors import ConfigError

MAX_CONFIG_BYTES = 32 * 1024 * 1024  # ~/.claude.json grows with every project it saw


@dataclass(frozen=True)
class UserFile:
    path: Path  # as the client names it
    target: Path  # where its bytes are (the path itself, or what its links point at)
    text: str  # "" when it does not exist yet
    exists: bool
    mode: int  # permission bits (0o600 for a file we create)
    stamp: tuple[int, int]  # (mtime_ns, size) when read: changed since means hands off


def _target(path: Path) -> Path:
    if not path.is_symlink():
        return path
    target = Path(os.path.realpath(path))
    if not target.exists():
        raise ConfigError(f"{path} is a link to {target}, which does not exist: fix or "
                          "remove the link; nothing was changed")
    return target


def read_user_file(path: Path) -> UserFile:
    """The file's text and what it is; absent is an empty file to be."""
    target = _target(path)
    try:
        fd = os.open(target, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return UserFile(path, target, "", False, 0o600, (0, 0))
    except OSError as exc:
        raise _refusal(path, target, exc) from exc
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = "a folder" if stat.S_ISDIR(info.st_mode) else \
                "a FIFO" if stat.S_ISFIFO(info.st_mode) else "not a regular file"
            raise ConfigError(f"{_named(path, target)} is {kind}, not a config file: move it "
                              "away; nothing was changed")
        if info.st_size > MAX_CONFIG_BYTES:
            raise ConfigError(f"{_named(path, target)} is {info.st_size} bytes, larger than a "
                              "config file can be; nothing was changed")
        data = b""
        while block := os.read(fd, 1 << 20):
            data += block
    finally:
        os.close(fd)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{_named(path, target)} is not UTF-8 text ({exc.reason} at byte "
                          f"{exc.start}); nothing was changed") from exc
    return UserFile(path, target, text, True, stat.S_IMODE(info.st_mode),
                    (info.st_mtime_ns, info.st_size))


def _named(path: Path, target: Path) -> str:
    return str(path) if path == target else f"{path} (a link to {target})"


def _refusal(path: Path, target: Path, exc: OSError) -> ConfigError:
    where = _named(path, target)
    if exc.errno in (errno.EACCES, errno.EPERM):
        return ConfigError(f"{where} cannot be read or written ({exc.strerror}): check its "
                           "permissions and its folder's; nothing was changed")
    if exc.errno in (errno.EROFS,):
        return ConfigError(f"{where} is on a read-only file system; nothing was changed")
    if exc.errno == errno.ELOOP:
        return ConfigError(f"{where} is a link that loops; fix it; nothing was changed")
    return ConfigError(f"{where} cannot be written ({exc.strerror or exc}); nothing was "
                       "changed")


def write_user_file(file: UserFile, text: str, backup_stamp: str,
                    keep_old: bool = True) -> Path | None:
    """Replace ``file``'s bytes with ``text``; returns the backup of the old bytes (``None``
    for a new file, or when not ``keep_old``: taking our entry out leaves nothing of the
    user's that the file does not hold). Refuses a read-only file and one changed since it
    was read."""
    target, where = file.target, _named(file.path, file.target)
    if file.exists and not file.mode & stat.S_IWUSR:
        raise ConfigError(f"{where} is read-only (mode {file.mode:04o}): you made it so; "
                          f"make it writable (chmod u+w {target}) to let us add our entry")
    backup = None
    try:
        if file.exists:
            _unchanged(file)
            backup = _backup(file, backup_stamp) if keep_old else None
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
        _replace(target, text.encode("utf-8"), file.mode)
        _unchanged(file, expected=text)
        backup = _drop_redundant(target, text.encode("utf-8"), backup)
    except ConfigError:
        raise
    except OSError as exc:
        raise _refusal(file.path, target, exc) from exc
    return backup


def _unchanged(file: UserFile, expected: str | None = None) -> None:
    """The file still holds what we read (or, after the write, what we wrote)."""
    now = read_user_file(file.path)
    if expected is None and (now.stamp != file.stamp or now.text != file.text):
        raise ConfigError(f"{_named(file.path, file.target)} changed while we edited it (the "
                          "client may have saved it): run the command again")
    if expected is not None and now.text != expected:
        raise ConfigError(f"{_named(file.path, file.target)} does not hold what we wrote: "
                          "another program writes it too; check it by hand")


def _backup(file: UserFile, stamp: str) -> Path:
    for attempt in range(100):
        suffix = f".bak-{stamp}" + (f"-{attempt}" if attempt else "")
        backup = file.target.with_name(file.target.name + suffix)
        try:
            fd = os.open(backup, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW,
                         file.mode)
        except FileExistsError:
            continue
        with os.fdopen(fd, "wb") as fh:
            fh.write(file.text.encode("utf-8"))
            fh.flush()
            os.fsync(fh.fileno())
        return backup
    raise ConfigError(f"Cannot make a backup beside {file.target}: too many backups there")


def _drop_redundant(target: Path, data: bytes, fresh: Path | None) -> Path | None:
    """Backups of ours beside ``target`` that hold exactly ``data`` (what it holds now) are
    removed, and then ``fresh`` too; returns the backup that is left of this write."""
    same = [p for p in target.parent.glob(f"{glob.escape(target.name)}.bak-*")
            if p != fresh and _holds(p, data)]
    for path in same:
        path.unlink(missing_ok=True)
    if same and fresh is not None:
        fresh.unlink(missing_ok=True)
        return None
    return fresh


def _holds(path: Path, data: bytes) -> bool:
    """A regular file (not through a link) whose bytes are ``data``."""
    try:
        info = path.lstat()
        return stat.S_ISREG(info.st_mode) and info.st_size == len(data) and \
            path.read_bytes() == data
    except OSError:
        return False


def _replace(target: Path, data: bytes, mode: int) -> None:
    tmp = target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fchmod(fh.fileno(), mode)
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    dir_fd = os.open(target.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
