"""Is there an index to answer from, and how complete is it.

``Readiness.check`` says it as a typed state: ``Ready`` (a snapshot and the sync state
read before it), or why not yet: ``Building`` (a first sync under way, with its
progress), ``SignedOut``, ``Unavailable`` (a source or storage problem), ``SyncFailed``
(with its reason) or ``NeverSynced``. Each not-ready state carries the one sentence that
says it (``message``), which the tools and the CLI both give. ``ready`` is the answers'
shortcut: the snapshot, or ``NotReadyYet`` carrying the state up to the edge that turns
it into an answer.

A question on an index that is empty, or whose first sync never finished, asks the keeper
it was handed (``sync.keeper``) to start that sync; a question on a stale one asks it to
keep the index fresh. The keeper decides and does; this module only reads (the index, the
sync state and progress, and what the keeper says of the sync).

"Complete" is said of a snapshot only when the sync state read *before* the snapshot was
opened says so (a sync that finished by then had committed everything first); a sync that
finishes between the two reads is read again, so an answer right after the last commit
says complete, not "stopped just now at 73 of 73".
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime, timezone

from ..clock import UserZone, stamps
from ..errors import (
    IndexNotReadyError,
    PlaudAuthError,
    PlaudIndexError,
    SourceError,
    StorageError,
    UnknownRecordingError,
)
from ..index.snapshot import Snapshot
from ..results import IndexInfo
from ..sync.progress import SyncProgress
from ..sync.state import SyncState
from .index import IndexReader, Keeping

log = logging.getLogger(__name__)

# How soon a question on an empty index is worth asking again: a first sync commits its
# first recording within about this (sync.pace.FIRST_COMMIT_S, with room for the fetch).
ASK_AGAIN_S = 15
CONSISTENT_TRIES = 3  # reads of state, snapshot, state until no sync ended in between


@dataclass(frozen=True)
class Ready:
    snapshot: Snapshot
    state: SyncState  # read before the snapshot was opened (see the module's note)


@dataclass(frozen=True)
class Building:
    """A first sync is under way: a state to wait out, not something wrong."""
    doing: str  # "the first sync is starting", or how far it is
    earlier_failure: str | None = None

    @property
    def message(self) -> str:
        earlier = f" (the previous attempt failed: {self.earlier_failure})" \
            if self.earlier_failure else ""
        return (f"Plaud index not available yet: {self.doing}{earlier}. Nothing is "
                "searchable until the first recordings are saved; ask again in "
                f"{ASK_AGAIN_S} seconds.")


@dataclass(frozen=True)
class SignedOut:
    """Nobody is signed in to Plaud, so nothing can be synced (the tools answer with a
    sign-in link)."""
    problem: str

    @property
    def message(self) -> str:
        return f"Plaud index not available: {self.problem}"


@dataclass(frozen=True)
class Unavailable:
    """A source or storage problem keeps the first sync from starting."""
    problem: str

    @property
    def message(self) -> str:
        return f"Plaud index not available: {self.problem}"


@dataclass(frozen=True)
class SyncFailed:
    reason: str

    @property
    def message(self) -> str:
        return f"Plaud index not available: the first sync failed: {self.reason}"


@dataclass(frozen=True)
class NeverSynced:
    """No index, no sync running, none failed: nothing was ever set going."""

    @property
    def message(self) -> str:
        return ("Plaud index not available. Start the indexer (plaud-index-mcp indexer) "
                "after plaud-index-mcp login.")


NotReady = Building | SignedOut | Unavailable | SyncFailed | NeverSynced
NOT_READY = (Building, SignedOut, Unavailable, SyncFailed, NeverSynced)


class NotReadyYet(IndexNotReadyError):
    """``Readiness.ready`` found nothing to answer from: its ``state`` says why."""

    def __init__(self, state: NotReady) -> None:
        super().__init__(state.message)
        self.state = state


def _local(zone: UserZone, epoch: float | None) -> str | None:
    """An instant as the user's local ISO time, to the second."""
    if epoch is None:
        return None
    return zone.local(datetime.fromtimestamp(epoch, timezone.utc)).isoformat(
        timespec="seconds")


class Readiness:
    """``keeper``: who starts and keeps the syncs (``sync.keeper.Keeper``)."""

    def __init__(self, reader: IndexReader, keeper: Keeping,
                 clock: Callable[[], float] = time.time) -> None:
        self.reader = reader
        self.config = reader.config
        self.state = reader.state
        self.keeper = keeper
        self.clock = clock

    def ready(self) -> tuple[Snapshot, SyncState]:
        """``check``'s snapshot and state, or ``NotReadyYet`` with why not."""
        checked = self.check()
        if isinstance(checked, Ready):
            return checked.snapshot, checked.state
        raise NotReadyYet(checked)

    def check(self) -> Ready | NotReady:
        """A populated snapshot and the sync state read before it was opened, or why there
        is none yet. Starts the first sync (or a fresh one) when it is due."""
        problem: PlaudIndexError | None = None
        for _ in range(CONSISTENT_TRIES):
            before = self.state.read()
            snap = self.reader.snapshot()
            empty = snap is None or not snap.recordings
            if empty or not before.complete:
                try:
                    self._start_first_sync(wait=empty)
                except (SourceError, StorageError) as exc:  # say this, not "building"
                    problem = exc
                snap = self.reader.snapshot()
            else:
                self.keep_fresh(before)
            if self.state.read().complete == before.complete:
                break  # no sync ended (or began) between the reads: they agree
        if snap is not None and snap.recordings:
            return Ready(snap, before)
        return self._not_ready(problem)

    def _first_sync_needed(self) -> bool:
        snap = self.reader.snapshot()
        return snap is None or not snap.recordings or not self.state.read().complete

    def _start_first_sync(self, wait: bool) -> None:
        self.keeper.start_first_sync(wait, self._first_sync_needed,
                                     lambda: self.reader.embedder)

    def _stale(self, state: SyncState) -> bool:
        """Due for a sync: the last one (and the last attempt) older than the interval."""
        now, interval = self.clock(), self.config.interval_ms / 1000
        return state.last_success is not None and now - state.last_success >= interval \
            and now - (state.last_attempt or 0) >= interval

    def keep_fresh(self, state: SyncState | None = None) -> bool:
        """Without the agent: the keeper starts one incremental sync of a stale index.
        True when it started one."""
        return self.keeper.keep_fresh(state or self.state.read(), self._stale,
                                      self.state.read)

    def _not_ready(self, problem: PlaudIndexError | None) -> NotReady:
        if isinstance(problem, PlaudAuthError):
            return SignedOut(str(problem))
        if problem is not None:
            return Unavailable(str(problem))
        state = self.state.read()
        failed = state.last_error if state.last_success is None else None
        if self.keeper.indexing():
            progress = SyncProgress.from_state(state.progress)
            return Building(f"the first sync is {progress.describe(self.clock())}" if progress
                            else "the first sync is starting", failed)
        why = self.keeper.failure()
        if why or failed:  # its own words first: a full disk leaves no state behind
            return SyncFailed(str(why or failed))
        return NeverSynced()

    def unknown(self, exc: UnknownRecordingError, snap: Snapshot, state: SyncState
                ) -> UnknownRecordingError:
        """An id the index does not hold, said with how complete the index is: during a
        first sync it may simply not be indexed yet."""
        info = self.freshness(snap, state)
        if info.complete:
            return exc
        return UnknownRecordingError(
            f"{exc} The index is still partial ({info.progress}): this recording may not be "
            f"indexed yet; ask again in {ASK_AGAIN_S} seconds.")

    def pending(self) -> IndexInfo:
        """``freshness`` of an index with nothing committed yet (a first sync under way)."""
        info = self.freshness(None)
        return replace(info, complete=False, progress=info.progress or "starting")

    def freshness(self, snap: Snapshot | None, state: SyncState | None = None) -> IndexInfo:
        """How complete ``snap`` is. ``state`` must be read before ``snap`` was opened (see
        the module's note); a sync still running or stopped is described with how many
        recordings ``snap`` answers from."""
        after = self.state.read()
        before = state or after
        complete = before.complete and after.complete
        progress = SyncProgress.from_state(after.progress or before.progress)
        now = self.clock()
        searchable = len(snap.recordings) if snap else 0
        described = None if progress is None or complete else \
            progress.describe(now, searchable=searchable) \
            if self.keeper.holder() is not None else \
            progress.describe_stopped(now, searchable=searchable)
        finished = after.last_success if after.last_success is not None else (
            # an index that came without a sync state counts as synced when it was written
            None if not complete or snap is None else
            datetime.fromisoformat(snap.manifest.updated_at).timestamp()
            if snap.manifest.updated_at else None)
        return IndexInfo(recordings=searchable,
                         chunks=snap.live_chunks if snap else 0,
                         last_sync=_local(self.config.zone, finished),
                         last_error=after.last_error, complete=complete,
                         progress=described,
                         last_commit=stamps(self.config.zone, snap.manifest.updated_at)[0]
                         if snap and snap.manifest.updated_at else None)
