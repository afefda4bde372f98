"""The writer side of the on-disk index (see ``store.py`` for the layout and rules).

The caller holds the indexer lock, so there is one writer at a time; any
number of readers open snapshots meanwhile and never see a torn state.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from ..errors import IndexCorruptError
from ..fsio import fsync_dir, write_json_atomic
from ..models import Chunk
from . import segment_files
from .analyzer import VERSION as ANALYZER
from .garbage import referenced_segments, remove_unreferenced
from .manifest import (
    MANIFEST,
    SCHEMA_VERSION,
    STAGED,
    Manifest,
    ModelInfo,
    SegmentEntry,
    read_manifest,
)
from .merge import merge, plan_merge
from .records import ChunkRow, IndexedRecording
from .segment_files import write_segment
from .snapshot import Segment, Snapshot
from .store import FIRST_ARRAY_SCHEMA, load_segments
from .trust import Trust

log = logging.getLogger(__name__)

Clock = Callable[[], float]


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=timezone.utc).isoformat(timespec="seconds")


def open_writer(directory: Path, model: ModelInfo, clock: Clock = time.time,
                damage_met: str | None = None) -> IndexWriter:
    """A writer for ``model``. A different model than the live index builds a new index
    beside it (``manifest.next.json``) that replaces the old one on ``promote()``; so does
    a live index that cannot be trusted (a damaged or missing file, or one named in
    ``damage_met``, what a reader met since the last good cycle: damage in a row the checks
    at open do not parse): the source is the truth, and it is indexed again. An index whose
    postings an older analyser made is re-tokenised first (vectors are kept)."""
    _make_dir(directory)
    try:
        live = read_manifest(directory / MANIFEST)
        if live is not None and damage_met:
            _refuse_named(live, damage_met)
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


def _refuse_named(live: Manifest, damage_met: str) -> None:
    """A reader's message names the file it met damaged; segment names are unique (a
    sequence number and a content hash), so a live segment named there is the damage."""
    if any(entry.name in damage_met for entry in live.segments):
        raise IndexCorruptError(damage_met)


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
        self.trust = Trust(directory, clock)
        try:
            segments = load_segments(directory, self.manifest,
                                     self.trust.trusted(self.manifest.segments))
            self.trust.verify(self.manifest.segments)
        except FileNotFoundError as exc:  # the writer holds the lock: nothing races it
            raise IndexCorruptError(f"The index file {exc.filename} is missing.") from exc
        self.trust.save(referenced_segments(directory)
                        or {e.name for e in self.manifest.segments})
        self.snapshot = Snapshot.build(self.manifest, segments)
        self._pending: dict[str, tuple[IndexedRecording, list[Chunk], np.ndarray]] = {}
        self._deletes: set[str] = set()
        self._known: dict[str, dict[str, int]] = {}
        self.merges = 0

    @property
    def rebuilding(self) -> bool:
        return self.target == STAGED

    @property
    def pending(self) -> int:
        return len(self._pending) + len(self._deletes)

    def recordings(self) -> dict[str, IndexedRecording]:
        """Committed recordings as this writer's target index knows them."""
        return {r.file_id: r for r in self.snapshot.recordings}

    def known_vector(self, chunk: Chunk) -> np.ndarray | None:
        """The committed vector of this chunk of a live recording, so it is not embedded
        again. Only that recording's rows are read."""
        rows = self._known.get(chunk.file_id)
        if rows is None:
            index = self.snapshot.by_id.get(chunk.file_id)
            rows = {} if index is None else {self.snapshot.chunks[int(r)].chunk_id: int(r)
                                             for r in self.snapshot.rows_of(index)}
            self._known[chunk.file_id] = rows
        row = rows.get(chunk.chunk_id)
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

    def commit(self, merge: bool = True) -> bool:
        """Make everything put/deleted so far durable and visible, then (``merge``) merge
        what the policy asks for. False if there was nothing to do."""
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
            chunks = [ChunkRow.from_chunk(c) for _, cs, _ in self._pending.values() for c in cs]
            vectors = np.concatenate([np.zeros((0, self.model.dim), np.float32)]
                                     + [v for _, _, v in self._pending.values()])
            entry = write_segment(self.directory, seq, self.model, chunks, recs, vectors)
            self.trust.vouch(entry)
            entries.append(entry)
            loaded.append(segment_files.load_segment(self.directory, entry, deep=False))
        self._publish(entries, loaded, dead, seq + 1)
        self._pending.clear()
        self._deletes.clear()
        if merge:
            self.merge_tiers()
        return True

    def merge_tiers(self) -> None:
        """Merge until the policy is content (one merge can make the next tier full)."""
        while positions := plan_merge(*self._sizes()):
            self._merge(positions)

    def compact(self) -> None:
        """Fold every live row into one segment; drop the tombstones."""
        if self.snapshot.segments:
            self._merge(list(range(len(self.snapshot.segments))))

    def _sizes(self) -> tuple[list[int], list[int]]:
        snap = self.snapshot
        alive = np.concatenate([[0], np.cumsum(snap.live, dtype=np.int64)])
        ends = [int(off) + len(seg) for seg, off in zip(snap.segments, snap.offsets,
                                                        strict=True)]
        return [len(s) for s in snap.segments], [
            int(alive[end] - alive[int(off)]) for end, off in zip(ends, snap.offsets,
                                                                  strict=True)]

    def _merge(self, positions: list[int]) -> None:
        snap, dead = self.snapshot, self.manifest.dead
        seq = self.manifest.next_seq
        chosen = [snap.segments[p] for p in positions]
        keeps = [np.asarray(snap.live[int(snap.offsets[p]):int(snap.offsets[p]) + len(seg)])
                 for p, seg in zip(positions, chosen, strict=True)]
        kept_recordings = [np.array([seg.seq >= dead.get(r.file_id, 0) for r in seg.recordings],
                                    dtype=bool) for seg in chosen]
        entry = merge(self.directory, seq, self.model, chosen, keeps, kept_recordings)
        merged = set(positions)
        others = [p for p in range(len(snap.segments)) if p not in merged]
        entries = [self.manifest.segments[p] for p in others]
        loaded = [snap.segments[p] for p in others]
        if entry is not None:
            self.trust.vouch(entry)
            entries.append(entry)
            loaded.append(segment_files.load_segment(self.directory, entry, deep=False))
        # a tombstone matters while an older segment still holds the recording
        held = [(seg.seq, {r.file_id for r in seg.recordings}) for seg in loaded]
        tombstones = {f: s for f, s in dead.items()
                      if any(seq_ < s and f in ids for seq_, ids in held)}
        self._publish(entries, loaded, tombstones, seq + 1)
        self.merges += 1
        total = sum(len(s) for s in chosen)
        kept = entry.rows if entry else 0
        # what happened, in words: rows of deleted or replaced recordings are dropped
        log.info("Merged %d segment%s (%d rows): %s", len(chosen),
                 "" if len(chosen) == 1 else "s", total,
                 f"kept {kept} rows in {entry.name}, dropped {total - kept} replaced or "
                 "deleted" if entry else f"all {total} rows were replaced or deleted, so no "
                 "segment is left of them")

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

    def upgrade(self) -> None:
        """Bring an index of an older schema or analyser up to this one without
        re-embedding: each segment is written again in today's format from its own rows
        (vectors kept; postings made again only when the analyser changed)."""
        old = self.manifest
        if old.analyzer == ANALYZER and old.schema == SCHEMA_VERSION:
            return
        log.warning("The index at %s was written by an older version (schema %d, analyser "
                    "%s): converting its %d segments (%d chunks) to schema %d with the %s "
                    "analyser; the vectors are kept, nothing is embedded again",
                    self.directory, old.schema, old.analyzer, len(old.segments),
                    len(self.snapshot.chunks), SCHEMA_VERSION, ANALYZER)
        retokenise = old.schema >= FIRST_ARRAY_SCHEMA and old.analyzer != ANALYZER
        entries, loaded = [], []
        for seg in self.snapshot.segments:
            entry = write_segment(self.directory, seg.seq, self.model, list(seg.chunks),
                                  seg.recordings, seg.vectors,
                                  None if retokenise else seg.postings)
            self.trust.vouch(entry)
            entries.append(entry)
            loaded.append(segment_files.load_segment(self.directory, entry, deep=False))
        self._publish(entries, loaded, dict(old.dead), old.next_seq)

    def _publish(self, entries: list[SegmentEntry], loaded: list[Segment],
                 dead: dict[str, int], next_seq: int) -> None:
        manifest = self.manifest.advance(schema=SCHEMA_VERSION, analyzer=ANALYZER,
                                         segments=tuple(entries), dead=dead, next_seq=next_seq,
                                         updated_at=_iso(self.clock()))
        snapshot = Snapshot.build(manifest, loaded)
        manifest = replace(manifest, counts={"recordings": len(snapshot.recordings),
                                             "chunks": snapshot.live_chunks})
        # vouched for before a reader can see them: it need not check them again
        self.trust.save((referenced_segments(self.directory) or set())
                        | {e.name for e in entries})
        write_json_atomic(self.directory / self.target, manifest.to_json())
        self.manifest, self.snapshot = manifest, replace(snapshot, manifest=manifest)
        self._known = {}
        self._collect_garbage()

    def _collect_garbage(self) -> None:
        referenced = referenced_segments(self.directory)
        if referenced is not None:
            self.trust.save(referenced)
            remove_unreferenced(self.directory, referenced)
