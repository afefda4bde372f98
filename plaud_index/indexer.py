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
from collections.abc import Callable, Collection, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from .chunker import Chunker
from .documents import normalize_recording
from .embedder import Embedder
from .errors import PlaudIndexError, SourceError
from .models import Chunk, Recording, SyncReport
from .redact import redact
from .snapshot import IndexedRecording, ModelInfo
from .store import write_json_atomic
from .sync_policy import DeletionDecision, decide_deletions, plan_fetches
from .writer import IndexWriter, open_writer

log = logging.getLogger(__name__)

COMMIT_EVERY = 25
SYNC_STATE = "sync-state.json"


class RecordingSource(Protocol):
    def list_files(self, tail_hint: str | None = None) -> list[dict[str, Any]]: ...

    def get_file(self, file_id: str) -> dict[str, Any]: ...


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


@dataclass
class _Counts:
    fetched: int = 0
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    skipped: int = 0
    embedded: int = 0
    reused: int = 0
    commits: int = 0


class Indexer:
    def __init__(self, source: RecordingSource, embedder: Embedder, index_dir: Path, *,
                 chunker: Chunker | None = None, commit_every: int = COMMIT_EVERY,
                 revalidate: Collection[str] = (), interval_s: float = 300.0,
                 should_stop: Callable[[], bool] = lambda: False,
                 clock: Callable[[], float] = time.time) -> None:
        self.source = source
        self.embedder = embedder
        self.index_dir = index_dir
        self.chunker = chunker or Chunker(embedder.count_tokens)
        self.commit_every = commit_every
        # Ids to re-fetch even though the list shows no sign of change (the list has
        # no change markers, API.md §3.1); content hashes then decide what changed.
        self.revalidate = set(revalidate)
        self.interval_s = interval_s  # sizes the rolling revalidation window
        self.should_stop = should_stop  # checked after each commit (SIGTERM)
        self.clock = clock
        self._state_update: dict[str, Any] = {}

    @property
    def model(self) -> ModelInfo:
        return ModelInfo(self.embedder.model_id, self.embedder.model_hash, self.embedder.dim)

    def run_cycle(self) -> SyncReport:
        started = self.clock()
        try:
            report = self._cycle(started)
        except PlaudIndexError as exc:
            self._write_state(started, error=redact(str(exc)), kind=type(exc).__name__)
            raise
        self._write_state(started, report=report)
        return report

    def _cycle(self, started: float) -> SyncReport:
        writer = open_writer(self.index_dir, self.model, self.clock)
        state = read_sync_state(self.index_dir.parent)
        listing = _dedup(self.source.list_files(tail_hint=state.get("list_tail")))
        known = writer.recordings()
        checked: dict[str, float] = {k: v for k, v in (state.get("checked") or {}).items()
                                     if k in listing}
        plan = plan_fetches(listing, known, checked, started, self.interval_s, self.revalidate)
        log.info("Plaud lists %d recordings; fetching %d (new %d, processing %d, renamed %d, "
                 "recent %d, rolling re-check %d)", len(listing), len(plan.ids), plan.new,
                 plan.processing, plan.renamed, plan.recent, plan.rolling)
        todo, counts, errors, stopped = plan.ids, _Counts(), [], False
        for start in range(0, len(todo), self.commit_every):
            group = todo[start:start + self.commit_every]
            errors += self._index_group(writer, group, known, counts)
            if writer.commit():
                counts.commits += 1
            checked.update({fid: self.clock() for fid in group})
            done = start + len(group)
            self._write_progress(done, len(todo))
            rate = done / max(self.clock() - started, 1e-6)
            log.info("Indexed %d of %d recordings (%.1f/s, ETA %.0fs)", done, len(todo), rate,
                     (len(todo) - done) / rate if rate else 0)
            if self.should_stop() and done < len(todo):
                log.info("Stopping after this commit; %d recordings resume next start",
                         len(todo) - done)
                stopped = True
                break
        decision = DeletionDecision([], state.get("held_deletion"), None) if stopped else \
            decide_deletions(set(listing), set(known), state.get("held_deletion"))
        if decision.warning:
            log.warning("%s", decision.warning)
        for file_id in decision.delete:
            writer.delete(file_id)
        if writer.commit():
            counts.commits += 1
        if writer.rebuilding and not errors and not stopped:
            writer.promote()
        processing = sum(1 for r in writer.recordings().values() if r.chunk_count == 0)
        self._state_update = {"checked": checked, "held_deletion": decision.hold,
                              "processing": processing,
                              "list_tail": next(reversed(listing), None)}
        return SyncReport(
            listed=len(listing), fetched=counts.fetched, added=counts.added,
            updated=counts.updated, deleted=len(decision.delete),
            unchanged=counts.unchanged + len(listing) - len(todo), skipped=counts.skipped,
            chunks_embedded=counts.embedded, chunks_reused=counts.reused,
            commits=counts.commits, seconds=round(self.clock() - started, 3),
            errors=tuple(errors),
        )

    def _index_group(self, writer: IndexWriter, group: Sequence[str],
                     known: dict[str, IndexedRecording], counts: _Counts) -> list[str]:
        errors: list[str] = []
        prepared: list[tuple[Recording, str, list[Chunk]]] = []
        for file_id in group:
            try:
                recording = normalize_recording(self.source.get_file(file_id))
            except PlaudIndexError as exc:
                log.warning("Skipping recording %s: %s", file_id, exc)
                errors.append(f"{file_id}: {exc}")
                counts.skipped += 1
                continue
            counts.fetched += 1
            digest = content_hash(recording)
            previous = known.get(recording.file_id)
            if previous and previous.content_hash == digest:
                counts.unchanged += 1
                continue
            prepared.append((recording, digest, self.chunker.chunk(recording)))
            if previous:
                counts.updated += 1
            else:
                counts.added += 1
        vectors: dict[str, np.ndarray] = {}
        fresh = []
        for chunk in (c for _, _, chunks in prepared for c in chunks):
            known_vector = writer.known_vector(chunk.chunk_id)
            if known_vector is None:
                fresh.append(chunk)
            else:
                vectors[chunk.chunk_id] = known_vector
        counts.reused += len(vectors)
        counts.embedded += len(fresh)
        vectors.update(zip((c.chunk_id for c in fresh),
                           self.embedder.embed([c.embed_text for c in fresh]), strict=True))
        for recording, digest, chunks in prepared:
            rows = [vectors[c.chunk_id] for c in chunks]
            matrix = np.array(rows, dtype=np.float32).reshape(len(chunks), self.model.dim)
            writer.put(indexed_record(recording, digest, len(chunks)), chunks, matrix)
        return errors

    def _write_state(self, started: float, *, report: SyncReport | None = None,
                     error: str | None = None, kind: str | None = None) -> None:
        update: dict[str, Any] = {"last_attempt": started, "last_error": error,
                                  "last_error_kind": kind, "progress": None}
        if report is not None:
            update.update({"last_success": self.clock(), "last_report": asdict(report),
                           **self._state_update})
        self._update_state(update)

    def _write_progress(self, done: int, total: int) -> None:
        self._update_state({"progress": {"done": done, "total": total}})

    def _update_state(self, update: dict[str, Any]) -> None:
        update_sync_state(self.index_dir.parent, update)


def update_sync_state(home: Path, update: dict[str, Any]) -> None:
    """Merge ``update`` into ``<home>/sync-state.json``, atomically (only the indexer lock
    holder and the daemon's heartbeat write it)."""
    home.mkdir(parents=True, exist_ok=True, mode=0o700)
    write_json_atomic(home / SYNC_STATE, {**read_sync_state(home), **update})


def _dedup(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    if not isinstance(rows, list):
        raise SourceError("Plaud's recording list is not a list; nothing was changed")
    out: dict[str, dict[str, Any]] = {}
    for row in rows:
        file_id = row.get("id") if isinstance(row, dict) else None
        if isinstance(file_id, str) and file_id and file_id not in out:
            out[file_id] = row
    return out


def read_sync_state(home: Path) -> dict[str, Any]:
    try:
        data = json.loads((home / SYNC_STATE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}

