"""The on-disk index: immutable segments plus one small manifest swapped last.

Layout of ``<home>/vector-index/``::

    manifest.json              what is live: schema, model, analyser, segments, tombstones
    manifest.next.json         a full re-index for a new model, until it completes
    seg-<seq>-<rand>.vec.npy   float32 rows, L2-normalised (memory-mapped by readers)
    seg-<seq>-<rand>.meta.json chunk metadata and the recordings the segment holds
    seg-<seq>-<rand>.kw.npz    BM25 postings for the same rows

A commit writes a new segment (files fsynced, renamed into place, the
directory fsynced) and then replaces the manifest the same way, so ``kill -9``
at any instant leaves the previous manifest and every file it names intact.
Files are never rewritten: a reader that mapped one keeps a valid view.
Deleting or replacing a recording is a tombstone ``dead[file_id] = seq``:
its rows in segments older than ``seq`` stop counting. Compaction folds the
live rows into one segment when segments or tombstones pile up.

Every file a reader opens may be damaged: any failure to read one, a size that
differs from the manifest's record, or rows that do not line up is an
``IndexCorruptError`` naming the file; the indexer then rebuilds from Plaud.
"""

from __future__ import annotations

import json
import logging
import threading
import zlib
from pathlib import Path

import numpy as np

from ..errors import IndexCorruptError
from .manifest import MANIFEST, Manifest, SegmentEntry, read_manifest
from .postings import Postings
from .snapshot import ChunkRow, IndexedRecording, Segment, Snapshot

# numpy parses .npy headers with ast.literal_eval, and CPython 3.11's AST constructor is
# not thread-safe (concurrent calls raise "SystemError: AST constructor recursion depth
# mismatch"): readers on several threads take turns for that moment.
_NPY_HEADERS = threading.Lock()

log = logging.getLogger(__name__)

SUFFIXES = (".vec.npy", ".kw.npz", ".meta.json")
REBUILD = "the indexer rebuilds it from Plaud on its next cycle (or delete the folder)"


def _damaged(path: Path, why: object) -> IndexCorruptError:
    return IndexCorruptError(f"The index file {path} is damaged ({why}); {REBUILD}.")


def _crc32(path: Path) -> int:
    crc = 0
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            crc = zlib.crc32(block, crc)
    return crc


def file_records(directory: Path, name: str) -> dict[str, tuple[int, int]]:
    """What the manifest records of a segment's files: size and CRC-32 of each."""
    return {suffix: ((directory / f"{name}{suffix}").stat().st_size,
                     _crc32(directory / f"{name}{suffix}")) for suffix in SUFFIXES}


def _check_sizes(directory: Path, entry: SegmentEntry) -> None:
    for suffix, (expected, _) in entry.files.items():
        path = directory / f"{entry.name}{suffix}"
        size = path.stat().st_size  # FileNotFoundError: the caller decides (a race or damage)
        if size != expected:
            raise _damaged(path, f"{size} bytes, the manifest recorded {expected}")


def verify_checksums(directory: Path, entry: SegmentEntry) -> None:
    """Read every byte of a segment's files against the manifest's CRC-32 (the writer
    does this for each segment it has not checked yet: a flipped byte in a vector file
    is otherwise invisible)."""
    for suffix, (_, expected) in entry.files.items():
        path = directory / f"{entry.name}{suffix}"
        if _crc32(path) != expected:
            raise _damaged(path, "its checksum does not match the manifest")


def load_segment(directory: Path, entry: SegmentEntry) -> Segment:
    _check_sizes(directory, entry)
    meta_path = directory / f"{entry.name}.meta.json"
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        chunks = [ChunkRow.from_json(c) for c in meta["chunks"]]
        recordings = [IndexedRecording.from_json(r) for r in meta["recordings"]]
        seq = int(meta["seq"])
    except FileNotFoundError:
        raise
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise _damaged(meta_path, f"{type(exc).__name__}: {exc}") from exc
    vec_path = directory / f"{entry.name}.vec.npy"
    try:
        with _NPY_HEADERS:
            vectors = np.load(vec_path, mmap_mode="r")
    except FileNotFoundError:
        raise
    except (OSError, ValueError, EOFError) as exc:
        raise _damaged(vec_path, exc) from exc
    if vectors.dtype != np.float32 or vectors.ndim != 2 or len(chunks) != vectors.shape[0]:
        raise _damaged(vec_path, f"{vectors.dtype} {vectors.shape} for {len(chunks)} chunks")
    kw_path = directory / f"{entry.name}.kw.npz"
    try:
        with _NPY_HEADERS, np.load(kw_path) as kw:
            postings = Postings(**{k: kw[k] for k in ("terms", "offsets", "rows", "tfs",
                                                       "doclen")})
        postings.check(len(chunks))
    except FileNotFoundError:
        raise
    except Exception as exc:  # noqa: BLE001 - numpy and zipfile raise many types for damage
        raise _damaged(kw_path, f"{type(exc).__name__}: {exc}") from exc
    return Segment(name=entry.name, seq=seq, vectors=vectors, postings=postings,
                   chunks=chunks, recordings=recordings)


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


def load_segments(directory: Path, manifest: Manifest) -> list[Segment]:
    return [load_segment(directory, entry) for entry in manifest.segments]


def open_snapshot(directory: Path, manifest_name: str = MANIFEST) -> Snapshot | None:
    """The committed index, or ``None`` if none was ever committed.

    A segment that cannot be read while the manifest changed under us is a race with a
    compaction that retired it (read again); one that cannot be read under an unchanged
    manifest is damage."""
    for attempt in range(5):
        key = manifest_key(directory)
        manifest = read_manifest(directory / manifest_name)
        if manifest is None:
            return None
        try:
            return Snapshot.build(manifest, load_segments(directory, manifest))
        except (FileNotFoundError, IndexCorruptError) as exc:
            if manifest_key(directory) != key and attempt < 4:
                continue
            if isinstance(exc, IndexCorruptError):
                raise
            raise IndexCorruptError(f"The index file {exc.filename} is missing; "
                                    f"{REBUILD}.") from exc
    return None  # pragma: no cover
