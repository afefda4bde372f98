"""The work of one cycle: fetch recording by recording, embed a group of chunks at a time,
commit when it is due, and keep the progress everyone reads true while it happens.

``Indexer`` (``indexer.py``) plans the cycle around this: what to fetch, what to
delete, what to remember. Commits are bounded by time, embedding included: the
first comes as soon as the first recording is ready, later ones every
``commit_seconds`` (or ``commit_every`` recordings; ``pace.py`` says when one is
owed). When the time is up while one very long recording is still being embedded,
what it has so far goes in as a partial recording (see ``_put_partial``) that a later
commit completes.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..chunker import Chunker
from ..errors import (
    PlaudAuthError,
    PlaudIndexError,
    PlaudRateLimitedError,
    PlaudTransientError,
    PlaudUnreachableError,
    SourceError,
)
from ..index.records import PARTIAL, IndexedRecording
from ..index.writer import IndexWriter
from ..intervals import format_interval
from ..models import Recording
from ..plaud import RecordingSource
from ..redact import redact
from .embedding import EmbedQueue
from .pace import Pace, commit_owed
from .policy import failed_again
from .progress import SyncProgress
from .recordings import content_hash, indexed_record

log = logging.getLogger(__name__)

PROGRESS_S = 1.0  # the sync state's progress is refreshed about this often
# Recordings failing on Plaud's side one after another before the cycle calls it an outage
# (one broken recording is that recording's problem: API.md §8, a 500 for one id).
OUTAGE_RUN = 3

# Failures that are the whole source's, not one recording's: the cycle stops fetching,
# commits what it has, and fails.
_WHOLE_SOURCE = (PlaudAuthError, PlaudUnreachableError, PlaudRateLimitedError)


def skip(file_id: str, exc: Exception, quarantine: dict[str, str],
         counts: Counter[str]) -> str:
    """Log and count a recording that cannot be indexed; quarantine it unless the failure
    was Plaud's (a 404 or 5xx answer is retried next cycle)."""
    reason = redact(f"{type(exc).__name__}: {exc}" if not isinstance(exc, PlaudIndexError)
                    else str(exc))[:500]
    log.warning("Skipping recording %s: %s", file_id, reason)
    if not isinstance(exc, SourceError):
        quarantine[file_id] = reason
    counts["skipped"] += 1
    return f"{file_id}: {reason}"


@dataclass
class CycleWork:
    """One cycle's work in progress: its collaborators, what is queued, counted and timed."""

    source: RecordingSource
    chunker: Chunker
    writer: IndexWriter
    queue: EmbedQueue
    dim: int
    clock: Callable[[], float]
    should_stop: Callable[[], bool]
    report: Callable[[SyncProgress], object]  # every event (the terminal line)
    save: Callable[[SyncProgress], object]  # into the sync state (throttled here)
    commit_seconds: float
    commit_every: int
    known: dict[str, IndexedRecording]
    todo: list[str]
    started: float
    listed_ms: dict[str, int]  # each recording's listed duration (0: unknown)
    quarantine: dict[str, str]
    mirror: Callable[[Recording], object] | None = None  # each fetched recording, as is
    # recordings failing on Plaud's side: id -> since, tries, next (when due), error
    failing: dict[str, dict[str, Any]] = field(default_factory=dict)
    empty_notes: dict[str, str] = field(default_factory=dict)  # id -> notes without text
    outage: PlaudIndexError | None = None  # why fetching stopped for the whole source
    transient_run: int = 0  # recordings failing on Plaud's side in a row, just now
    counts: Counter[str] = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)
    checked: dict[str, float] = field(default_factory=dict)  # finished: fetched + handled
    phase: str = "fetching"
    done: int = 0
    committed: int = 0
    fetched: int = 0
    fetched_ms: int = 0
    chunks_seen: int = 0
    fetch_s: float = 0.0
    embed_s: float = 0.0
    since_commit: int = 0
    last_commit: float = 0.0
    commit_s: float = 0.0  # the longest commit of the cycle yet (merges included)
    saved: float = 0.0
    stopped: bool = False

    def finish(self, file_id: str, now: float) -> None:
        self.checked[file_id] = now
        self.done += 1

    def progress(self, now: float) -> SyncProgress:
        return SyncProgress(done=self.done, total=len(self.todo), started=self.started,
                            chunks=self.counts["chunks_embedded"], committed=self.committed,
                            updated=now, phase=self.phase, fetched=self.fetched,
                            chunks_seen=self.chunks_seen, fetch_s=round(self.fetch_s, 3),
                            embed_s=round(self.embed_s, 3), fetched_ms=self.fetched_ms,
                            total_ms=sum(self.listed_ms.values()))

    def run(self) -> None:
        """Fetch recording by recording; embed a group of chunks whenever enough wait (or
        the first commit or a due one is waiting for them); commit when it is due."""
        self.phase = "fetching"
        self._report(force=True)
        for file_id in self.todo:
            if self.should_stop() or self.outage:
                break
            self._fetch(file_id)
            while self.queue.fresh and self._embed_now():
                if self.should_stop():
                    break
                self._embed_group()
                self._commit_if_due()
            self._commit_if_due()
        while self.queue.fresh and not self.should_stop():  # the last recordings' chunks
            # (after an outage too: what was fetched is embedded and committed)
            self._embed_group()
            self._commit_if_due()
        self._put_ready()
        unfinished = len(self.todo) - self.done
        if unfinished:
            self.stopped = True
            partial = self._put_partial()
            log.info("Stopping after this commit; %d recordings resume %s%s", unfinished,
                     "next cycle" if self.outage else "next start",
                     " (one of them partly indexed)" if partial else "")

    def _fetch(self, file_id: str) -> None:
        self.phase = "fetching"
        started = self.clock()
        try:
            recording = self.source.get_recording(file_id)
            digest = content_hash(recording)
            previous = self.known.get(recording.file_id)
            unchanged = previous is not None and previous.content_hash == digest
            chunks = [] if unchanged else self.chunker.chunk(recording)
        except _WHOLE_SOURCE as exc:
            self.outage = exc  # what is done is committed, then the cycle fails with it
            return
        except PlaudTransientError as exc:  # this recording's detail kept failing
            self._failed_on_plaud(file_id, exc)
            return
        except Exception as exc:  # noqa: BLE001 - one recording never stops a cycle
            self.errors.append(skip(file_id, exc, self.quarantine, self.counts))
            self.finish(file_id, self.clock())
            return
        finally:
            self.fetch_s += self.clock() - started
        self.transient_run = 0
        self.failing.pop(file_id, None)
        if recording.empty_notes:
            self.empty_notes[file_id] = "; ".join(recording.empty_notes)[:500]
        else:
            self.empty_notes.pop(file_id, None)
        if self.mirror is not None:
            self.mirror(recording)
        self.fetched += 1
        self.fetched_ms += self.listed_ms.get(file_id, 0)
        self.counts["fetched"] += 1
        if unchanged:
            self.counts["unchanged"] += 1
            self.quarantine.pop(file_id, None)
            self.finish(file_id, self.clock())
        else:
            fresh, reused = self.queue.add(recording, digest, chunks)
            self.chunks_seen += fresh
            self.counts["chunks_reused"] += reused
        self._report()

    def _failed_on_plaud(self, file_id: str, exc: PlaudTransientError) -> None:
        """Plaud kept failing for this recording after the transport's retries: skipped for
        this cycle, tried again with backoff. Several in a row are an outage: then the cycle
        stops fetching, commits what it has and fails."""
        now = self.clock()
        reason = redact(str(exc))[:500]
        self.failing[file_id] = entry = failed_again(self.failing.get(file_id), now, reason)
        log.warning("Skipping recording %s this cycle (failed %d time(s) in a row, tried "
                    "again in %s): %s", file_id, entry["tries"],
                    format_interval(int((entry["next"] - now) * 1000)), reason)
        self.errors.append(f"{file_id}: {reason}")
        self.counts["skipped"] += 1
        self.transient_run += 1
        if self.transient_run >= OUTAGE_RUN:
            self.outage = PlaudTransientError(
                f"Plaud failed for {self.transient_run} recordings in a row ({reason}); what "
                "was fetched is kept, and the next sync goes on")
        self.finish(file_id, now)

    def _embed_group(self) -> None:
        """One group, counted and reported model run by model run (and as the clock moves
        while a run takes long), so the line and the sync state never stand still."""
        self.phase = "embedding"
        self._report()
        since = self.clock()

        def tick(embedded: int) -> None:
            nonlocal since
            now = self.clock()
            self.embed_s += now - since
            since = now
            self.counts["chunks_embedded"] += embedded
            self._report()

        failed = self.queue.embed_group(self.should_stop, tick)
        tick(0)
        for dropped in failed:
            self.chunks_seen -= len(dropped.waiting.missing)
            self.errors.append(skip(dropped.waiting.recording.file_id, dropped.error,
                                         self.quarantine, self.counts))
            self.finish(dropped.waiting.recording.file_id, self.clock())
        self._put_ready()
        self._report()

    def _put_ready(self) -> None:
        for waiting in self.queue.pop_ready():
            recording = waiting.recording
            try:
                matrix = waiting.matrix(waiting.chunks, self.dim)
            except ValueError as exc:
                self.errors.append(skip(recording.file_id, exc, self.quarantine,
                                             self.counts))
            else:
                self.writer.put(indexed_record(recording, waiting.digest, len(waiting.chunks)),
                               waiting.chunks, matrix)
                self.quarantine.pop(recording.file_id, None)
                self.counts["updated" if recording.file_id in self.known else "added"] += 1
                self.since_commit += 1
            self.finish(recording.file_id, self.clock())

    def _put_partial(self) -> bool:
        """A recording whose chunks are only partly embedded when a commit must happen
        (one very long recording, or a stop): its embedded chunks are indexed now under a
        content hash that never matches, so it stays searchable, is fetched again next
        cycle, and only its missing chunks are embedded then (the others are reused)."""
        put = False
        for waiting in self.queue.waiting:  # more than one when a stop cut a group short
            chunks = waiting.embedded()
            if chunks and not waiting.ready:
                record = indexed_record(waiting.recording, PARTIAL + waiting.digest,
                                        len(chunks))
                self.writer.put(record, chunks, waiting.matrix(chunks, self.dim))
                put = True
        return put

    def _embed_now(self) -> bool:
        """Embed what waits when a full group is there, or when a commit waits for it: the
        first one, a due one, or one that the recordings waiting would fill."""
        return self.queue.fresh >= self.queue.group_chunks or not self.counts["commits"] \
            or self._due() or self.since_commit + len(self.queue.waiting) >= self.commit_every

    def _due(self) -> bool:
        """Is a commit owed (``pace.commit_owed``, on this cycle's figures so far)?"""
        return commit_owed(Pace(
            commit_seconds=self.commit_seconds, commit_every=self.commit_every,
            commits=self.counts["commits"], since_last_s=self.clock() - self.last_commit,
            since_commit=self.since_commit, longest_commit_s=self.commit_s,
            group_chunks=self.queue.group_chunks, fresh=self.queue.fresh,
            embedded=self.counts["chunks_embedded"], embed_s=self.embed_s,
            fetched=self.fetched, chunks_seen=self.chunks_seen, fetch_s=self.fetch_s))

    def _commit_if_due(self) -> None:
        """The first commit of a cycle as soon as a recording is ready, later ones when
        due. When one is due and no recording is ready, the one being embedded goes in
        partly."""
        first = not self.counts["commits"]
        if self.writer.pending and (first or self._due()) or self._due() and self._put_partial():
            self.commit()

    def commit(self) -> None:
        if not self.writer.pending:
            return
        self.phase, phase = "committing", self.phase
        self._report(force=True)
        started = self.clock()  # the budget runs from one commit's start to the next's
        # a stop publishes and leaves the merges to the next cycle: the session's client
        # kills the process a second or two after it ends the session
        if self.writer.commit(merge=not self.should_stop()):
            self.counts["commits"] += 1
        self.committed, self.since_commit = self.done, 0
        self.last_commit = started
        self.commit_s = max(self.commit_s, self.clock() - started)
        self.phase = phase
        self._report(force=True)

    def _report(self, force: bool = False) -> None:
        """The reporter (terminal line) every time; the sync state at most about once a
        second, and at every commit, so ``status`` and the server read fresh numbers."""
        now = self.clock()
        progress = self.progress(now)
        self.report(progress)
        if force or now - self.saved >= PROGRESS_S:
            self.save(progress)
            self.saved = now
