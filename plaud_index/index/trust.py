"""Which segment files the writer has checksummed, kept across processes.

Reading every byte of a large index on every ``indexer --once`` would make a quiet
cycle cost seconds per gigabyte. Segment files are never rewritten, so a file is
checked once and trusted while its identity (inode, modification time, size) is
what it was; anything that writes to it changes that and it is checked again.
Against decay that changes no identity, each writer open also re-reads
``SCRUB_BYTES`` of the segment checked longest ago, resuming its CRC-32 where
the last open stopped (a rolling scrub: a 2 GB segment over eight cycles).
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


def identity(directory: Path, entry: SegmentEntry) -> list[list[int]]:
    stats = [(directory / f"{entry.name}{suffix}").stat() for suffix in sorted(entry.files)]
    return [[st.st_ino, st.st_mtime_ns, st.st_size] for st in stats]


class Trust:
    def __init__(self, directory: Path, clock: Callable[[], float]) -> None:
        self.directory, self.clock = directory, clock
        self.checked: dict[str, dict[str, object]] = self._read()
        self.changed = False

    def _read(self) -> dict[str, dict[str, object]]:
        try:
            data = json.loads(read_state_file(self.directory / VERIFIED))
            return {str(k): dict(v) for k, v in data["segments"].items()}
        except FileNotFoundError:
            return {}
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            log.info("Ignoring %s (%s): every segment is checked again", VERIFIED, exc)
            return {}

    def vouch(self, entry: SegmentEntry) -> None:
        """``entry`` was just written (its checksums computed from the bytes written)."""
        self.checked[entry.name] = {"id": identity(self.directory, entry), "at": self.clock()}
        self.changed = True

    def verify(self, entries: Sequence[SegmentEntry]) -> None:
        """Checksum what is new or changed, then scrub the longest-trusted; raises
        ``IndexCorruptError`` naming a damaged file."""
        trusted = []
        for entry in entries:
            record = self.checked.get(entry.name)
            if record is None or record.get("id") != identity(self.directory, entry):
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
