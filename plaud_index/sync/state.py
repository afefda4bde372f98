"""The one owner of ``<home>/sync-state.json``: its shape, its version, its writes.

The file is what the indexer remembers between cycles (when each recording was
last checked, the list tail, a held deletion) and what ``status`` reports (last
success, last error, progress, the daemon's heartbeat). It is a cache: a damaged
file or a field of the wrong type is logged and read as empty, never a crash.
Writers (the lock holder's cycle, the daemon's heartbeat) update it by
read-merge-write under ``sync-state.lock``, so two updates never lose each other.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from ..errors import StateError
from ..fsio import DISK_FULL, flocked, open_private, read_state_file, write_json_atomic
from ..home import Home

log = logging.getLogger(__name__)

# ``Home.sync_failed``: the last failure, when sync-state.json (or its lock) could not take
# it: a folder in its place, no permission. ``read`` lays it over the state until a cycle
# succeeds, so status never says ok while every cycle fails on the state file itself.
FAILURE_FIELDS = ("last_attempt", "last_error", "last_error_kind")
VERSION = 1
RESERVE_BYTES = 256 * 1024


@dataclass(frozen=True)
class SyncState:
    version: int = VERSION
    last_attempt: float | None = None
    last_success: float | None = None
    last_error: str | None = None
    last_error_kind: str | None = None
    last_report: dict[str, Any] | None = None
    checked: dict[str, float] = field(default_factory=dict)  # file_id -> last fetched
    held_deletion: dict[str, Any] | None = None
    processing: int | None = None  # recordings Plaud has not finished yet
    list_tail: str | None = None  # the previous walk's last id
    progress: dict[str, Any] | None = None  # the running cycle: done, total, ...
    daemon: dict[str, Any] | None = None  # pid, heartbeat, interval_ms
    skipped: dict[str, str] = field(default_factory=dict)  # file_id -> why it is skipped
    versions: dict[str, str] = field(default_factory=dict)  # folder file -> mtime-size read
    # recordings Plaud keeps failing for: id -> since, tries, last, next, error (policy.py)
    failing: dict[str, dict[str, Any]] = field(default_factory=dict)
    empty_notes: dict[str, str] = field(default_factory=dict)  # id -> notes Plaud sent empty

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def complete(self) -> bool:
        """Has a sync ever finished? Not while the first one runs, nor after it failed or
        was killed (its progress is left behind); an index that came without any sync
        state (copied, or built by another tool) counts as complete."""
        return self.last_success is not None or (self.progress is None and
                                                 self.last_attempt is None)


# What each field must be when read back; anything else is dropped with a warning.
_NUMBER = (int, float)
_TYPES: dict[str, tuple[type, ...]] = {
    "last_attempt": _NUMBER, "last_success": _NUMBER, "last_error": (str,),
    "last_error_kind": (str,), "last_report": (dict,), "checked": (dict,),
    "held_deletion": (dict,), "processing": (int,), "list_tail": (str,), "progress": (dict,),
    "daemon": (dict,), "skipped": (dict,), "versions": (dict,), "failing": (dict,),
    "empty_notes": (dict,),
}
_FAILING_NUMBERS = ("since", "tries", "last", "next")


def parse_state(data: object, label: str) -> SyncState:
    if not isinstance(data, dict):
        log.warning("Ignoring %s: not a JSON object", label)
        return SyncState()
    version = data.get("version", VERSION)
    if isinstance(version, int) and not isinstance(version, bool) and version > VERSION:
        raise StateError(f"{label} was written by a newer plaud-index-mcp (version {version}, "
                         f"this one knows {VERSION}): upgrade, or delete the file (it is "
                         "rebuilt on the next sync).")
    values: dict[str, Any] = {}
    for f in fields(SyncState):
        if f.name == "version" or data.get(f.name) is None:
            continue
        value = data[f.name]
        if isinstance(value, bool) or not isinstance(value, _TYPES[f.name]):
            log.warning("Ignoring %s in %s: expected %s, got %s", f.name, label,
                        _TYPES[f.name][0].__name__, type(value).__name__)
            continue
        values[f.name] = value
    checked = values.get("checked", {})
    values["checked"] = {k: float(v) for k, v in checked.items()
                         if isinstance(v, _NUMBER) and not isinstance(v, bool)}
    values["skipped"] = {k: str(v) for k, v in values.get("skipped", {}).items()}
    values["empty_notes"] = {k: str(v) for k, v in values.get("empty_notes", {}).items()}
    values["failing"] = {k: {**v, "error": str(v.get("error", ""))}
                         for k, v in values.get("failing", {}).items()
                         if isinstance(v, dict) and all(
                             isinstance(v.get(n), _NUMBER) and not isinstance(v.get(n), bool)
                             for n in _FAILING_NUMBERS)}
    return SyncState(**values)


def _stat_key(path: Path) -> tuple[int, int, int] | None:
    try:
        info = os.stat(path, follow_symlinks=False)
    except OSError:
        return None
    return info.st_ino, info.st_size, info.st_mtime_ns


class SyncStateStore:
    def __init__(self, home: Path, *, cached: bool = False) -> None:
        """``cached``: a reader's store (the server reads the state several times per
        answer): the file is parsed again only when it was replaced (every write replaces
        it, so its inode, size and time say when)."""
        self.home = home
        self.files = Home(home)  # named once: ``read`` runs several times per answer
        self.path = self.files.sync_state
        self._cached = cached
        self._memo: tuple[object, SyncState] | None = None

    def read(self) -> SyncState:
        if not self._cached:
            return self._read()
        key = _stat_key(self.path), _stat_key(self.files.sync_failed)
        if self._memo is not None and self._memo[0] == key:
            return self._memo[1]
        state = self._read()
        self._memo = (key, state)
        return state

    def _read(self) -> SyncState:
        state = self._read_state()
        failed = self._read_failed()
        if failed and float(failed.get("last_attempt") or 0) >= (state.last_attempt or 0):
            state = replace(state, last_attempt=float(failed["last_attempt"]),
                            last_error=failed["last_error"],
                            last_error_kind=failed["last_error_kind"])
        return state

    def _read_state(self) -> SyncState:
        try:
            text = read_state_file(self.path)
        except FileNotFoundError:
            return SyncState()
        except (OSError, ValueError) as exc:  # unreadable, or not UTF-8
            log.warning("Ignoring %s: %s", self.path, exc)
            return SyncState()
        try:
            data = json.loads(text)
        except ValueError as exc:
            log.warning("Ignoring %s: not JSON (%s)", self.path, exc)
            return SyncState()
        return parse_state(data, str(self.path))

    def _read_failed(self) -> dict[str, Any] | None:
        try:
            data = json.loads(read_state_file(self.files.sync_failed))
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or not isinstance(data.get("last_error"), str) or \
                not isinstance(data.get("last_attempt"), (int, float)):
            return None
        kind = data.get("last_error_kind")
        return {**data, "last_error_kind": kind if isinstance(kind, str) else None}

    def update(self, **changes: Any) -> SyncState:
        """Merge ``changes`` into the file atomically; returns the new state."""
        return self._update(changes, use_reserve=False)

    def record_failure(self, **changes: Any) -> SyncState:
        """``update`` for a failure: on a full disk the reserve is given up for it. Only a
        failure may use it: given to a progress write mid-cycle, the cycle's next segment
        would take the room and the failure that follows could not be recorded. When the
        state file or its lock refuses the write, the failure goes to ``FAILED``."""
        try:
            return self._update(changes, use_reserve=True)
        except OSError as exc:
            if exc.errno in DISK_FULL:  # the reserve is spent: no file can take it either
                raise
            log.error("Cannot record the failure in %s (%s): keeping it in %s", self.path,
                      exc.strerror or exc, self.files.sync_failed.name)
            write_json_atomic(self.files.sync_failed,
                              {k: changes.get(k) for k in FAILURE_FIELDS})
            return self.read()

    def _update(self, changes: dict[str, Any], use_reserve: bool) -> SyncState:
        self.home.mkdir(parents=True, exist_ok=True, mode=0o700)
        with flocked(self.files.sync_state_lock):
            state = replace(self.read(), **changes)
            try:
                write_json_atomic(self.path, state.to_json())
            except OSError as exc:
                if exc.errno != errno.ENOSPC or not use_reserve \
                        or not self._release_reserve():
                    raise
                write_json_atomic(self.path, state.to_json())
        if "last_error" in changes and changes["last_error"] is None:  # a cycle succeeded
            self.files.sync_failed.unlink(missing_ok=True)
        return state

    def keep_reserve(self) -> None:
        """Hold ``RESERVE_BYTES`` of disk for recording a failure when the disk fills up
        (a full disk otherwise refuses even the message that says it is full)."""
        reserve = self.files.disk_reserve
        if reserve.exists():
            return
        try:
            with open_private(reserve) as fh:
                fh.write(b"\0" * RESERVE_BYTES)
        except OSError:
            reserve.unlink(missing_ok=True)

    def _release_reserve(self) -> bool:
        try:
            self.files.disk_reserve.unlink()
        except FileNotFoundError:
            return False
        log.warning("The disk holding %s is full: released the reserve to record it",
                    self.home)
        return True


# Damage a reader met (a search or ``get`` whose index file turned out damaged): readers
# cannot repair it, the next cycle does, so until a cycle succeeds after it ``status``
# names it instead of saying ok.


def note_read_damage(home: Path, message: str, clock: Callable[[], float] = time.time
                     ) -> None:
    try:
        write_json_atomic(Home(home).read_damage, {"at": clock(), "error": message[:2000]})
    except OSError as exc:  # a reader on a read-only or full disk: the error still reaches
        log.warning("Cannot record the damage in %s: %s", home, exc.strerror or exc)


def read_damage(home: Path, since: float | None) -> str | None:
    """The damage a reader met after ``since`` (the last successful cycle), if any."""
    try:
        data = json.loads(read_state_file(Home(home).read_damage))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("error"), str) or \
            not isinstance(data.get("at"), (int, float)):
        return None
    return data["error"] if since is None or data["at"] > since else None
