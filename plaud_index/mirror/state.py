"""``mirror-state.json`` in the home: which file the mirror wrote for each recording.

For each Plaud id: the file's name, the stem it was made from (date and title), and
the SHA-256 of the bytes written. A file whose bytes no longer hash to that was
edited by the user and is never overwritten. Versioned; a state that is damaged,
of another version or of another folder is started afresh: a file already there
is then taken for ours only if its bytes are exactly what would be written.
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..fsio import read_state_file, write_json_atomic
from ..home import Home

log = logging.getLogger(__name__)

VERSION = 1


@dataclass
class Entry:
    name: str
    stem: str
    sha256: str
    written: float  # when the file was last written, or found as it should be (``seen``)


@dataclass
class MirrorState:
    folder: str
    files: dict[str, Entry] = field(default_factory=dict)
    kept_edits: int = 0  # edited files left alone, with the new version written beside
    last_write: float | None = None
    last_error: str | None = None
    last_error_at: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {"version": VERSION, **asdict(self)}


def safe_name(name: str) -> bool:
    """A file name the state may point at: ``name.md`` or ``Folder/name.md`` (a Plaud
    folder's sub-folder), nothing hidden, no ``..``, no other separator: a damaged or
    edited state file must never send a write, a rename or a removal outside the mirror."""
    parts = name.split("/")
    return 1 <= len(parts) <= 2 and all(p and not p.startswith(".") and "\\" not in p
                                        for p in parts)


def parse_state(data: object, folder: str) -> MirrorState:
    """The stored state of ``folder``; a fresh one for anything else."""
    if not isinstance(data, dict) or data.get("version") != VERSION or \
            data.get("folder") != folder:
        return MirrorState(folder)
    files: dict[str, Entry] = {}
    raw_files = data.get("files")
    for file_id, raw in (raw_files.items() if isinstance(raw_files, dict) else ()):
        try:
            entry = Entry(str(raw["name"]), str(raw["stem"]), str(raw["sha256"]),
                          float(raw["written"]))
        except (KeyError, TypeError, ValueError):
            continue
        if safe_name(entry.name):
            files[str(file_id)] = entry
    numbers = {k: data.get(k) for k in ("last_write", "last_error_at")}
    return MirrorState(
        folder, files,
        kept_edits=data["kept_edits"] if isinstance(data.get("kept_edits"), int) else 0,
        last_error=data["last_error"] if isinstance(data.get("last_error"), str) else None,
        **{k: float(v) if isinstance(v, (int, float)) else None for k, v in numbers.items()})


def read_mirror_state(home: Path, folder: Path) -> MirrorState:
    path = Home(home).mirror_state
    try:
        data: object = json.loads(read_state_file(path))
    except FileNotFoundError:
        data = None
    except (OSError, ValueError, RecursionError) as exc:
        log.warning("Cannot read %s (%s); starting the mirror's state afresh (no file "
                    "is overwritten unless it is exactly what would be written)", path, exc)
        data = None
    return parse_state(data, str(folder))


def write_mirror_state(home: Path, state: MirrorState) -> None:
    home.mkdir(parents=True, exist_ok=True, mode=0o700)
    write_json_atomic(Home(home).mirror_state, state.to_json())
