"""One committed generation of the index, in memory: what search reads. Pure.

Vectors stay memory-mapped per segment; metadata is lists; liveness (after
tombstones) is one boolean mask over all rows, and every row knows its
recording, so filters and per-recording collapse are numpy operations.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import IndexCorruptError
from .postings import Postings

if TYPE_CHECKING:  # the shapes only: this module reads no file
    from .manifest import Manifest, ModelInfo


@dataclass(frozen=True)
class ChunkRow:
    chunk_id: str
    file_id: str
    source: str
    text: str
    start_ms: int | None
    end_ms: int | None
    speakers: tuple[str, ...]
    heading: str
    line_ms: tuple[int | None, ...] = ()
    line_speakers: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "speakers": list(self.speakers), "line_ms": list(self.line_ms),
                "line_speakers": list(self.line_speakers)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ChunkRow:
        return cls(data["chunk_id"], data["file_id"], data["source"], data["text"],
                   data.get("start_ms"), data.get("end_ms"), tuple(data.get("speakers", ())),
                   data.get("heading", ""), tuple(data.get("line_ms", ())),
                   tuple(data.get("line_speakers", ())))

    @classmethod
    def from_chunk(cls, c: Any) -> ChunkRow:
        return cls(c.chunk_id, c.file_id, c.source, c.text, c.start_ms, c.end_ms, c.speakers,
                   c.heading, c.line_ms, c.line_speakers)


@dataclass(frozen=True)
class IndexedRecording:
    """What the index keeps about a recording besides its chunks."""

    file_id: str
    title: str
    created_at: str  # ISO-8601, UTC
    duration_ms: int
    content_hash: str
    speakers: tuple[str, ...]
    note_titles: tuple[str, ...]
    chunk_count: int
    origin: str = ""  # a folder file's path; "" for Plaud recordings

    @property
    def source_kind(self) -> str:
        return "folder" if self.file_id.startswith("folder:") else "plaud"

    @property
    def created(self) -> datetime:
        """The creation instant, always timezone-aware (UTC when the text has no offset)."""
        created = datetime.fromisoformat(self.created_at)
        return created if created.tzinfo else created.replace(tzinfo=timezone.utc)

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "speakers": list(self.speakers),
                "note_titles": list(self.note_titles)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> IndexedRecording:
        return cls(data["file_id"], data["title"], data["created_at"],
                   int(data.get("duration_ms", 0)), data["content_hash"],
                   tuple(data.get("speakers", ())), tuple(data.get("note_titles", ())),
                   int(data.get("chunk_count", 0)), str(data.get("origin", "")))


@dataclass(frozen=True)
class Segment:
    name: str
    seq: int
    vectors: np.ndarray  # (rows, dim) float32, memory-mapped
    postings: Postings
    chunks: list[ChunkRow]
    recordings: list[IndexedRecording]


SOURCE_CODES = {"transcript": 0, "notes": 1}


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
    def of(cls, chunks: list[ChunkRow]) -> Columns:
        vocab: dict[str, int] = {}
        ids: list[int] = []
        indptr = [0]
        for chunk in chunks:
            ids.extend(vocab.setdefault(name, len(vocab)) for name in chunk.speakers)
            indptr.append(len(ids))
        return cls(list(vocab), np.array(indptr, dtype=np.int64),
                   np.array(ids, dtype=np.int32),
                   np.array([SOURCE_CODES.get(c.source, 255) for c in chunks], dtype=np.uint8))

    def rows_with_speaker(self, wanted: str) -> np.ndarray:
        """Rows with a speaker whose name contains ``wanted`` (case-insensitively): the
        vocabulary is matched once, then rows are selected by id."""
        matching = np.array([wanted.casefold() in name.casefold() for name in self.speakers]
                            + [False])
        hits = matching[self.speaker_ids] if len(self.speaker_ids) else \
            np.zeros(0, dtype=bool)
        total = np.concatenate([[0], np.cumsum(hits, dtype=np.int64)])
        found: np.ndarray = (total[self.indptr[1:]] - total[self.indptr[:-1]]) > 0
        return found


@dataclass(frozen=True)
class Snapshot:
    manifest: Manifest
    segments: list[Segment]
    offsets: list[int]  # global row offset of each segment
    chunks: list[ChunkRow]  # all rows, dead ones included (masked by ``live``)
    live: np.ndarray  # bool per row
    row_recording: np.ndarray  # int32 per row: index into ``recordings`` (-1 if dead)
    recordings: list[IndexedRecording]  # live recordings only
    by_id: dict[str, int]

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
        parts = [seg.postings.doclen for seg in self.segments]
        return np.concatenate(parts).astype(np.float32) if parts else \
            np.zeros(0, dtype=np.float32)

    @cached_property
    def columns(self) -> Columns:
        """Built on first use (the first filtered query), then kept with the snapshot."""
        return Columns.of(self.chunks)

    @classmethod
    def build(cls, manifest: Manifest, segments: list[Segment]) -> Snapshot:
        dead = manifest.dead
        recordings: list[IndexedRecording] = []
        by_id: dict[str, int] = {}
        for seg in segments:
            for rec in seg.recordings:
                if seg.seq >= dead.get(rec.file_id, 0):
                    by_id[rec.file_id] = len(recordings)
                    recordings.append(rec)
        chunks: list[ChunkRow] = []
        offsets: list[int] = []
        row_recording: list[int] = []
        for seg in segments:
            offsets.append(len(chunks))
            for chunk in seg.chunks:
                alive = seg.seq >= dead.get(chunk.file_id, 0)
                row_recording.append(by_id.get(chunk.file_id, -1) if alive else -1)
            chunks.extend(seg.chunks)
        rows = np.array(row_recording, dtype=np.int32)
        return cls(manifest, segments, offsets, chunks, rows >= 0, rows, recordings, by_id)

    def cosine(self, query: np.ndarray) -> np.ndarray:
        """Dot products of the (normalised) query with every row; dead rows included."""
        parts = [np.asarray(seg.vectors @ query, dtype=np.float32) for seg in self.segments
                 if len(seg.chunks)]
        scores = np.concatenate(parts) if parts else np.zeros(0, dtype=np.float32)
        if not np.isfinite(scores).all():  # damaged vector bytes must never reach a score
            bad = next(seg.name for seg, part in zip(
                [s for s in self.segments if len(s.chunks)], parts, strict=True)
                if not np.isfinite(part).all())
            raise IndexCorruptError(f"The index file {bad}.vec.npy holds vectors that are "
                                    "not numbers (damaged); the indexer rebuilds it from "
                                    "Plaud on its next cycle (or delete the folder).")
        return scores

    def keyword_segments(self) -> list[tuple[Postings, int]]:
        return [(seg.postings, off) for seg, off in zip(self.segments, self.offsets, strict=True)]

    def vector_of(self, row: int) -> np.ndarray:
        for seg, off in zip(reversed(self.segments), reversed(self.offsets), strict=True):
            if row >= off:
                return np.asarray(seg.vectors[row - off])
        raise IndexError(row)
