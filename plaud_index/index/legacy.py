"""Segments of schema 1 and 2 (one ``meta.json`` of every chunk, ``kw.npz`` postings):
read whole into memory, for readers of an index not yet upgraded and for the upgrade
itself (``writer.upgrade``). Old indexes are small; nothing new is written this way.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..errors import IndexCorruptError
from .files import NPY_HEADERS, check_sizes, damaged, map_npy
from .manifest import SegmentEntry
from .postings import Postings, build_postings
from .records import ChunkRow, IndexedRecording
from .snapshot import NO_MS, ROW, Columns, Segment


def load_legacy_segment(directory: Path, entry: SegmentEntry, same_analyser: bool) -> Segment:
    """An old segment as today's shape. ``same_analyser``: its postings were made by
    today's analyser and are kept; otherwise they are made again from the text."""
    check_sizes(directory, entry)
    meta_path = directory / f"{entry.name}.meta.json"
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        chunks = [ChunkRow.from_json(c) for c in meta["chunks"]]
        recordings = [IndexedRecording.from_json(r) for r in meta["recordings"]]
        seq = int(meta["seq"])
        where = {r.file_id: i for i, r in enumerate(recordings)}
        rec = [where[c.file_id] for c in chunks]
    except FileNotFoundError:
        raise
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise damaged(meta_path, f"{type(exc).__name__}: {exc}") from exc
    vectors = map_npy(directory / f"{entry.name}.vec.npy")
    if vectors.dtype != np.float32 or vectors.ndim != 2 or len(chunks) != vectors.shape[0]:
        raise damaged(directory / f"{entry.name}.vec.npy",
                      f"{vectors.dtype} {vectors.shape} for {len(chunks)} chunks")
    postings = _postings(directory / f"{entry.name}.kw.npz", len(chunks)) if same_analyser \
        else build_postings([c.text for c in chunks])
    columns = Columns.of(chunks)
    rows = np.zeros(len(chunks), dtype=ROW)
    rows["rec"], rows["source"], rows["spk"] = rec, columns.source, columns.indptr[:-1]
    rows["start_ms"] = [NO_MS if c.start_ms is None else c.start_ms for c in chunks]
    rows["end_ms"] = [NO_MS if c.end_ms is None else c.end_ms for c in chunks]
    rows["doclen"] = postings.doclen
    rows["nterms"] = np.bincount(postings.rows, minlength=len(chunks))
    return Segment(name=entry.name, seq=seq, vectors=vectors, postings=postings, rows=rows,
                   speaker_ids=columns.speaker_ids, speakers=columns.speakers,
                   recordings=recordings, chunks=chunks)


def _postings(path: Path, n_rows: int) -> Postings:
    try:
        with NPY_HEADERS, np.load(path) as kw:
            postings = Postings(**{k: kw[k] for k in ("terms", "offsets", "rows", "tfs",
                                                       "doclen")}, label=str(path))
        postings.check(n_rows)
        if len(postings.rows) and not (postings.rows.min() >= 0
                                       and postings.rows.max() < n_rows):
            raise ValueError("postings point at rows that do not exist")
    except FileNotFoundError:
        raise
    except IndexCorruptError:
        raise
    except Exception as exc:  # noqa: BLE001 - numpy and zipfile raise many types for damage
        raise damaged(path, f"{type(exc).__name__}: {exc}") from exc
    return postings
