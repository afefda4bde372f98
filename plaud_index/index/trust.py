"""Which segment files the writer has checksummed, kept across processes.

Reading every byte of a large index on every ``indexer --once`` would make a quiet
cycle cost seconds per gigabyte. Segment files are never rewritten, so a file is
checked once and trusted while its identity (inode, modification time, size) is
what it was; anything that writes to it changes that and it is checked again.
Against decay that changes no identity, each writer open also re-reads
``SCRUB_BYTES`` of the segment checked longest ago, resuming its CRC-32 where
the last open stopped (a rolling scrub: a 2 GB segment over eight cycles).

A record also says its files' values passed the deep checks of ``values.py``
(``CHECKS`` names their version): every reader, the search server too, reads this
file and checks deeply only the segments whose identity it does not vouch for. Only
the writer (which holds the lock) writes it.
"""

from __future__ import annotations

import json
import logging
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path

from ..fsio import read_state_file, write_json_atomic
from .files import damaged, verify_checksums
from .manifest import SegmentEntry

log = logging.getLogger(__name__)

VERIFIED = "verified.json"
SCRUB_BYTES = 256 << 20
CHECKS = 1  # the version of the value checks a record vouches for: more checks, bump it


def identity(directory: Path, entry: SegmentEntry) -> list[list[int]]:
    stats = [(directory / f"{entry.name}{suffix}").stat() for suffix in sorted(entry.files)]
    return [[st.st_ino, st.st_mtime_ns, st.st_size] for st in stats]


def read_records(directory: Path, level: int = logging.DEBUG) -> dict[str, dict[str, object]]:
    """The records, or none if they cannot be read (a reader then checks every segment;
    the writer, logging it at ``INFO``, writes them again)."""
    try:
        data = json.loads(read_state_file(directory / VERIFIED))
        return {str(k): dict(v) for k, v in data["segments"].items()}
    except FileNotFoundError:
        return {}
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        log.log(level, "Ignoring %s (%s): every segment is checked again", VERIFIED, exc)
        return {}


def vouches(record: dict[str, object] | None, directory: Path, entry: SegmentEntry) -> bool:
    """``record`` is of ``entry``'s files as they are now, checked as this version checks."""
    try:
        return record is not None and record.get("checks") == CHECKS \
            and record.get("id") == identity(directory, entry)
    except FileNotFoundError:  # the loader names the missing file
        return False


def trusted_segments(directory: Path, entries: Sequence[SegmentEntry]) -> set[str]:
    """The segments a reader need not check deeply (``values.py``)."""
    records = read_records(directory)
    return {e.name for e in entries if vouches(records.get(e.name), directory, e)}


def distrust(directory: Path) -> None:
    """A reader found damage in a file this record vouches for (decay that kept the file's
    identity): the records go, so the next reader checks every file in full and names the
    damaged one, and the writer's next open checks and rebuilds it. The one change a reader
    makes to the index folder; best effort."""
    try:
        (directory / VERIFIED).unlink(missing_ok=True)
    except OSError as exc:
        log.warning("Cannot remove %s (%s): the damage is found when the scrub reaches it",
                    VERIFIED, exc)


class Trust:
    def __init__(self, directory: Path, clock: Callable[[], float]) -> None:
        self.directory, self.clock = directory, clock
        self.checked: dict[str, dict[str, object]] = read_records(directory, logging.INFO)
        self.changed = False

    def trusted(self, entries: Sequence[SegmentEntry]) -> set[str]:
        return {e.name for e in entries
                if vouches(self.checked.get(e.name), self.directory, e)}

    def vouch(self, entry: SegmentEntry) -> None:
        """``entry`` was just written (its checksums computed from the bytes written, its
        values from checked inputs), or its files were just checked in full."""
        self.checked[entry.name] = {"id": identity(self.directory, entry), "at": self.clock(),
                                    "checks": CHECKS}
        self.changed = True

    def verify(self, entries: Sequence[SegmentEntry]) -> None:
        """Checksum what is new or changed, then scrub the longest-trusted; raises
        ``IndexCorruptError`` naming a damaged file. The caller has checked the values of
        what is not ``trusted`` (``load_segment(deep=True)``)."""
        trusted = []
        for entry in entries:
            if not vouches(self.checked.get(entry.name), self.directory, entry):
                verify_checksums(self.directory, entry)
                self.vouch(entry)
            else:
                trusted.append(entry)
        if trusted:
            self._scrub(min(trusted, key=lambda e: self._checked_at(e.name)))

    def _checked_at(self, name: str) -> float:
        at = self.checked[name].get("at")
        return float(at) if isinstance(at, (int, float)) else 0.0

    def _scrub(self, entry: SegmentEntry) -> None:
        """Up to ``SCRUB_BYTES`` more of ``entry``'s files against their checksums."""
        record = self.checked[entry.name]
        state = record.get("scrub")
        suffixes = sorted(entry.files)
        index, offset, crc = state if isinstance(state, list) and len(state) == 3 \
            else (0, 0, 0)
        budget = SCRUB_BYTES
        while budget > 0 and 0 <= index < len(suffixes):
            path = self.directory / f"{entry.name}{suffixes[index]}"
            size, expected = entry.files[suffixes[index]]
            with path.open("rb") as fh:
                fh.seek(offset)
                while budget > 0 and offset < size:
                    block = fh.read(min(1 << 20, size - offset, budget))
                    if not block:
                        raise damaged(path, f"it ends at {offset} of {size} bytes")
                    crc, offset, budget = zlib.crc32(block, crc), offset + len(block), \
                        budget - len(block)
            if offset >= size:
                if crc != expected:
                    raise damaged(path, "its checksum does not match the manifest")
                index, offset, crc = index + 1, 0, 0
        if index >= len(suffixes):
            self.vouch(entry)
        else:
            record["scrub"] = [index, offset, crc]
            self.changed = True


    def save(self, keep: set[str]) -> None:
        """Write down what changed; segments no manifest names are forgotten."""
        before = len(self.checked)
        self.checked = {k: v for k, v in self.checked.items() if k in keep}
        if self.changed or len(self.checked) != before:
            try:
                write_json_atomic(self.directory / VERIFIED, {"segments": self.checked})
            except OSError as exc:  # a full or read-only disk: only this cache is lost
                log.warning("Cannot record the checked index files in %s (%s); they are "
                            "checked again next time", VERIFIED, exc)
                return
            self.changed = False
