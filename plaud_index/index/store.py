"""The on-disk index: immutable segments plus one small manifest swapped last.

Layout of ``<home>/vector-index/``::

    manifest.json         what is live: schema, model, analyser, segments, tombstones
    manifest.next.json    a full re-index for a new model, until it completes
    verified.json         which segment files the writer has checksummed and whose values
                          it checked (``trust.py``, ``values.py``); readers trust it
    seg-<seq>-<rand>.*    one segment's files (``segment_files.py``)

A commit writes a new segment (files fsynced, renamed into place, the
directory fsynced) and then replaces the manifest the same way, so ``kill -9``
at any instant leaves the previous manifest and every file it names intact.
Files are never rewritten: a reader that mapped one keeps a valid view.
Deleting or replacing a recording is a tombstone ``dead[file_id] = seq``:
its rows in segments older than ``seq`` stop counting. Merges (``merge.py``)
fold segments of similar size, and tombstone-heavy ones, into new segments.

Every file a reader opens may be damaged (``files.py``); the indexer then
rebuilds from Plaud while the old index keeps serving.
"""

from __future__ import annotations

import logging
from collections.abc import Collection
from pathlib import Path

from ..errors import IndexCorruptError
from . import legacy, segment_files
from .analyzer import VERSION as ANALYZER
from .files import REBUILD
from .manifest import MANIFEST, Manifest, SegmentEntry, read_manifest
from .snapshot import Segment, Snapshot
from .trust import trusted_segments

log = logging.getLogger(__name__)

FIRST_ARRAY_SCHEMA = 3  # schema 3: per-row arrays and JSON lines (``segment_files``)


def load_segment(directory: Path, entry: SegmentEntry, manifest: Manifest,
                 deep: bool = True) -> Segment:
    if manifest.schema >= FIRST_ARRAY_SCHEMA:
        return segment_files.load_segment(directory, entry, deep)
    return legacy.load_legacy_segment(directory, entry, manifest.analyzer == ANALYZER)


def manifest_key(directory: Path) -> tuple[int, int, int] | None:
    """Cheap change detection: a new manifest is a new inode (``os.replace``)."""
    try:
        st = (directory / MANIFEST).stat()
    except FileNotFoundError:
        return None
    except NotADirectoryError as exc:
        raise IndexCorruptError(f"{directory} is a file, not the index folder; move it "
                                "away and the indexer builds the index there.") from exc
    return (st.st_ino, st.st_mtime_ns, st.st_size)


def load_segments(directory: Path, manifest: Manifest,
                  trusted: Collection[str] = ()) -> list[Segment]:
    """Every segment, each checked in full unless its name is in ``trusted``."""
    return [load_segment(directory, entry, manifest, entry.name not in trusted)
            for entry in manifest.segments]


def open_snapshot(directory: Path, manifest_name: str = MANIFEST) -> Snapshot | None:
    """The committed index, or ``None`` if none was ever committed.

    A segment that cannot be read while the manifest changed under us is a race with a
    merge that retired it (read again); one that cannot be read under an unchanged
    manifest is damage."""
    for attempt in range(5):
        key = manifest_key(directory)
        manifest = read_manifest(directory / manifest_name)
        if manifest is None:
            return None
        try:
            trusted = trusted_segments(directory, manifest.segments)
            return Snapshot.build(manifest, load_segments(directory, manifest, trusted))
        except (FileNotFoundError, IndexCorruptError) as exc:
            if manifest_key(directory) != key and attempt < 4:
                continue
            if isinstance(exc, IndexCorruptError):
                raise
            raise IndexCorruptError(f"The index file {exc.filename} is missing; "
                                    f"{REBUILD}.") from exc
    return None  # pragma: no cover
