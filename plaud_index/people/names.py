"""``<home>/speaker-names.json``: the local names of speakers, one recording at a time.

Written only when the person names a speaker (``plaud_name_speaker``, the CLI's
``name-speaker``), read by every process that answers (``answers``) and by the sync for
the Markdown mirror. Nothing here is ever sent to Plaud. The file is typed and
versioned; a damaged one is reported and read as empty (searches go on as Plaud named
the speakers), and the next naming writes it anew.

Shape: ``{"version": 1, "recordings": {file_id: {"names": {label: name}, "changed_at": t}}}``
(``changed_at``: when that recording's names last changed, naming or undoing, so the
mirror knows which files to write again).
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InvalidQueryError, StateError
from ..fsio import flocked, read_state_file, write_json_atomic
from ..home import Home
from ..index.speakers import MAX_NAME_CHARS, NO_NAMES, SpeakerNames

log = logging.getLogger(__name__)

VERSION = 1
MAX_RECORDINGS = 100_000  # named recordings kept; far past any person's use


@dataclass(frozen=True)
class NamedRecording:
    names: dict[str, str]
    changed_at: float


def clean_name(value: object) -> str:
    """A name as it is kept: one line of text, at most ``MAX_NAME_CHARS``; no ": " (a
    transcript line opens with "Name: ", which a colon inside the name would confuse)."""
    if not isinstance(value, str):
        raise InvalidQueryError(f"name must be text, got {type(value).__name__}")
    name = " ".join(value.split())
    if not name:
        raise InvalidQueryError("name is empty: say who the speaker is")
    if len(name) > MAX_NAME_CHARS:
        raise InvalidQueryError(f"name is {len(name)} characters; the most is "
                                f"{MAX_NAME_CHARS}")
    if ":" in name or any(not c.isprintable() for c in name):
        raise InvalidQueryError("name must be plain text without ':' or control characters")
    return name


def _parse(data: object) -> dict[str, NamedRecording]:
    if not isinstance(data, dict) or not isinstance(data.get("recordings"), dict):
        raise ValueError("not a names file")
    if data.get("version", VERSION) > VERSION:
        raise StateError(f"{Home.speaker_names.name} was written by a newer version "
                         "of plaud-index-mcp; upgrade to read it")
    out = {}
    for file_id, entry in data["recordings"].items():
        names = entry.get("names") if isinstance(entry, dict) else None
        if not isinstance(names, dict):
            continue
        out[str(file_id)] = NamedRecording(
            {str(k): str(v) for k, v in names.items() if isinstance(v, str)},
            float(entry.get("changed_at") or 0))
    return out


class NameStore:
    """The names file of one home. ``names()`` re-reads it only when it changed on disk."""

    def __init__(self, home: Path, clock: Callable[[], float] = time.time) -> None:
        self.path = Home(home).speaker_names
        self.lock_path = Home(home).speaker_names_lock
        self.clock = clock
        self._seen: tuple[int, int, int] | None = None
        self._cached: dict[str, NamedRecording] = {}

    def _stat(self) -> tuple[int, int, int] | None:
        try:
            info = os.stat(self.path, follow_symlinks=False)
        except OSError:
            return None
        return info.st_mtime_ns, info.st_size, info.st_ino

    def recordings(self) -> dict[str, NamedRecording]:
        """Every named recording; empty when there is no file or it is damaged (said once
        in the log, by name)."""
        key = self._stat()
        if key is None:
            self._seen, self._cached = None, {}
        elif key != self._seen:
            self._seen, self._cached = key, self._read()
        return self._cached

    def _read(self) -> dict[str, NamedRecording]:
        try:
            return _parse(json.loads(read_state_file(self.path)))
        except FileNotFoundError:
            return {}
        except StateError as exc:
            log.warning("%s", exc)
            return {}
        except (OSError, ValueError, TypeError, AttributeError) as exc:
            log.warning("%s is damaged (%s): speakers read as Plaud named them until the next "
                        "naming writes it again", self.path, exc)
            return {}

    def names(self) -> SpeakerNames:
        named = {fid: r.names for fid, r in self.recordings().items() if r.names}
        return SpeakerNames(named) if named else NO_NAMES

    def changed_at(self) -> dict[str, float]:
        return {fid: r.changed_at for fid, r in self.recordings().items()}

    def set(self, file_id: str, label: str, name: str | None) -> str | None:
        """Name ``label`` in ``file_id`` (``None``: undo); returns the name it had."""
        with flocked(self.lock_path):  # two namings at once never lose one another
            self._seen = None
            current = dict(self.recordings())
            entry = current.get(file_id, NamedRecording({}, 0.0))
            names = dict(entry.names)
            before = names.pop(label, None)
            if name is not None:
                names[label] = name
            current[file_id] = NamedRecording(names, self.clock())
            if len(current) > MAX_RECORDINGS:
                raise StateError(f"{self.path} names speakers in {MAX_RECORDINGS} recordings "
                                 "already; undo some names first")
            write_json_atomic(self.path, self._json(current))
            self._seen = None
        return before

    @staticmethod
    def _json(recordings: dict[str, NamedRecording]) -> dict[str, Any]:
        return {"version": VERSION, "recordings": {
            fid: {"names": r.names, "changed_at": r.changed_at}
            for fid, r in sorted(recordings.items())}}
