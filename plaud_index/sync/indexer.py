"""One index cycle: list → diff → fetch changed → normalise → chunk → embed → commit.

Recordings are fetched one by one; their new chunks are embedded a group at a
time (``sync.embedding``), and each recording is staged in the writer as soon
as all its vectors are there. Commits are bounded by time, embedding included:
the first comes as soon as the first recording is ready, later ones every
``commit_seconds`` (or ``commit_every`` recordings), and when the time is up
while one very long recording is still being embedded, what it has so far goes
in as a partial recording that the next commit completes. So a crash or a
stop loses at most the work since the last commit, and a user of a first sync
sees results seconds after it starts. Chunks whose content hash is already in
the index reuse their vector.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ..chunker import Chunker
from ..embedding.embedder import Embedder
from ..embedding.languages import index_advice
from ..errors import PlaudIndexError
from ..folders.source import PREFIX as FOLDER_PREFIX
from ..fsio import storage_error
from ..home import Home
from ..index.manifest import ModelInfo
from ..index.speakers import named_source
from ..index.writer import open_writer
from ..mirror import Mirror
from ..models import Recording
from ..people import NameStore
from ..plaud import RecordingSource
from ..redact import redact
from ..reports import SyncReport
from .embedding import GROUP_CHUNKS, EmbedQueue
from .policy import DeletionDecision, decide_deletions, mirror_deletions, plan_fetches
from .progress import SyncProgress, log_commits
from .recordings import content_hash, indexed_record
from .state import SyncState, SyncStateStore, read_damage
from .work import CycleWork

__all__ = ["Indexer", "content_hash", "indexed_record"]

log = logging.getLogger(__name__)

COMMIT_EVERY = 25  # recordings per commit at most
COMMIT_S = 30.0  # a commit at least this often while work is ready (the first: at once)
MIRROR_BACKFILL = 50  # recordings a cycle fetches only because the mirror lacks them


class Indexer:
    """One cycle over ``home``: the index in ``home/vector-index``, state in ``home``."""

    def __init__(self, source: RecordingSource, embedder: Embedder, home: Path, *,
                 chunker: Chunker | None = None, commit_every: int = COMMIT_EVERY,
                 revalidate: Collection[str] = (), interval_s: float = 300.0,
                 should_stop: Callable[[], bool] = lambda: False,
                 clock: Callable[[], float] = time.time,
                 progress: Callable[[SyncProgress], object] = log_commits,
                 commit_seconds: float = COMMIT_S, group_chunks: int = GROUP_CHUNKS,
                 mirror: Mirror | None = None) -> None:
        self.source = source
        self.embedder = embedder
        self.index_dir = Home(home).index
        self.state = SyncStateStore(home)
        self.chunker = chunker or Chunker(embedder.count_tokens, max_tokens=embedder.max_tokens)
        self.commit_every = commit_every
        # Ids to re-fetch even though the list shows no sign of change (the list has
        # no change markers, API.md §3.1); content hashes then decide what changed.
        self.revalidate = set(revalidate)
        self.interval_s = interval_s  # sizes the rolling revalidation window
        self.should_stop = should_stop  # checked between fetches: commit what is done, stop
        self.clock = clock
        self.report_progress = progress  # each fetch, each embedded group, each commit
        self.commit_seconds = commit_seconds
        self.group_chunks = group_chunks
        self.mirror = mirror  # written from the recordings this cycle fetches
        self.names = NameStore(home)  # the local speaker names the mirror writes with
        self._renamed: set[str] = set()  # fetched again for their names in the mirror
        self._queue: EmbedQueue | None = None

    @property
    def model(self) -> ModelInfo:
        return ModelInfo(self.embedder.model_id, self.embedder.model_hash, self.embedder.dim)

    def run_cycle(self) -> SyncReport:
        """One cycle. Every failure is recorded in the sync state (so ``status`` tells the
        truth) and raised as a ``PlaudIndexError``; a full or read-only disk becomes a
        ``StorageError`` that says what to free or fix."""
        started = self.clock()
        try:
            report, remembered, outage = self._cycle(started, self.state.read())
            problems = self.source.problems()
            failure = outage or (problems[0] if problems else None)
            # A cycle stopped early is no success: its progress stays behind, so a first
            # sync cut short still reads as partial and the next start resumes it. Nor is
            # one where a source could not be listed (the other one was still indexed), or
            # one cut short by an outage (what it fetched is committed and remembered).
            finished = {} if report.stopped or failure else {"progress": None,
                                                             "last_success": self.clock()}
            self.state.update(last_attempt=started, last_error=None, last_error_kind=None,
                              last_report=asdict(report), **finished, **remembered)
            if failure:
                raise failure
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
        finally:
            if self.mirror is not None:  # what was written stays known, whatever happened
                self.mirror.save()
        return report

    def settle(self, timeout_s: float | None = None) -> None:
        """Wait for a model run a stop left in flight (``EmbedQueue.settle``); a process
        that exits at once (the server's, after its session) need not."""
        if self._queue is not None:
            self._queue.settle(timeout_s)

    def _record_failure(self, started: float, message: str, kind: str) -> None:
        try:
            self.state.record_failure(last_attempt=started,
                                      last_error=redact(message)[:2000],
                                      last_error_kind=kind, progress=None)
        except OSError as again:  # the disk that failed the cycle may refuse this too
            log.error("Cannot record the failure in %s: %s", self.state.path, again)

    def _mirror_backfill(self, listing: Collection[str], planned: list[str],
                         skipped: Collection[str]) -> list[str]:
        """Plaud recordings the mirror has no file for (it was just turned on), a few a
        cycle on top of the plan; ``mirror --once`` does them all at once."""
        if self.mirror is None:
            return []
        exclude = set(planned) | set(skipped)
        wanted = [fid for fid in listing if fid not in exclude and
                  not fid.startswith(FOLDER_PREFIX)]
        self._renamed = set(self._renamed_since_mirrored(wanted))
        extra = list(dict.fromkeys([*self.mirror.missing(wanted), *self._renamed]))
        extra = extra[:MIRROR_BACKFILL]
        if extra:
            log.info("Fetching %d more recordings for the Markdown mirror", len(extra))
        return extra

    def _renamed_since_mirrored(self, wanted: list[str]) -> list[str]:
        """Recordings whose local speaker names changed after the mirror wrote them: fetched
        again so their file shows the names (the mirror only writes what a cycle fetched)."""
        assert self.mirror is not None
        files = self.mirror.state.files
        changed = self.names.changed_at()
        return [fid for fid in wanted if fid in changed and fid in files
                and changed[fid] > files[fid].written]

    def _mirror_put(self, recording: Recording) -> None:
        assert self.mirror is not None
        self.mirror.put(named_source(recording, self.names.names()))
        if recording.file_id in self._renamed:  # settled, even when its text came out equal
            self.mirror.seen(recording.file_id)

    def _cycle(self, started: float, state: SyncState
               ) -> tuple[SyncReport, dict[str, Any], PlaudIndexError | None]:
        """Returns the report, what the next cycle must remember, and the failure of the
        whole source that stopped the fetching (everything fetched before it is committed)."""
        self.state.update(progress=SyncProgress(0, 0, started, phase="listing",
                                                updated=started).to_state())
        writer = open_writer(self.index_dir, self.model, self.clock,
                             damage_met=read_damage(self.state.home, state.last_success))
        listing = self.source.list_recordings(tail_hint=state.list_tail)
        known = writer.recordings()
        if listing and not known and not writer.rebuilding and state.last_success:
            # The index is empty again (its folder deleted, its manifest lost) and fills
            # from nothing where readers see it: until this cycle finishes, answers are
            # partial and an interrupted fill is resumed, as on a first sync.
            log.info("The index is empty: filling it again from the sources")
            self.state.update(last_success=None)
        checked = {k: v for k, v in state.checked.items() if k in listing}
        versions = {k: v for k, v in state.versions.items() if k in listing}
        failing = {k: v for k, v in state.failing.items() if k in listing}
        plan = plan_fetches(listing, known, checked, started, self.interval_s, self.revalidate,
                            skipped=set(state.skipped), versions=versions, failing=failing)
        log.info("The sources list %d recordings; fetching %d (new %d, processing %d, renamed %d, "
                 "recent %d, rolling re-check %d, failing before %d; %d more wait for their "
                 "retry)", len(listing), len(plan.ids), plan.new, plan.processing,
                 plan.renamed, plan.recent, plan.rolling, plan.retrying, plan.waiting)
        todo = plan.ids + self._mirror_backfill(listing, plan.ids, state.skipped)
        self._queue = EmbedQueue(self.embedder, writer.known_vector, self.group_chunks)
        run = CycleWork(
            self.source, self.chunker, writer, self._queue,
            self.model.dim, self.clock, self.should_stop, self.report_progress,
            lambda p: self.state.update(progress=p.to_state()), self.commit_seconds,
            self.commit_every, known, todo, started,
            {fid: listing[fid].duration_ms for fid in todo},
            {k: v for k, v in state.skipped.items() if k in listing},
            last_commit=self.clock(), mirror=self._mirror_put if self.mirror else None,
            failing=failing,
            empty_notes={k: v for k, v in state.empty_notes.items() if k in listing})
        run.run()
        checked.update(run.checked)
        # an id the detail spelled otherwise than the listing is no longer a KeyError here
        versions.update({fid: v for fid in run.checked
                         if fid in listing and (v := listing[fid].version)})
        # what a part of the source could not list this time stays (an unmounted folder)
        present = set(listing) | self.source.kept(set(known) - set(listing))
        decision = DeletionDecision([], state.held_deletion, None) if run.stopped else \
            decide_deletions(present, set(known), state.held_deletion)
        if decision.warning:
            log.warning("%s", decision.warning)
        for file_id in decision.delete:
            writer.delete(file_id)
        if self.mirror is not None and not run.stopped and not self.source.problems():
            self.mirror.remove(mirror_deletions(decision, present, self.mirror.ids()))
        run.commit()
        if writer.rebuilding and not run.stopped:  # every listed recording was tried once
            writer.promote()
        first_sync_done = state.last_success is None and not run.stopped
        if first_sync_done and (advice := index_advice(writer.snapshot)):  # said once
            log.warning("%s", advice)
        processing = sum(1 for r in writer.recordings().values() if r.chunk_count == 0)
        # rows of the listing that cannot be recordings are reported with the skipped ones
        remembered = {"checked": checked, "held_deletion": decision.hold,
                      "skipped": {**run.quarantine, **self.source.rejected()},
                      "processing": processing, "list_tail": next(reversed(listing), None),
                      "versions": versions, "failing": run.failing,
                      "empty_notes": run.empty_notes}
        counts = run.counts
        if self.mirror is not None:
            counts["mirrored"] = self.mirror.counts["written"]
        report = SyncReport(
            listed=len(listing), deleted=len(decision.delete),
            unchanged=counts.pop("unchanged", 0) + len(listing) - len(plan.ids),
            seconds=round(self.clock() - started, 3), errors=tuple(run.errors),
            stopped=run.stopped, **counts)
        return report, remembered, run.outage
