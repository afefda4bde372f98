"""The on-disk index: immutable segments plus one small manifest swapped last.

Layout of ``<home>/vector-index/``::

    manifest.json              what is live: schema, model, segments, tombstones
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
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import IndexCorruptError, IndexSchemaError
from .postings import Postings
from .snapshot import ChunkRow, IndexedRecording, Segment, Snapshot

log = logging.getLogger(__name__)

SCHEMA_VERSION = 1
MANIFEST = "manifest.json"
STAGED = "manifest.next.json"


def read_manifest(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise IndexCorruptError(f"Cannot read {path}: {exc}. Delete {path.parent} to rebuild "
                                "the index from Plaud.") from exc
    if not isinstance(data, dict):
        raise IndexCorruptError(f"{path} is not an index manifest; delete {path.parent}.")
    if int(data.get("schema", 0)) > SCHEMA_VERSION:
        raise IndexSchemaError(
            f"The index at {path.parent} was written by a newer plaud-index-mcp "
            f"(schema {data.get('schema')}, this version reads {SCHEMA_VERSION}). "
            "Upgrade plaud-index-mcp, or delete the folder to rebuild it."
        )
    return data


def load_segment(directory: Path, name: str) -> Segment:
    meta = json.loads((directory / f"{name}.meta.json").read_text(encoding="utf-8"))
    vectors = np.load(directory / f"{name}.vec.npy", mmap_mode="r")
    with np.load(directory / f"{name}.kw.npz") as kw:
        postings = Postings(**{k: kw[k] for k in ("terms", "offsets", "rows", "tfs", "doclen")})
    chunks = [ChunkRow.from_json(c) for c in meta["chunks"]]
    recordings = [IndexedRecording.from_json(r) for r in meta["recordings"]]
    if len(chunks) != vectors.shape[0]:
        raise IndexCorruptError(f"Segment {name} is inconsistent; delete {directory}.")
    return Segment(name=name, seq=int(meta["seq"]), vectors=vectors, postings=postings,
                   chunks=chunks, recordings=recordings)


def manifest_key(directory: Path) -> tuple[int, int, int] | None:
    """Cheap change detection: a new manifest is a new inode (``os.replace``)."""
    try:
        st = (directory / MANIFEST).stat()
    except FileNotFoundError:
        return None
    return (st.st_ino, st.st_mtime_ns, st.st_size)


def open_snapshot(directory: Path, manifest_name: str = MANIFEST) -> Snapshot | None:
    """The committed index, or ``None`` if none was ever committed."""
    for attempt in range(3):
        manifest = read_manifest(directory / manifest_name)
        if manifest is None:
            return None
        try:
            segments = [load_segment(directory, s["name"]) for s in manifest["segments"]]
        except FileNotFoundError:
            # Compaction retired a file between our manifest read and open; re-read.
            if attempt == 2:
                raise
            continue
        except (KeyError, ValueError, OSError) as exc:
            raise IndexCorruptError(f"Cannot read the index at {directory}: {exc}. Delete "
                                    "the folder to rebuild it from Plaud.") from exc
        return Snapshot.build(manifest, segments)
    return None  # pragma: no cover
