"""Merging segments: which ones (a tiered, log-structured policy) and how (streamed).

Policy: a segment's tier is the order of magnitude of its live rows above
``FLOOR_ROWS``; ``MERGE_FACTOR`` segments of one tier merge into one of the
next, so every row is rewritten about once per tier, log(N) times in all
(total writing grows about N log N, not N²). A segment more than
``MAX_DEAD_FRACTION`` dead is rewritten without its dead rows.

Mechanics: the output is written in blocks read with plain file reads (not the
readers' mappings, so memory stays bounded by the block and the per-row columns,
far below the index size): vectors and chunk lines are copied for the live rows,
postings are merged from their arrays (rows renumbered, terms united), never
re-tokenised.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from .files import map_npy
from .manifest import ModelInfo, SegmentEntry
from .records import IndexedRecording
from .segment_files import (
    CHUNKS,
    POSTING,
    POSTINGS,
    ROWS,
    SPEAKERS,
    TERM_OFFSETS,
    TERMS,
    VECTORS,
    SegmentFiles,
)
from .snapshot import ROW, Segment

MERGE_FACTOR = 10
FLOOR_ROWS = 1000
MAX_DEAD_FRACTION = 0.3
VECTOR_BLOCK_ROWS = 8192
POSTING_BLOCK = 4_000_000  # postings per block: ~50 MB of working arrays
COPY_BYTES = 8 << 20


def tier(live_rows: int) -> int:
    return int(math.log(max(live_rows, FLOOR_ROWS) / FLOOR_ROWS, MERGE_FACTOR) + 1e-9)


def plan_merge(rows: Sequence[int], live: Sequence[int]) -> list[int]:
    """Which segments (by position) to merge next; empty when none need it. Pure."""
    by_tier: dict[int, list[int]] = {}
    for i, n in enumerate(live):
        by_tier.setdefault(tier(n), []).append(i)
    for level in sorted(by_tier):
        if len(by_tier[level]) >= MERGE_FACTOR:
            return by_tier[level][:MERGE_FACTOR]
    for i, (total, alive) in enumerate(zip(rows, live, strict=True)):
        if total and (total - alive) / total > MAX_DEAD_FRACTION:
            return [i]
    return []


class Input:
    """One segment being merged: which of its rows and recordings stay, and where."""

    def __init__(self, directory: Path, seg: Segment, keep: np.ndarray,
                 keep_recording: np.ndarray) -> None:
        self.seg, self.keep = seg, keep
        self.path = directory / seg.name
        self.row_map = np.where(keep, np.cumsum(keep) - 1, -1).astype(np.int64)
        self.kept_recordings = [r for r, k in zip(seg.recordings, keep_recording,
                                                  strict=True) if k]
        self.rec_map = np.where(keep_recording, np.cumsum(keep_recording) - 1, -1)
        self._headers: dict[str, int] = {}

    def file(self, suffix: str) -> Path:
        return Path(f"{self.path}{suffix}")

    def read(self, suffix: str, dtype: np.dtype, lo: int, hi: int,
             per_row: int = 1) -> np.ndarray:
        """Rows [lo, hi) of one of its ``.npy`` files, read (not mapped: the pages do not
        stay ours); each file's header is parsed once."""
        path = self.file(suffix)
        if suffix not in self._headers:
            mapped = map_npy(path)
            self._headers[suffix] = mapped.offset if isinstance(mapped, np.memmap) else 0
        count = (hi - lo) * per_row
        if count <= 0:
            return np.zeros(0, dtype=dtype)
        return np.fromfile(path, dtype=dtype, count=count,
                           offset=self._headers[suffix] + lo * per_row * dtype.itemsize)


def merge(directory: Path, seq: int, model: ModelInfo, segments: Sequence[Segment],
          keeps: Sequence[np.ndarray],
          keep_recordings: Sequence[np.ndarray]) -> SegmentEntry | None:
    """One new segment holding the kept rows and recordings of ``segments``, in order;
    ``None`` when nothing is kept."""
    inputs = [Input(directory, s, k, r) for s, k, r in zip(segments, keeps, keep_recordings,
                                                          strict=True)]
    recordings: list[IndexedRecording] = [r for i in inputs for r in i.kept_recordings]
    total = sum(int(i.keep.sum()) for i in inputs)
    if not total and not recordings:
        return None
    out = SegmentFiles(directory, seq)
    rows, speakers, speaker_ids = _rows(inputs)
    out.stream(VECTORS, np.dtype(np.float32), (total, model.dim), _vectors(inputs, model.dim))
    out.array(ROWS, rows)
    out.array(SPEAKERS, speaker_ids)
    with out.file(CHUNKS) as fh:
        for piece in _lines(inputs):
            fh.write(piece)
    terms, counts = _postings(out, inputs, int(rows["nterms"].sum()))
    out.array(TERMS, terms)
    out.array(TERM_OFFSETS, np.concatenate([[0], np.cumsum(counts)]).astype(np.int64))
    out.head(model, total, recordings, speakers)
    return out.finish(total)


def _rows(inputs: Sequence[Input]) -> tuple[np.ndarray, list[str], np.ndarray]:
    """The output's ROW records and speaker CSR: recordings and speakers renumbered, chunk
    line positions recomputed from the kept lines' lengths."""
    vocab: dict[str, int] = {}
    parts, id_parts = [np.zeros(0, ROW)], [np.zeros(0, np.int32)]
    recordings_before = speakers_before = bytes_before = 0
    for i in inputs:
        seg = i.seg
        rows = np.array(seg.rows[i.keep])
        rows["rec"] = i.rec_map[rows["rec"]] + recordings_before
        mapping = np.array([vocab.setdefault(n, len(vocab)) for n in seg.speakers] or [0],
                           dtype=np.int32)
        per_row = np.diff(seg.speaker_indptr())
        flat = mapping[np.asarray(seg.speaker_ids)[np.repeat(i.keep, per_row)]]
        kept = per_row[i.keep]
        rows["spk"] = speakers_before + np.cumsum(kept) - kept
        lengths = np.diff(np.append(seg.rows["at"], i.file(CHUNKS).stat().st_size))[i.keep]
        rows["at"] = bytes_before + np.cumsum(lengths) - lengths
        parts.append(rows)
        id_parts.append(flat)
        recordings_before += len(i.kept_recordings)
        speakers_before += len(flat)
        bytes_before += int(lengths.sum())
    return np.concatenate(parts), list(vocab), np.concatenate(id_parts)


def _vectors(inputs: Sequence[Input], dim: int) -> Iterator[np.ndarray]:
    f32 = np.dtype(np.float32)
    for i in inputs:
        for lo in range(0, len(i.seg), VECTOR_BLOCK_ROWS):
            hi = min(lo + VECTOR_BLOCK_ROWS, len(i.seg))
            if i.keep[lo:hi].any():
                block = i.read(VECTORS, f32, lo, hi, dim).reshape(hi - lo, dim)
                yield block[i.keep[lo:hi]]


def _lines(inputs: Sequence[Input]) -> Iterator[bytes]:
    """The kept rows' JSON lines, copied a run of consecutive kept rows at a time."""
    for i in inputs:
        if not i.keep.any():
            continue
        ends = np.append(i.seg.rows["at"], i.file(CHUNKS).stat().st_size)
        edges = np.flatnonzero(np.diff(np.concatenate([[False], i.keep, [False]])))
        with i.file(CHUNKS).open("rb") as fh:
            for first, last in zip(edges[::2], edges[1::2], strict=True):
                start, stop = int(ends[first]), int(ends[last])
                fh.seek(start)
                while start < stop:
                    piece = fh.read(min(COPY_BYTES, stop - start))
                    if not piece:
                        raise OSError(f"{i.file(CHUNKS)} ended early")
                    start += len(piece)
                    yield piece


def _postings(out: SegmentFiles, inputs: Sequence[Input],
              total: int) -> tuple[np.ndarray, np.ndarray]:
    """Writes the merged postings; returns the output's terms and each one's count.

    The united vocabulary is cut into blocks of about ``POSTING_BLOCK`` postings; each
    input's postings of a block are one contiguous slice (terms are sorted), renumbered
    and filtered to kept rows, then ordered by term (stable: rows stay ascending)."""
    terms = [np.asarray(map_npy(i.file(TERMS))) for i in inputs]
    toffs = [np.asarray(map_npy(i.file(TERM_OFFSETS))) for i in inputs]
    united = np.unique(np.concatenate([np.zeros(0, "<U1"), *terms]))
    where = [np.searchsorted(united, t) for t in terms]
    sizes = np.zeros(len(united), dtype=np.int64)
    for pos, toff in zip(where, toffs, strict=True):
        sizes += np.bincount(pos, weights=np.diff(toff), minlength=len(united)).astype(np.int64)
    cuts = np.searchsorted(np.cumsum(sizes), np.arange(POSTING_BLOCK, sizes.sum(),
                                                        POSTING_BLOCK), side="right")
    bounds = np.unique(np.concatenate([[0], cuts, [len(united)]]))
    counts = np.zeros(len(united), dtype=np.int64)

    def blocks() -> Iterator[np.ndarray]:
        row_base = np.cumsum([0] + [int(i.keep.sum()) for i in inputs])
        for t0, t1 in zip(bounds[:-1], bounds[1:], strict=True):
            ids, rows, tfs = [], [], []
            for n, i in enumerate(inputs):
                a, b = np.searchsorted(where[n], [t0, t1])
                lo, hi = int(toffs[n][a]), int(toffs[n][b])
                got = i.read(POSTINGS, POSTING, lo, hi)
                term_ids = np.repeat(where[n][a:b], np.diff(toffs[n][a:b + 1]))
                new = i.row_map[got["row"]]
                kept = new >= 0
                ids.append(term_ids[kept])
                rows.append(new[kept] + row_base[n])
                tfs.append(got["tf"][kept])
            term_ids = np.concatenate([np.zeros(0, np.int64), *ids])
            order = np.argsort(term_ids, kind="stable")
            counts[t0:t1] = np.bincount(term_ids - t0, minlength=t1 - t0)
            block = np.zeros(len(order), dtype=POSTING)
            block["row"] = np.concatenate([np.zeros(0, np.int64), *rows])[order]
            block["tf"] = np.concatenate([np.zeros(0, np.float32), *tfs])[order]
            yield block

    out.stream(POSTINGS, POSTING, (total,), blocks())
    present = counts > 0
    return united[present], counts[present]
