"""One committed generation of the index, in memory: what search reads. Pure.

A segment's per-row values are arrays (memory-mapped from its files), its chunk
text is JSON lines parsed only for the rows shown, so nothing here holds one
Python object per chunk. Liveness (after tombstones) is one boolean mask over
all rows and every row knows its recording, so filters and per-recording
collapse are numpy operations.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any, overload

import numpy as np

from ..errors import IndexCorruptError
from .postings import Postings
from .records import ChunkRow, IndexedRecording
from .speakers import NO_NAMES, SpeakerNames, named, named_recording, named_row
from .titles import TitleIndex

if TYPE_CHECKING:  # the shapes only: this module reads no file
    from .manifest import Manifest, ModelInfo

SOURCE_CODES = {"transcript": 0, "notes": 1}
NO_MS = np.iinfo(np.int64).min  # a row without a time
MAX_COSINE = 1.01  # of unit float32 vectors, with room for rounding
# One record per row: what filters, collapse, BM25 and the chunk lines need.
ROW = np.dtype([("rec", "<i4"), ("source", "u1"), ("start_ms", "<i8"), ("end_ms", "<i8"),
                ("at", "<i8"), ("spk", "<i8"), ("doclen", "<i4"), ("nterms", "<i4")])


class _Rows(Sequence[ChunkRow]):
    """Chunks by row number, each read when asked for (``_read``)."""

    @overload
    def __getitem__(self, row: int) -> ChunkRow: ...
    @overload
    def __getitem__(self, row: slice) -> Sequence[ChunkRow]: ...

    def __getitem__(self, row: int | slice) -> ChunkRow | Sequence[ChunkRow]:
        if isinstance(row, slice):
            return [self._read(r) for r in range(*row.indices(len(self)))]
        row = int(row)
        if not -len(self) <= row < len(self):
            raise IndexError(row)
        return self._read(row % len(self))

    def _read(self, row: int) -> ChunkRow:
        raise NotImplementedError


class JsonLines(_Rows):
    """A segment's chunks: one JSON line per row in ``buffer`` (a mapped file), row r's at
    ``starts[r]``; a row is parsed when it is read, never all of them."""

    def __init__(self, buffer: Any, starts: np.ndarray, label: str) -> None:
        self.buffer, self.starts, self.label = buffer, starts, label

    def __len__(self) -> int:
        return len(self.starts)

    def _read(self, row: int) -> ChunkRow:
        start = int(self.starts[row])
        end = int(self.starts[row + 1]) if row + 1 < len(self) else len(self.buffer)
        try:
            return ChunkRow.from_json(json.loads(bytes(self.buffer[start:end])))
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise IndexCorruptError(
                f"The index file {self.label} is damaged (row {row}: {type(exc).__name__}); "
                "the indexer rebuilds it from Plaud on its next cycle (or delete the "
                "folder).") from exc


@dataclass(frozen=True)
class Segment:
    name: str
    seq: int
    vectors: np.ndarray  # (rows, dim) float32, memory-mapped
    postings: Postings
    rows: np.ndarray  # ROW per row
    speaker_ids: np.ndarray  # int32: row r's are speaker_ids[rows["spk"][r]:next row's]
    speakers: list[str]  # the vocabulary speaker_ids point into
    recordings: list[IndexedRecording]  # rows["rec"] indexes this
    chunks: Sequence[ChunkRow]  # read on demand

    def __len__(self) -> int:
        return len(self.rows)

    def speaker_indptr(self) -> np.ndarray:
        return np.append(self.rows["spk"], len(self.speaker_ids)).astype(np.int64)


@dataclass(frozen=True)
class Columns:
    """Per-row values the filters need, as arrays, so a filter is a few numpy operations:
    speakers as ids into a small vocabulary (CSR: ``speaker_ids[indptr[r]:indptr[r+1]]``
    are row r's), the source as a code."""

    speakers: list[str]  # the vocabulary: every distinct speaker name
    indptr: np.ndarray  # int64, rows + 1
    speaker_ids: np.ndarray  # int32
    source: np.ndarray  # uint8 per row: SOURCE_CODES, 255 for anything else

    @classmethod
    def of(cls, chunks: Sequence[ChunkRow]) -> Columns:
        """From rows in memory: what a new segment stores."""
        vocab: dict[str, int] = {}
        ids: list[int] = []
        indptr = [0]
        for chunk in chunks:
            ids.extend(vocab.setdefault(name, len(vocab)) for name in chunk.speakers)
            indptr.append(len(ids))
        return cls(list(vocab), np.array(indptr, dtype=np.int64),
                   np.array(ids, dtype=np.int32),
                   np.array([SOURCE_CODES.get(c.source, 255) for c in chunks], dtype=np.uint8))

    @classmethod
    def join(cls, segments: Sequence[Segment]) -> Columns:
        """Every segment's columns as one, speaker ids mapped onto one vocabulary."""
        vocab: dict[str, int] = {}
        ids, indptr, source = [], [np.zeros(1, dtype=np.int64)], []
        for seg in segments:
            mapping = np.array([vocab.setdefault(n, len(vocab)) for n in seg.speakers],
                               dtype=np.int32)
            ids.append(mapping[seg.speaker_ids] if len(mapping) else seg.speaker_ids)
            indptr.append(seg.speaker_indptr()[1:] + sum(len(i) for i in ids[:-1]))
            source.append(seg.rows["source"])
        return cls(list(vocab), np.concatenate(indptr),
                   np.concatenate([np.zeros(0, np.int32), *ids]).astype(np.int32),
                   np.concatenate([np.zeros(0, np.uint8), *source]))

    @cached_property
    def owner(self) -> np.ndarray:
        """The row each entry of ``speaker_ids`` belongs to (once per snapshot)."""
        return np.repeat(np.arange(len(self.indptr) - 1, dtype=np.int32),
                         np.diff(self.indptr))

    def rows_with_speaker(self, wanted: str) -> np.ndarray:
        """Rows with a speaker whose name contains ``wanted`` (case-insensitively): the
        vocabulary is matched once, then rows are selected by id."""
        matching = np.array([wanted.casefold() in name.casefold() for name in self.speakers]
                            + [False])
        found = np.zeros(len(self.indptr) - 1, dtype=bool)
        if len(self.speaker_ids):
            found[self.owner[matching[self.speaker_ids]]] = True
        return found


class ChunkTable(_Rows):
    """All rows of a snapshot (dead ones included) by global row number, read on demand."""

    def __init__(self, segments: Sequence[Segment], offsets: np.ndarray) -> None:
        self.segments, self.offsets = segments, offsets
        self.total = int(offsets[-1]) + len(segments[-1]) if segments else 0

    def __len__(self) -> int:
        return self.total

    def _read(self, row: int) -> ChunkRow:
        i = int(np.searchsorted(self.offsets, row, side="right")) - 1
        return self.segments[i].chunks[row - int(self.offsets[i])]


class NamedRows(_Rows):
    """A snapshot's rows as read with the local speaker names."""

    def __init__(self, rows: Sequence[ChunkRow], names: SpeakerNames) -> None:
        self.rows, self.names = rows, names

    def __len__(self) -> int:
        return len(self.rows)

    def _read(self, row: int) -> ChunkRow:
        return named_row(self.rows[row], self.names)


@dataclass(frozen=True)
class Snapshot:
    manifest: Manifest
    segments: list[Segment]
    offsets: np.ndarray  # int64: global row number of each segment's first row
    chunks: Sequence[ChunkRow]  # all rows, dead ones included (masked by ``live``)
    live: np.ndarray  # bool per row
    row_recording: np.ndarray  # int32 per row: index into ``recordings`` (-1 if dead)
    recordings: list[IndexedRecording]  # live recordings only
    by_id: dict[str, int]
    names: SpeakerNames = NO_NAMES  # the local speaker names it is read with

    def with_names(self, names: SpeakerNames) -> Snapshot:
        """This generation, as opened, read with ``names`` (``index.speakers``): its
        chunks, its recordings' speakers and the speaker filter. What was worked out once
        per snapshot (document lengths, the filter columns) is kept."""
        if not names:
            return self
        assert not self.names, "names apply to a snapshot as opened"
        fresh = replace(self, chunks=NamedRows(self.chunks, names), names=names,
                        recordings=[named_recording(r, names) for r in self.recordings])
        for key in ("doclen", "columns", "created_s", "folder_recordings", "titles"):
            if key in self.__dict__:
                fresh.__dict__[key] = self.__dict__[key]
        return fresh

    def speaker_rows(self, wanted: str) -> np.ndarray:
        """Rows with a speaker whose name, as read here, contains ``wanted`` (any case):
        the filter columns, then the rows of recordings with a local name told again."""
        found = self.columns.rows_with_speaker(wanted)
        renamed = [self.by_id[f] for f in self.names.by_file if f in self.by_id]
        if not renamed:
            return found
        key, cols = wanted.casefold(), self.columns
        for row in np.flatnonzero(np.isin(self.row_recording, renamed)).tolist():
            name_of = self.names.of(self.recordings[self.row_recording[row]].file_id)
            ids = cols.speaker_ids[cols.indptr[row]:cols.indptr[row + 1]]
            found[row] = any(key in named(name_of, cols.speakers[i]).casefold() for i in ids)
        return found

    @property
    def generation(self) -> int:
        return self.manifest.generation

    @property
    def model(self) -> ModelInfo:
        return self.manifest.model

    @property
    def live_chunks(self) -> int:
        return int(self.live.sum())

    @cached_property
    def doclen(self) -> np.ndarray:
        """Every row's BM25 document length, once per snapshot (not once per query)."""
        return np.concatenate([np.zeros(0, np.float32)] + [
            seg.rows["doclen"].astype(np.float32) for seg in self.segments])

    @cached_property
    def columns(self) -> Columns:
        """Built on first use (the first filtered query), then kept with the snapshot."""
        return Columns.join(self.segments)

    @cached_property
    def created_s(self) -> np.ndarray:
        """Each live recording's creation instant, seconds since the epoch, for date
        filters (one comparison per recording instead of a date per query)."""
        return np.array([r.created.timestamp() for r in self.recordings], dtype=np.float64)

    @cached_property
    def titles(self) -> TitleIndex:
        """The recordings' titles as a keyword index of their own (``index.titles``)."""
        return TitleIndex([r.title for r in self.recordings])

    @cached_property
    def folder_recordings(self) -> np.ndarray:
        return np.array([r.source_kind == "folder" for r in self.recordings], dtype=bool)

    @classmethod
    def build(cls, manifest: Manifest, segments: list[Segment]) -> Snapshot:
        """A row is live when its segment is at least as new as its recording's tombstone;
        a recording is live when its segment is."""
        dead = manifest.dead
        recordings: list[IndexedRecording] = []
        by_id: dict[str, int] = {}
        parts = [np.zeros(0, dtype=np.int32)]
        for seg in segments:
            local = np.full(len(seg.recordings), -1, dtype=np.int32)
            for i, rec in enumerate(seg.recordings):
                if seg.seq >= dead.get(rec.file_id, 0):
                    by_id[rec.file_id] = local[i] = len(recordings)
                    recordings.append(rec)
            parts.append(local[seg.rows["rec"]] if len(local) else
                         np.full(len(seg), -1, dtype=np.int32))
        rows = np.concatenate(parts)
        offsets = np.cumsum([0] + [len(s) for s in segments[:-1]], dtype=np.int64) \
            if segments else np.zeros(0, dtype=np.int64)
        return cls(manifest, segments, offsets, ChunkTable(segments, offsets), rows >= 0,
                   rows, recordings, by_id)

    def cosine(self, query: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
        """Dot products of the (normalised) query with every row, or with the rows in
        ``mask`` (the rest are 0): a filter that keeps few rows, or long runs of rows,
        reads only those vectors."""
        scores = np.empty(len(self.chunks), dtype=np.float32) if mask is None else \
            np.zeros(len(self.chunks), dtype=np.float32)
        query = query.astype(np.float32, copy=False)
        for seg, off in zip(self.segments, self.offsets, strict=True):
            if not len(seg):
                continue
            part = scores[off:off + len(seg)]
            wanted = None if mask is None else mask[off:off + len(seg)]
            if wanted is None or wanted.all():
                np.matmul(seg.vectors, query, out=part)
            elif wanted.any():
                selected_dots(seg.vectors, query, wanted, part)
            # unit rows and a unit query score within [-1, 1]: anything else (NaN
            # included) is a damaged row, which must never reach a ranking
            if not (np.abs(part) <= MAX_COSINE).all():
                raise IndexCorruptError(
                    f"The index file {seg.name}.vec.npy holds vectors that are not "
                    "unit vectors of numbers (damaged); the indexer rebuilds it from Plaud "
                    "on its next cycle (or delete the folder).")
        return scores

    def keyword_segments(self) -> list[tuple[Postings, int]]:
        return [(seg.postings, int(off)) for seg, off in zip(self.segments, self.offsets,
                                                             strict=True)]

    def rows_of(self, index: int, source: str | None = None) -> np.ndarray:
        """The live rows of recording ``index`` (into ``recordings``), in order; of one
        ``source`` ("transcript", "notes") if given."""
        rows = np.flatnonzero(self.row_recording == index)
        if source is not None:
            rows = rows[self.columns.source[rows] == SOURCE_CODES[source]]
        return rows

    def chunks_of(self, index: int, source: str | None = None) -> list[ChunkRow]:
        """The chunks of ``rows_of``, read (only these rows' lines are parsed)."""
        return [self.chunks[int(r)] for r in self.rows_of(index, source)]

    def vector_of(self, row: int) -> np.ndarray:
        i = int(np.searchsorted(self.offsets, row, side="right")) - 1
        return np.asarray(self.segments[i].vectors[row - int(self.offsets[i])])


GATHER_SHARE = 0.2  # a filter keeping fewer rows than this reads them one by one
GATHER_BLOCK = 16384  # rows copied at a time (24 MB of 384-d vectors)
RUN_ROWS = 64  # rows per run of a filter, on average, that make slices worth it


def selected_dots(vectors: np.ndarray, query: np.ndarray, wanted: np.ndarray,
                   out: np.ndarray) -> None:
    """``out[wanted] = vectors[wanted] @ query``: over slices when the wanted rows come in
    long runs (a date range), by gathering blocks of rows when they are few and scattered
    (a speaker), else the whole scan (the cheapest when most rows are wanted)."""
    edges = np.flatnonzero(np.diff(np.concatenate(([0], wanted.view(np.int8), [0]))))
    starts, stops = edges[::2], edges[1::2]
    selected = int((stops - starts).sum())
    if len(starts) * RUN_ROWS <= selected:
        for start, stop in zip(starts.tolist(), stops.tolist(), strict=True):
            np.matmul(vectors[start:stop], query, out=out[start:stop])
    elif selected < GATHER_SHARE * len(wanted):
        rows = np.flatnonzero(wanted)
        for i in range(0, len(rows), GATHER_BLOCK):
            block = rows[i:i + GATHER_BLOCK]
            out[block] = vectors[block] @ query
    else:
        np.matmul(vectors, query, out=out)
