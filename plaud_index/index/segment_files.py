"""One index segment on disk (schema 3): its files, written once, read without parsing.

    seg-<seq>-<rand>.vec.npy       float32 (rows, dim), L2-normalised
    seg-<seq>-<rand>.rows.npy      one ``snapshot.ROW`` record per row: recording, source,
                                   times, where its JSON line starts, speakers, lengths
    seg-<seq>-<rand>.spk.npy       int32 speaker ids of all rows (CSR by ROW "spk")
    seg-<seq>-<rand>.chunks.jsonl  one JSON line per row, parsed only for rows shown
    seg-<seq>-<rand>.terms.npy     the sorted terms of the BM25 postings
    seg-<seq>-<rand>.toff.npy      int64: term i's postings are post[toff[i]:toff[i+1]]
    seg-<seq>-<rand>.post.npy      POSTING records (row, tf), by term, rows ascending
    seg-<seq>-<rand>.seg.json      seq, model, recordings, the speaker vocabulary

All but ``seg.json`` (a few hundred bytes per recording) are memory-mapped, so
opening costs system calls and a few array checks, never a Python object per chunk.
Each file's size and CRC-32 are kept as it is written (no second read); what the
values must be is ``values.py``.
"""

from __future__ import annotations

import json
import secrets
import zlib
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from ..fsio import atomic_file, fsync_dir
from .files import check_sizes, damaged, map_bytes, map_npy
from .manifest import ModelInfo, SegmentEntry
from .postings import Postings, build_postings
from .records import ChunkRow, IndexedRecording
from .snapshot import NO_MS, ROW, Columns, JsonLines, Segment
from .values import (
    postings_problem,
    row_problem,
    terms_problem,
    text_problem,
    vectors_problem,
)

VECTORS, ROWS, SPEAKERS, CHUNKS = ".vec.npy", ".rows.npy", ".spk.npy", ".chunks.jsonl"
TERMS, TERM_OFFSETS, POSTINGS, HEAD = ".terms.npy", ".toff.npy", ".post.npy", ".seg.json"
SUFFIXES = (VECTORS, ROWS, SPEAKERS, CHUNKS, TERMS, TERM_OFFSETS, POSTINGS, HEAD)
POSTING = np.dtype([("row", "<i4"), ("tf", "<f4")])


def new_name(seq: int) -> str:
    return f"seg-{seq:06d}-{secrets.token_hex(4)}"


class _Counted:
    """A file being written that keeps its size and CRC-32 as bytes pass."""

    def __init__(self, fh: Any) -> None:
        self.fh, self.size, self.crc = fh, 0, 0

    def write(self, data: Any) -> int:
        view = memoryview(data).cast("B")
        self.fh.write(view)
        self.size += len(view)
        self.crc = zlib.crc32(view, self.crc)
        return len(view)


class SegmentFiles:
    """The files of one new segment, each written once beside its final name."""

    def __init__(self, directory: Path, seq: int) -> None:
        self.directory, self.seq, self.name = directory, seq, new_name(seq)
        self.records: dict[str, tuple[int, int]] = {}

    @contextmanager
    def file(self, suffix: str) -> Iterator[_Counted]:
        with atomic_file(self.directory / f"{self.name}{suffix}") as fh:
            out = _Counted(fh)
            yield out
        self.records[suffix] = (out.size, out.crc)

    def array(self, suffix: str, array: np.ndarray) -> None:
        self.stream(suffix, array.dtype, array.shape, [array])

    def stream(self, suffix: str, dtype: np.dtype, shape: tuple[int, ...],
               blocks: Iterable[np.ndarray]) -> None:
        """A ``.npy`` file of a known shape, written block by block (bounded memory)."""
        with self.file(suffix) as out:
            np.lib.format.write_array_header_1_0(out, {
                "descr": np.lib.format.dtype_to_descr(dtype), "fortran_order": False,
                "shape": shape})
            written = 0
            for block in blocks:
                block = np.ascontiguousarray(block, dtype=dtype)
                out.write(block.data if block.size else b"")
                written += len(block)
            if written != (shape[0] if shape else 1):
                raise RuntimeError(f"{self.name}{suffix}: wrote {written} of {shape} rows")

    def head(self, model: ModelInfo, rows: int, recordings: Sequence[IndexedRecording],
             speakers: Sequence[str]) -> None:
        data = {"seq": self.seq, "model": model.to_json(), "rows": rows,
                "recordings": [r.to_json() for r in recordings], "speakers": list(speakers)}
        with self.file(HEAD) as out:
            out.write(json.dumps(data, separators=(",", ":")).encode())

    def finish(self, rows: int) -> SegmentEntry:
        fsync_dir(self.directory)
        return SegmentEntry(self.name, self.seq, rows, dict(self.records))


def chunk_line(chunk: ChunkRow) -> bytes:
    """One JSON line (escapes keep any text, lone surrogates too, on one line)."""
    return json.dumps(chunk.to_json(), separators=(",", ":")).encode() + b"\n"


def write_segment(directory: Path, seq: int, model: ModelInfo, chunks: Sequence[ChunkRow],
                  recordings: Sequence[IndexedRecording], vectors: np.ndarray,
                  postings: Postings | None = None) -> SegmentEntry:
    """A new segment from rows in memory (a commit, or an old segment upgraded)."""
    postings = postings or build_postings([c.text for c in chunks])
    columns = Columns.of(chunks)
    lines = [chunk_line(c) for c in chunks]
    where = {r.file_id: i for i, r in enumerate(recordings)}
    rows = np.zeros(len(chunks), dtype=ROW)
    rows["rec"] = [where[c.file_id] for c in chunks]
    rows["source"] = columns.source
    rows["start_ms"] = [NO_MS if c.start_ms is None else c.start_ms for c in chunks]
    rows["end_ms"] = [NO_MS if c.end_ms is None else c.end_ms for c in chunks]
    rows["at"] = np.cumsum([0] + [len(line) for line in lines[:-1]]) if lines else []
    rows["spk"] = columns.indptr[:-1]
    rows["doclen"] = postings.doclen
    rows["nterms"] = np.bincount(postings.rows, minlength=len(chunks))
    post = np.zeros(len(postings.rows), dtype=POSTING)
    post["row"], post["tf"] = postings.rows, postings.tfs
    out = SegmentFiles(directory, seq)
    out.array(VECTORS, np.ascontiguousarray(vectors, dtype=np.float32))
    out.array(ROWS, rows)
    out.array(SPEAKERS, columns.speaker_ids)
    with out.file(CHUNKS) as fh:
        for line in lines:
            fh.write(line)
    out.array(TERMS, postings.terms)
    out.array(TERM_OFFSETS, postings.offsets.astype(np.int64))
    out.array(POSTINGS, post)
    out.head(model, len(chunks), recordings, columns.speakers)
    return out.finish(len(chunks))


def load_segment(directory: Path, entry: SegmentEntry, deep: bool = True) -> Segment:
    """Map one segment and check it: shapes and per-row values always, every posting and
    vector too when ``deep`` (a file identity not yet checked: ``trust.py``)."""
    check_sizes(directory, entry)
    path = directory / entry.name
    head_path = Path(f"{path}{HEAD}")
    try:
        head = json.loads(head_path.read_text(encoding="utf-8"))
        recordings = [IndexedRecording.from_json(r) for r in head["recordings"]]
        speakers = [str(s) for s in head["speakers"]]
        seq = int(head["seq"])
    except FileNotFoundError:
        raise
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise damaged(head_path, f"{type(exc).__name__}: {exc}") from exc
    # still mapped, but as plain arrays: ``np.memmap`` runs Python hooks on every index
    # and slice, and a search takes a few hundred (its keyword lookups were a sixth of the
    # shared server's CPU under 20 clients; bench/http_clients.py)
    arrays = {s: map_npy(Path(f"{path}{s}")).view(np.ndarray)
              for s in (VECTORS, ROWS, SPEAKERS, TERMS, TERM_OFFSETS, POSTINGS)}
    text = map_bytes(Path(f"{path}{CHUNKS}"))
    _check_shapes(path, arrays, entry.rows, len(speakers))
    rows, post = arrays[ROWS], arrays[POSTINGS]
    _refuse(path, ROWS, row_problem(rows, len(recordings), len(arrays[SPEAKERS]), len(text)))
    postings = Postings(arrays[TERMS], arrays[TERM_OFFSETS], post["row"], post["tf"],
                        rows["doclen"], label=f"{path}{POSTINGS}")
    try:
        postings.check(entry.rows)
    except ValueError as exc:
        raise damaged(f"{path}{TERM_OFFSETS}", exc) from exc
    if deep:
        _check_deep(path, arrays)
        _refuse(path, CHUNKS, text_problem(text))
    return Segment(name=entry.name, seq=seq, vectors=arrays[VECTORS], postings=postings,
                   rows=rows, speaker_ids=arrays[SPEAKERS], speakers=speakers,
                   recordings=recordings,
                   chunks=JsonLines(text, rows["at"], f"{path}{CHUNKS}"))


def _check_deep(path: Path, arrays: dict[str, np.ndarray]) -> None:
    post = arrays[POSTINGS]
    _refuse(path, TERMS, terms_problem(arrays[TERMS]))
    _refuse(path, POSTINGS, postings_problem(arrays[TERM_OFFSETS], post["row"], post["tf"],
                                             arrays[ROWS]["nterms"], arrays[ROWS]["doclen"]))
    _refuse(path, VECTORS, vectors_problem(arrays[VECTORS]))


def _refuse(path: Path, suffix: str, problem: str | None) -> None:
    if problem:
        raise damaged(f"{path}{suffix}", problem)


def _check_shapes(path: Path, arrays: dict[str, np.ndarray], n: int, n_speakers: int) -> None:
    """Types and lengths, and the speaker ids (few, and what the rows index into)."""
    vectors, rows, spk = arrays[VECTORS], arrays[ROWS], arrays[SPEAKERS]
    if vectors.dtype != np.float32 or vectors.ndim != 2 or vectors.shape[0] != n:
        raise damaged(f"{path}{VECTORS}", f"{vectors.dtype} {vectors.shape} for {n} rows")
    if rows.dtype != ROW or rows.shape != (n,):
        raise damaged(f"{path}{ROWS}", f"{rows.dtype} {rows.shape} for {n} rows")
    if spk.dtype != np.int32 or spk.ndim != 1 or (
            len(spk) and not (spk.min() >= 0 and spk.max() < n_speakers)):
        raise damaged(f"{path}{SPEAKERS}", "speaker ids that do not exist")
    terms, toff, post = arrays[TERMS], arrays[TERM_OFFSETS], arrays[POSTINGS]
    if terms.dtype.kind != "U" or terms.ndim != 1:
        raise damaged(f"{path}{TERMS}", f"{terms.dtype} {terms.shape}")
    if toff.dtype != np.int64 or post.dtype != POSTING or post.ndim != 1:
        raise damaged(f"{path}{POSTINGS}", f"{toff.dtype} {post.dtype}")
