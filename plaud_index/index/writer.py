"""The writer side of the on-disk index (see ``store.py`` for the layout and rules).

The caller holds the indexer lock, so there is one writer at a time; any
number of readers open snapshots meanwhile and never see a torn state.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from ..analyzer import VERSION as ANALYZER
from ..errors import IndexCorruptError
from ..fsio import atomic_file, fsync_dir, write_json_atomic
from ..models import Chunk
from .manifest import (
    MANIFEST,
    SCHEMA_VERSION,
    STAGED,
    Manifest,
    ModelInfo,
    SegmentEntry,
    read_manifest,
)
from .postings import build_postings
from .snapshot import ChunkRow, IndexedRecording, Segment, Snapshot
from .store import SUFFIXES, file_records, load_segment, load_segments, verify_checksums

log = logging.getLogger(__name__)

MAX_SEGMENTS = 12
MAX_DEAD_FRACTION = 0.3

Clock = Callable[[], float]
# Segment files whose checksums this process has verified, by inode, mtime and size: our
# files are never rewritten, so a daemon checks each once, and again only if something
# else wrote to it (``indexer --once`` checks them all every run).
_VERIFIED: set[tuple[object, ...]] = set()


def _identity(directory: Path, name: str) -> tuple[object, ...]:
    stats = [(directory / f"{name}{suffix}").stat() for suffix in SUFFIXES]
    return (directory, name, *((st.st_ino, st.st_mtime_ns, st.st_size) for st in stats))


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=timezone.utc).isoformat(timespec="seconds")


def open_writer(directory: Path, model: ModelInfo, clock: Clock = time.time) -> IndexWriter:
    """A writer for ``model``. A different model than the live index builds a new index
    beside it (``manifest.next.json``) that replaces the old one on ``promote()``; so does
    a live index that cannot be trusted (a damaged or missing file): the source is the
    truth, and it is indexed again. An index whose postings an older analyser made is
    re-tokenised first (vectors are kept)."""
    _make_dir(directory)
    try:
        live = read_manifest(directory / MANIFEST)
        if live is None or live.model == model:
            writer = IndexWriter(directory, MANIFEST, live, model, clock)
            writer.upgrade()
            return writer
        log.warning("Embedding model changed (%s -> %s): re-indexing everything; searches "
                    "use the old index until the new one is complete", live.model.model_id,
                    model.model_id)
    except IndexCorruptError as exc:
        log.error("%s Rebuilding the index beside it; it replaces the damaged one when "
                  "complete.", exc)
    return _staged_writer(directory, model, clock)


def _make_dir(directory: Path) -> None:
    try:
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    except (FileExistsError, NotADirectoryError) as exc:
        raise IndexCorruptError(f"{directory} is a file, not the index folder; move it away "
                                "and the indexer builds the index there.") from exc


def _staged_writer(directory: Path, model: ModelInfo, clock: Clock) -> IndexWriter:
    """The rebuild beside the live index, resumed if one for ``model`` is under way."""
    try:
        staged = read_manifest(directory / STAGED)
        if staged is not None and staged.model == model:
            writer = IndexWriter(directory, STAGED, staged, model, clock)
            writer.upgrade()
            return writer
    except IndexCorruptError as exc:  # a half-built rebuild of ours: start it again
        log.warning("%s Starting the rebuild again.", exc)
    (directory / STAGED).unlink(missing_ok=True)
    return IndexWriter(directory, STAGED, None, model, clock)


class IndexWriter:
    def __init__(self, directory: Path, target: str, manifest: Manifest | None,
                 model: ModelInfo, clock: Clock) -> None:
        self.directory = directory
        self.target = target
        self.model = model
        self.clock = clock
        now = _iso(clock())
        self.manifest = manifest or Manifest(model=model, analyzer=ANALYZER, created_at=now,
                                             updated_at=now)
        try:
            segments = load_segments(directory, self.manifest)
        except FileNotFoundError as exc:  # the writer holds the lock: nothing races it
            raise IndexCorruptError(f"The index file {exc.filename} is missing.") from exc
        for entry in self.manifest.segments:
            key = _identity(directory, entry.name)
            if key not in _VERIFIED:
                verify_checksums(directory, entry)
                _VERIFIED.add(key)
        self.snapshot = Snapshot.build(self.manifest, segments)
        self._pending: dict[str, tuple[IndexedRecording, list[Chunk], np.ndarray]] = {}
        self._deletes: set[str] = set()
        self._rows_by_chunk: dict[str, int] | None = None

    @property
    def rebuilding(self) -> bool:
        return self.target == STAGED

    @property
    def pending(self) -> int:
        return len(self._pending) + len(self._deletes)

    def recordings(self) -> dict[str, IndexedRecording]:
        """Committed recordings as this writer's target index knows them."""
        return {r.file_id: r for r in self.snapshot.recordings}

    def known_vector(self, chunk_id: str) -> np.ndarray | None:
        """The committed vector of a live chunk with this id, so it is not embedded again."""
        if self._rows_by_chunk is None:
            self._rows_by_chunk = {c.chunk_id: row for row, c in enumerate(self.snapshot.chunks)
                                   if self.snapshot.live[row]}
        row = self._rows_by_chunk.get(chunk_id)
        return None if row is None else self.snapshot.vector_of(row)

    def put(self, recording: IndexedRecording, chunks: Sequence[Chunk],
            vectors: np.ndarray) -> None:
        if vectors.shape != (len(chunks), self.model.dim):
            raise ValueError(f"expected {len(chunks)}x{self.model.dim} vectors, "
                             f"got {vectors.shape}")
        self._deletes.discard(recording.file_id)
        self._pending[recording.file_id] = (recording, list(chunks), vectors)

    def delete(self, file_id: str) -> None:
        self._pending.pop(file_id, None)
        if file_id in self.snapshot.by_id:
            self._deletes.add(file_id)

    def commit(self) -> bool:
        """Make everything put/deleted so far durable and visible. False if nothing to do."""
        if not self.pending:
            return False
        seq = self.manifest.next_seq
        entries = list(self.manifest.segments)
        loaded = list(self.snapshot.segments)
        dead = dict(self.manifest.dead)
        for file_id in [*self._pending, *self._deletes]:
            if file_id in self.snapshot.by_id:
                dead[file_id] = seq
        if self._pending:
            recs = [rec for rec, _, _ in self._pending.values()]
            chunks = [c for _, cs, _ in self._pending.values() for c in cs]
            vectors = np.concatenate([v for _, _, v in self._pending.values()]) if chunks \
                else np.zeros((0, self.model.dim), dtype=np.float32)
            rows = [ChunkRow.from_chunk(c) for c in chunks]
            entry = self._write_segment(seq, rows, recs, vectors)
            entries.append(entry)
            loaded.append(load_segment(self.directory, entry))
        self._publish(entries, loaded, dead, seq + 1)
        self._pending.clear()
        self._deletes.clear()
        if self._needs_compaction():
            self.compact()
        return True

    def promote(self) -> None:
        """A completed re-index for a new model becomes the live index."""
        if not self.rebuilding:
            return
        live = self.directory / MANIFEST
        if live.is_dir():  # damage where the manifest belongs: an empty folder can go
            try:
                live.rmdir()
            except OSError as exc:
                raise IndexCorruptError(f"{live} is a folder, not an index manifest; move it "
                                        "away so the rebuilt index can take its place.") from exc
        os.replace(self.directory / STAGED, live)
        fsync_dir(self.directory)
        self.target = MANIFEST
        log.info("The re-index for %s is complete and now live", self.model.model_id)
        self._collect_garbage()

    def compact(self) -> None:
        """Fold every live row into one new segment; drop the tombstones."""
        snap = self.snapshot
        seq = self.manifest.next_seq
        rows = [c for i, c in enumerate(snap.chunks) if snap.live[i]]
        parts = [np.asarray(seg.vectors)[snap.live[off:off + len(seg.chunks)]]
                 for seg, off in zip(snap.segments, snap.offsets, strict=True)]
        vectors = np.concatenate([np.zeros((0, self.model.dim), np.float32), *parts])
        entry = self._write_segment(seq, rows, snap.recordings, vectors)
        self._publish([entry], [load_segment(self.directory, entry)], {}, seq + 1)
        log.info("Compacted the index into %s (%d chunks)", entry.name, len(rows))

    def upgrade(self) -> None:
        """Bring an index of an older schema up to this one without re-embedding: the
        postings are made again from the stored chunk text with today's analyser; the
        vectors and metadata files are shared (hard links) with the old segments."""
        if self.manifest.analyzer == ANALYZER and self.manifest.schema == SCHEMA_VERSION:
            return
        log.warning("The index at %s was made by an older version (schema %d, analyser %s): "
                    "re-tokenising %d chunks for the %s analyser (vectors are kept)",
                    self.directory, self.manifest.schema, self.manifest.analyzer,
                    len(self.snapshot.chunks), ANALYZER)
        entries, loaded = [], []
        for seg in self.snapshot.segments:
            name = f"seg-{seg.seq:06d}-{secrets.token_hex(4)}"
            for suffix in (".vec.npy", ".meta.json"):
                os.link(self.directory / f"{seg.name}{suffix}", self.directory / f"{name}{suffix}")
            self._write_postings(name, [c.text for c in seg.chunks])
            fsync_dir(self.directory)
            entry = SegmentEntry(name, seg.seq, len(seg.chunks), file_records(self.directory, name))
            entries.append(entry)
            loaded.append(load_segment(self.directory, entry))
        self._publish(entries, loaded, dict(self.manifest.dead), self.manifest.next_seq)

    def _needs_compaction(self) -> bool:
        total = len(self.snapshot.chunks)
        dead_rows = total - self.snapshot.live_chunks
        return len(self.manifest.segments) > MAX_SEGMENTS or (
            total > 0 and dead_rows / total > MAX_DEAD_FRACTION)

    def _write_postings(self, name: str, texts: list[str]) -> None:
        with atomic_file(self.directory / f"{name}.kw.npz") as fh:
            postings = build_postings(texts)
            np.savez(fh, terms=postings.terms, offsets=postings.offsets, rows=postings.rows,
                     tfs=postings.tfs, doclen=postings.doclen)

    def _write_segment(self, seq: int, rows: list[ChunkRow], recordings: list[IndexedRecording],
                       vectors: np.ndarray) -> SegmentEntry:
        name = f"seg-{seq:06d}-{secrets.token_hex(4)}"
        meta = {"seq": seq, "model": self.model.to_json(),
                "chunks": [r.to_json() for r in rows],
                "recordings": [r.to_json() for r in recordings]}
        with atomic_file(self.directory / f"{name}.vec.npy") as fh:
            np.save(fh, np.ascontiguousarray(vectors, dtype=np.float32))
        self._write_postings(name, [r.text for r in rows])
        with atomic_file(self.directory / f"{name}.meta.json") as fh:
            fh.write(json.dumps(meta, separators=(",", ":")).encode())
        fsync_dir(self.directory)
        _VERIFIED.add(_identity(self.directory, name))
        return SegmentEntry(name, seq, len(rows), file_records(self.directory, name))

    def _publish(self, entries: list[SegmentEntry], loaded: list[Segment],
                 dead: dict[str, int], next_seq: int) -> None:
        manifest = self.manifest.advance(schema=SCHEMA_VERSION, analyzer=ANALYZER,
                                         segments=tuple(entries), dead=dead, next_seq=next_seq,
                                         updated_at=_iso(self.clock()))
        snapshot = Snapshot.build(manifest, loaded)
        manifest = replace(manifest, counts={"recordings": len(snapshot.recordings),
                                             "chunks": snapshot.live_chunks})
        write_json_atomic(self.directory / self.target, manifest.to_json())
        self.manifest, self.snapshot = manifest, replace(snapshot, manifest=manifest)
        self._rows_by_chunk = None
        self._collect_garbage()

    def _collect_garbage(self) -> None:
        """Remove segment files no manifest names, and temp files of crashed writers.

        Safe while readers run: a reader that opened a segment keeps its mapping, and
        one that read an older manifest retries when a file it names is gone."""
        referenced: set[str] = set()
        for name in (MANIFEST, STAGED):
            try:
                manifest = read_manifest(self.directory / name)
            except IndexCorruptError:
                return  # files a damaged manifest may name are left alone until it is replaced
            if manifest:
                referenced.update(s.name for s in manifest.segments)
        for path in self.directory.iterdir():
            stem = path.name.split(".", 1)[0]
            try:
                stale_tmp = path.name.startswith(".tmp-") and \
                    time.time() - path.stat().st_mtime > 60
                if (path.name.startswith("seg-") and stem not in referenced) or stale_tmp:
                    path.rmdir() if path.is_dir() else path.unlink(missing_ok=True)
            except OSError as exc:  # leftovers are harmless; never fail a commit over them
                log.debug("Cannot remove %s: %s", path, exc)
