"""One index cycle: list → diff → fetch changed → normalise → chunk → embed → commit.

Work is done in groups of ``commit_every`` recordings: each group's new chunks
are embedded in one call (full, length-sorted batches keep the model busy)
and committed, so a crash during a long first sync loses at most one group.
Chunks whose content hash is already in the index reuse their vector.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections import Counter
from collections.abc import Callable, Collection, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from .chunker import Chunker
from .config import INDEX_DIR
from .embedder import Embedder
from .errors import PlaudIndexError
from .index.snapshot import IndexedRecording, ModelInfo
from .index.writer import IndexWriter, open_writer
from .models import Chunk, Recording, SyncReport
from .plaud import RecordingSource
from .redact import redact
from .sync_policy import DeletionDecision, decide_deletions, plan_fetches
from .sync_state import SyncState, SyncStateStore

log = logging.getLogger(__name__)

COMMIT_EVERY = 25


def content_hash(recording: Recording) -> str:
    """Changes whenever anything the index derives from the recording changes."""
    payload = json.dumps([recording.title, recording.created_at.isoformat(),
                          [asdict(u) for u in recording.utterances],
                          [asdict(n) for n in recording.notes]], sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()


def indexed_record(recording: Recording, digest: str, chunks: int) -> IndexedRecording:
    return IndexedRecording(
        file_id=recording.file_id, title=recording.title,
        created_at=recording.created_at.isoformat(), duration_ms=recording.duration_ms,
        content_hash=digest, speakers=recording.speakers,
        note_titles=tuple(dict.fromkeys(n.note_title for n in recording.notes)),
        chunk_count=chunks,
    )


class Indexer:
    """One cycle over ``home``: the index in ``home/vector-index``, state in ``home``."""

    def __init__(self, source: RecordingSource, embedder: Embedder, home: Path, *,
                 chunker: Chunker | None = None, commit_every: int = COMMIT_EVERY,
                 revalidate: Collection[str] = (), interval_s: float = 300.0,
                 should_stop: Callable[[], bool] = lambda: False,
                 clock: Callable[[], float] = time.time) -> None:
        self.source = source
        self.embedder = embedder
        self.index_dir = home / INDEX_DIR
        self.state = SyncStateStore(home)
        self.chunker = chunker or Chunker(embedder.count_tokens, max_tokens=embedder.max_tokens)
        self.commit_every = commit_every
        # Ids to re-fetch even though the list shows no sign of change (the list has
        # no change markers, API.md §3.1); content hashes then decide what changed.
        self.revalidate = set(revalidate)
        self.interval_s = interval_s  # sizes the rolling revalidation window
        self.should_stop = should_stop  # checked after each commit (SIGTERM)
        self.clock = clock

    @property
    def model(self) -> ModelInfo:
        return ModelInfo(self.embedder.model_id, self.embedder.model_hash, self.embedder.dim)

    def run_cycle(self) -> SyncReport:
        started = self.clock()
        try:
            report, remembered = self._cycle(started, self.state.read())
        except PlaudIndexError as exc:
            self.state.update(last_attempt=started, last_error=redact(str(exc)),
                              last_error_kind=type(exc).__name__, progress=None)
            raise
        self.state.update(last_attempt=started, last_error=None, last_error_kind=None,
                          progress=None, last_success=self.clock(), last_report=asdict(report),
                          **remembered)
        return report

    def _cycle(self, started: float, state: SyncState) -> tuple[SyncReport, dict[str, Any]]:
        """Returns the report and what the next cycle must remember."""
        writer = open_writer(self.index_dir, self.model, self.clock)
        listing = self.source.list_recordings(tail_hint=state.list_tail)
        known = writer.recordings()
        checked = {k: v for k, v in state.checked.items() if k in listing}
        plan = plan_fetches(listing, known, checked, started, self.interval_s, self.revalidate)
        log.info("Plaud lists %d recordings; fetching %d (new %d, processing %d, renamed %d, "
                 "recent %d, rolling re-check %d)", len(listing), len(plan.ids), plan.new,
                 plan.processing, plan.renamed, plan.recent, plan.rolling)
        todo, counts, errors, stopped = plan.ids, Counter[str](), [], False
        for start in range(0, len(todo), self.commit_every):
            group = todo[start:start + self.commit_every]
            errors += self._index_group(writer, group, known, counts)
            if writer.commit():
                counts["commits"] += 1
            checked.update({fid: self.clock() for fid in group})
            done = start + len(group)
            self.state.update(progress={"done": done, "total": len(todo)})
            rate = done / max(self.clock() - started, 1e-6)
            log.info("Indexed %d of %d recordings (%.1f/s, ETA %.0fs)", done, len(todo), rate,
                     (len(todo) - done) / rate if rate else 0)
            if self.should_stop() and done < len(todo):
                log.info("Stopping after this commit; %d recordings resume next start",
                         len(todo) - done)
                stopped = True
                break
        decision = DeletionDecision([], state.held_deletion, None) if stopped else \
            decide_deletions(set(listing), set(known), state.held_deletion)
        if decision.warning:
            log.warning("%s", decision.warning)
        for file_id in decision.delete:
            writer.delete(file_id)
        if writer.commit():
            counts["commits"] += 1
        if writer.rebuilding and not errors and not stopped:
            writer.promote()
        processing = sum(1 for r in writer.recordings().values() if r.chunk_count == 0)
        remembered = {"checked": checked, "held_deletion": decision.hold,
                      "processing": processing, "list_tail": next(reversed(listing), None)}
        report = SyncReport(
            listed=len(listing), deleted=len(decision.delete),
            unchanged=counts.pop("unchanged", 0) + len(listing) - len(todo),
            seconds=round(self.clock() - started, 3), errors=tuple(errors), **counts)
        return report, remembered

    def _index_group(self, writer: IndexWriter, group: Sequence[str],
                     known: dict[str, IndexedRecording], counts: Counter[str]) -> list[str]:
        errors: list[str] = []
        prepared: list[tuple[Recording, str, list[Chunk]]] = []
        for file_id in group:
            try:
                recording = self.source.get_recording(file_id)
            except PlaudIndexError as exc:
                log.warning("Skipping recording %s: %s", file_id, exc)
                errors.append(f"{file_id}: {exc}")
                counts["skipped"] += 1
                continue
            counts["fetched"] += 1
            digest = content_hash(recording)
            previous = known.get(recording.file_id)
            if previous and previous.content_hash == digest:
                counts["unchanged"] += 1
                continue
            prepared.append((recording, digest, self.chunker.chunk(recording)))
            counts["updated" if previous else "added"] += 1
        vectors: dict[str, np.ndarray] = {}
        fresh = []
        for chunk in (c for _, _, chunks in prepared for c in chunks):
            known_vector = writer.known_vector(chunk.chunk_id)
            if known_vector is None:
                fresh.append(chunk)
            else:
                vectors[chunk.chunk_id] = known_vector
        counts["chunks_reused"] += len(vectors)
        counts["chunks_embedded"] += len(fresh)
        vectors.update(zip((c.chunk_id for c in fresh),
                           self.embedder.embed([c.embed_text for c in fresh]), strict=True))
        for recording, digest, chunks in prepared:
            rows = [vectors[c.chunk_id] for c in chunks]
            matrix = np.array(rows, dtype=np.float32).reshape(len(chunks), self.model.dim)
            writer.put(indexed_record(recording, digest, len(chunks)), chunks, matrix)
        return errors
