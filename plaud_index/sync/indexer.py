"""One index cycle: list → diff → fetch changed → normalise → chunk → embed → commit.

Work is done in groups of up to ``commit_every`` recordings, closed early when
fetching takes long (the first group after a few seconds): each group's new
chunks are embedded in one call (full, length-sorted batches keep the model
busy) and committed, so a crash during a long first sync loses at most one
group, and an interrupted first sync always keeps what it did.
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
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from ..chunker import Chunker
from ..config import INDEX_DIR
from ..embedder import Embedder
from ..errors import (
    PlaudAuthError,
    PlaudIndexError,
    PlaudTransientError,
    SourceError,
)
from ..fsio import storage_error
from ..index.manifest import ModelInfo
from ..index.records import IndexedRecording
from ..index.writer import IndexWriter, open_writer
from ..models import Chunk, Recording, SyncReport
from ..plaud import RecordingSource
from ..redact import redact
from .policy import DeletionDecision, decide_deletions, plan_fetches
from .progress import SyncProgress, log_commits
from .state import SyncState, SyncStateStore

log = logging.getLogger(__name__)

COMMIT_EVERY = 25
FIRST_COMMIT_S = 5.0  # the first commit of a cycle comes this soon
COMMIT_S = 30.0  # and the later ones at least this often


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
        chunk_count=chunks, origin=recording.origin,
    )


class Indexer:
    """One cycle over ``home``: the index in ``home/vector-index``, state in ``home``."""

    def __init__(self, source: RecordingSource, embedder: Embedder, home: Path, *,
                 chunker: Chunker | None = None, commit_every: int = COMMIT_EVERY,
                 revalidate: Collection[str] = (), interval_s: float = 300.0,
                 should_stop: Callable[[], bool] = lambda: False,
                 clock: Callable[[], float] = time.time,
                 progress: Callable[[SyncProgress], object] = log_commits,
                 first_commit_seconds: float = FIRST_COMMIT_S,
                 commit_seconds: float = COMMIT_S) -> None:
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
        self.should_stop = should_stop  # checked between fetches: commit what is done, stop
        self.clock = clock
        self.report_progress = progress  # each recording fetched, and each commit
        self.first_commit_seconds = first_commit_seconds
        self.commit_seconds = commit_seconds

    @property
    def model(self) -> ModelInfo:
        return ModelInfo(self.embedder.model_id, self.embedder.model_hash, self.embedder.dim)

    def run_cycle(self) -> SyncReport:
        """One cycle. Every failure is recorded in the sync state (so ``status`` tells the
        truth) and raised as a ``PlaudIndexError``; a full or read-only disk becomes a
        ``StorageError`` that says what to free or fix."""
        started = self.clock()
        try:
            report, remembered = self._cycle(started, self.state.read())
            problems = self.source.problems()
            # A cycle stopped early is no success: its progress stays behind, so a first
            # sync cut short still reads as partial and the next start resumes it. Nor is
            # one where a source could not be listed (the other one was still indexed).
            finished = {} if report.stopped or problems else {"progress": None,
                                                              "last_success": self.clock()}
            self.state.update(last_attempt=started, last_error=None, last_error_kind=None,
                              last_report=asdict(report), **finished, **remembered)
            if problems:
                raise problems[0]
            self.state.keep_reserve()
        except PlaudIndexError as exc:
            self._record_failure(started, str(exc), type(exc).__name__)
            raise
        except OSError as exc:
            error = storage_error(exc, self.index_dir.parent)
            self._record_failure(started, str(error), type(error).__name__)
            raise error from exc
        except Exception as exc:  # a bug: recorded, then raised with its traceback
            self._record_failure(started, f"Unexpected {type(exc).__name__}: {exc}",
                                 type(exc).__name__)
            raise
        return report

    def _record_failure(self, started: float, message: str, kind: str) -> None:
        try:
            self.state.update(last_attempt=started, last_error=redact(message)[:2000],
                              last_error_kind=kind, progress=None)
        except OSError as again:  # the disk that failed the cycle may refuse this too
            log.error("Cannot record the failure in %s: %s", self.state.path, again)

    def _cycle(self, started: float, state: SyncState) -> tuple[SyncReport, dict[str, Any]]:
        """Returns the report and what the next cycle must remember."""
        writer = open_writer(self.index_dir, self.model, self.clock)
        listing = self.source.list_recordings(tail_hint=state.list_tail)
        known = writer.recordings()
        checked = {k: v for k, v in state.checked.items() if k in listing}
        versions = {k: v for k, v in state.versions.items() if k in listing}
        plan = plan_fetches(listing, known, checked, started, self.interval_s, self.revalidate,
                            skipped=set(state.skipped), versions=versions)
        log.info("The sources list %d recordings; fetching %d (new %d, processing %d, renamed %d, "
                 "recent %d, rolling re-check %d)", len(listing), len(plan.ids), plan.new,
                 plan.processing, plan.renamed, plan.recent, plan.rolling)
        todo, counts, errors, stopped = plan.ids, Counter[str](), [], False
        quarantine = {k: v for k, v in state.skipped.items() if k in listing}
        done = 0
        while done < len(todo):
            # The first commit comes within seconds, so an interrupted first sync (a client
            # that gave up, a laptop lid) always keeps something; later ones by count or time.
            deadline = self.clock() + (self.commit_seconds if counts["commits"]
                                       else self.first_commit_seconds)
            group, group_errors = self._index_group(
                writer, todo[done:done + self.commit_every], known, counts, quarantine,
                deadline, partial(self._fetched, started, done, len(todo), counts))
            errors += group_errors
            if writer.commit():
                counts["commits"] += 1
            checked.update({fid: self.clock() for fid in group})
            versions.update({fid: v for fid in group if (v := listing[fid].version)})
            done += len(group)
            progress = self._progress(started, done, len(todo), done, counts)
            self.state.update(progress=progress.to_state())
            if self.should_stop() and done < len(todo):
                log.info("Stopping after this commit; %d recordings resume next start",
                         len(todo) - done)
                stopped = True
                break
        # what a part of the source could not list this time stays (an unmounted folder)
        present = set(listing) | self.source.kept(set(known) - set(listing))
        decision = DeletionDecision([], state.held_deletion, None) if stopped else \
            decide_deletions(present, set(known), state.held_deletion)
        if decision.warning:
            log.warning("%s", decision.warning)
        for file_id in decision.delete:
            writer.delete(file_id)
        if writer.commit():
            counts["commits"] += 1
        if writer.rebuilding and not stopped:  # every listed recording was tried once
            writer.promote()
        processing = sum(1 for r in writer.recordings().values() if r.chunk_count == 0)
        remembered = {"checked": checked, "held_deletion": decision.hold, "skipped": quarantine,
                      "processing": processing, "list_tail": next(reversed(listing), None),
                      "versions": versions}
        report = SyncReport(
            listed=len(listing), deleted=len(decision.delete),
            unchanged=counts.pop("unchanged", 0) + len(listing) - len(todo),
            seconds=round(self.clock() - started, 3), errors=tuple(errors), stopped=stopped,
            **counts)
        return report, remembered

    def _fetched(self, started: float, committed: int, total: int, counts: Counter[str],
                 in_group: int) -> None:
        self._progress(started, committed + in_group, total, committed, counts)

    def _progress(self, started: float, done: int, total: int, committed: int,
                  counts: Counter[str]) -> SyncProgress:
        progress = SyncProgress(done=done, total=total, started=started,
                                chunks=counts["chunks_embedded"], committed=committed,
                                updated=self.clock())
        self.report_progress(progress)
        return progress

    def _index_group(self, writer: IndexWriter, ids: Sequence[str],
                     known: dict[str, IndexedRecording], counts: Counter[str],
                     quarantine: dict[str, str], deadline: float,
                     fetched: Callable[[int], object]) -> tuple[list[str], list[str]]:
        """Fetch, chunk and embed a group from ``ids`` and stage it in ``writer``: all of
        them, or fewer when fetching reaches ``deadline`` (at least one). Returns the ids
        taken and the errors. A recording that
        fails for a reason of its own (bad payload, a bug its content triggers) is put in
        ``quarantine`` and skipped; the rest of the group is still committed. Plaud being
        unreachable or the sign-in expiring is not a recording's fault: that stops the
        cycle (what is committed stays)."""
        errors: list[str] = []
        prepared: list[tuple[Recording, str, list[Chunk]]] = []
        group: list[str] = []
        for file_id in ids:
            if group and (self.clock() >= deadline or self.should_stop()):
                break  # commit what is fetched: soon, and soon after a stop request
            group.append(file_id)
            fetched(len(group))
            try:
                recording = self.source.get_recording(file_id)
                digest = content_hash(recording)
                previous = known.get(recording.file_id)
                if previous and previous.content_hash == digest:
                    counts["fetched"] += 1
                    counts["unchanged"] += 1
                    quarantine.pop(file_id, None)
                    continue
                chunks = self.chunker.chunk(recording)
            except (PlaudAuthError, PlaudTransientError):
                raise
            except Exception as exc:  # noqa: BLE001 - one recording never stops a cycle
                errors.append(self._skip(file_id, exc, quarantine, counts))
                continue
            counts["fetched"] += 1
            prepared.append((recording, digest, chunks))
        shared = self._embed_group(writer, [c for _, _, chunks in prepared for c in chunks],
                                   counts)
        for recording, digest, chunks in prepared:
            try:
                vectors = shared if shared is not None else \
                    self._embed_alone(writer, chunks, counts)
                matrix = self._matrix(chunks, vectors)
            except Exception as exc:  # noqa: BLE001 - e.g. text the tokenizer rejects
                errors.append(self._skip(recording.file_id, exc, quarantine, counts))
                continue
            writer.put(indexed_record(recording, digest, len(chunks)), chunks, matrix)
            quarantine.pop(recording.file_id, None)
            counts["updated" if recording.file_id in known else "added"] += 1
        return group, errors

    def _embed_group(self, writer: IndexWriter, chunks: list[Chunk], counts: Counter[str],
                     alone: bool = False) -> dict[str, np.ndarray] | None:
        """Vectors by chunk id: committed ones reused, the rest embedded in one call (full,
        length-sorted batches). If that call fails for the group, ``None``: each recording
        is then embedded alone, so only the one whose text breaks the model is skipped."""
        vectors: dict[str, np.ndarray] = {}
        fresh: list[Chunk] = []
        for chunk in chunks:
            known_vector = writer.known_vector(chunk)
            if known_vector is None:
                fresh.append(chunk)
            else:
                vectors[chunk.chunk_id] = known_vector
        try:
            embedded = self.embedder.embed([c.embed_text for c in fresh]) if fresh else ()
        except Exception:
            if alone:
                raise
            log.warning("Embedding a group of %d chunks failed; embedding its recordings "
                        "one by one to find the one at fault", len(fresh))
            return None
        vectors.update(zip((c.chunk_id for c in fresh), embedded, strict=True))
        counts["chunks_reused"] += len(chunks) - len(fresh)
        counts["chunks_embedded"] += len(fresh)
        return vectors

    def _embed_alone(self, writer: IndexWriter, chunks: list[Chunk],
                     counts: Counter[str]) -> dict[str, np.ndarray]:
        vectors = self._embed_group(writer, chunks, counts, alone=True)
        if vectors is None:  # pragma: no cover - alone=True raises instead
            raise RuntimeError("embedding failed")
        return vectors

    def _matrix(self, chunks: list[Chunk], vectors: dict[str, np.ndarray]) -> np.ndarray:
        matrix = np.array([vectors[c.chunk_id] for c in chunks], dtype=np.float32)
        matrix = matrix.reshape(len(chunks), self.model.dim)
        if not np.isfinite(matrix).all():
            raise ValueError("the model produced vectors that are not numbers")
        return matrix

    @staticmethod
    def _skip(file_id: str, exc: Exception, quarantine: dict[str, str],
              counts: Counter[str]) -> str:
        reason = redact(f"{type(exc).__name__}: {exc}" if not isinstance(exc, PlaudIndexError)
                        else str(exc))[:500]
        log.warning("Skipping recording %s: %s", file_id, reason)
        if not isinstance(exc, SourceError):  # Plaud's own 404/5xx answers are retried
            quarantine[file_id] = reason
        counts["skipped"] += 1
        return f"{file_id}: {reason}"
