"""Wiring shared by the CLI and the MCP server: config → source, embedder, index, search.

Holds the per-process state: the embedding model (loaded at most once) and
the current index snapshot (reopened only when the manifest changes). Every
answer is one of the result types of ``models``.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timezone
from typing import Any, TypeVar

from .clock import UserZone, format_clock, stamps, today
from .config import Config
from .embedding.embedder import Embedder, HashEmbedder, OnnxEmbedder
from .embedding.files import resolve_model
from .embedding.specs import model_spec
from .errors import IndexCorruptError, IndexNotReadyError, SourceError, UnknownRecordingError
from .index.analyzer import VERSION as ANALYZER
from .index.manifest import SCHEMA_VERSION
from .index.snapshot import Snapshot
from .index.store import manifest_key, open_snapshot
from .index.trust import distrust
from .index.writer import open_writer
from .models import (
    Hit,
    IndexInfo,
    ListedRecording,
    NotesResult,
    RecordingInfo,
    RecordingList,
    SearchResult,
    Today,
    TranscriptPage,
)
from .search.browse import ListRequest, list_recordings, marks_of, people, summary_of
from .search.notes import NotesRequest
from .search.rank import Ranking, SearchRequest, echo, make_request, overview, rank
from .search.reading import notes_result, transcript_page
from .search.transcript import DEFAULT_WINDOW_S, around
from .sources import make_source
from .sync.cycles import DetachedSync, make_indexer
from .sync.lock import IndexerLock, lock_holder
from .sync.progress import SyncProgress, log_commits
from .sync.state import SyncState, SyncStateStore, note_read_damage

log = logging.getLogger(__name__)
R = TypeVar("R")

# How soon a question on an empty index is worth asking again: a first sync commits its
# first recording within about this (sync.work.FIRST_COMMIT_S, with room for the fetch).
ASK_AGAIN_S = 15


def fetch_hint(path: str | None) -> str:
    """How to read a result in full: the tools that read the index, and the local file."""
    if path:
        return f"{FETCH_HINT} The file: {path}"
    return FETCH_HINT


# Fewer than this share of a query's words occurring anywhere in the index means the
# words point away from it: every dev query has at least half of them; "banana bread
# recipe with walnuts" a quarter (bench/retrieval.py --floor-report).
HEARD = 0.5

FETCH_HINT = ("Around a moment: plaud_get(file_id, at=<the moment's start>); the whole "
              "transcript: plaud_transcript(file_id); the AI notes: plaud_notes(file_id).")


def _epoch(iso: str | None) -> float | None:
    return datetime.fromisoformat(iso).timestamp() if iso else None


def _local(zone: UserZone, epoch: float | None) -> str | None:
    """An instant as the user's local ISO time, to the second."""
    if epoch is None:
        return None
    return zone.local(datetime.fromtimestamp(epoch, timezone.utc)).isoformat(
        timespec="seconds")


def make_embedder(config: Config) -> Embedder:
    if config.embedder == "mock":
        return HashEmbedder()
    spec, known = model_spec(config.embed_model, pooling=config.embed_pooling,
                             query_prefix=config.embed_query_prefix,
                             passage_prefix=config.embed_passage_prefix,
                             max_tokens=config.embed_max_tokens)
    if not known:
        log.warning("%s is not a model this version knows: running it with %s pooling, "
                    "no prefixes and %d word pieces. If its model card says otherwise, set "
                    "PLAUD_EMBED_POOLING, PLAUD_EMBED_QUERY_PREFIX, PLAUD_EMBED_PASSAGE_PREFIX "
                    "or PLAUD_EMBED_MAX_TOKENS.", config.embed_model, spec.pooling,
                    spec.max_tokens)
    return OnnxEmbedder(resolve_model(config), spec=spec, threads=config.embed_threads)


def _noting_damage(method: Callable[..., R]) -> Callable[..., R]:
    """A read that meets a damaged index file records it for ``status`` (``ok`` would be a
    lie until a cycle rebuilds it), then raises as before."""
    @functools.wraps(method)
    def read(self: SearchService, *args: Any, **kwargs: Any) -> R:
        try:
            return method(self, *args, **kwargs)
        except IndexCorruptError as exc:
            note_read_damage(self.config.home, str(exc))
            raise
    return read


class SearchService:
    """``first_sync``: how an incomplete index gets built when nobody else is building it;
    ``None`` runs that sync in the caller, with ``progress`` reporting."""

    def __init__(self, config: Config, embedder: Embedder | None = None, *,
                 first_sync: DetachedSync | None = None,
                 progress: Callable[[SyncProgress], object] = log_commits) -> None:
        self.config = config
        self.state = SyncStateStore(config.home)
        self.first_sync = first_sync
        self.progress = progress
        self._embedder = embedder
        self._embedder_lock = threading.Lock()
        self._snapshot_lock = threading.Lock()
        self._snapshot: Snapshot | None = None
        self._key: tuple[int, int, int] | None = None

    @property
    def embedder(self) -> Embedder:
        with self._embedder_lock:  # at most one load per process, even from threads
            if self._embedder is None:
                self._embedder = make_embedder(self.config)
            return self._embedder

    def snapshot(self) -> Snapshot | None:
        """The current index; reopened only when the manifest was replaced."""
        with self._snapshot_lock:  # tool calls run on worker threads
            key = manifest_key(self.config.index_dir)
            if key != self._key or self._snapshot is None:
                self._snapshot = open_snapshot(self.config.index_dir) if key else None
                self._key = key
            return self._snapshot

    def ready_snapshot(self) -> Snapshot:
        """A populated index. When it is empty, or its first sync never finished, and
        nobody is indexing, start that sync: on a background thread (the server: a tool call
        must answer now, from what is committed) or, for an empty index without one, in the
        caller (the CLI: a person waits and sees progress)."""
        snap = self.snapshot()
        if snap is not None and (snap.manifest.analyzer != ANALYZER
                                 or snap.manifest.schema < SCHEMA_VERSION):
            snap = self._upgrade(snap)
        empty = snap is None or not snap.recordings
        problem: SourceError | None = None
        if empty or not self.state.read().complete:
            try:
                self._start_first_sync(wait=empty)
            except SourceError as exc:  # no sign-in, no corpus: say that, not "building"
                problem = exc
            snap = self.snapshot()
        if snap is not None and snap.recordings:
            return snap
        raise self._not_ready(problem)

    def _start_first_sync(self, wait: bool) -> None:
        if self.first_sync is None and not wait:
            return
        source = make_source(self.config)  # fails fast when signed out
        if self.first_sync is not None:
            self.first_sync.start(self.config, lambda: self.embedder, source)
            return
        lock = IndexerLock(self.config.lock_path)
        if not lock.try_acquire(role="search-fallback"):
            return
        try:
            log.info("The index is empty and no indexer is running: indexing now")
            make_indexer(self.config, self.embedder, source, progress=self.progress
                         ).run_cycle()
        except SourceError as exc:
            log.warning("Fallback index cycle impossible: %s", exc)
        finally:
            lock.release()

    def _not_ready(self, problem: SourceError | None) -> IndexNotReadyError:
        if problem is not None:
            return IndexNotReadyError(f"Plaud index not available: {problem}")
        state = self.state.read()
        failed = state.last_error if state.last_success is None else None
        starting = self.first_sync is not None and self.first_sync.running(self.config)
        if starting or lock_holder(self.config.lock_path):
            progress = SyncProgress.from_state(state.progress)
            doing = (f"the first sync is {progress.describe(time.time())}" if progress else
                     "the first sync is starting")
            earlier = f" (the previous attempt failed: {failed})" if failed else ""
            return IndexNotReadyError(f"Plaud index not available yet: {doing}{earlier}. "
                                      "Nothing is searchable until the first recordings are "
                                      f"saved; ask again in {ASK_AGAIN_S} seconds.",
                                      building=True)
        if failed:
            return IndexNotReadyError(f"Plaud index not available: the first sync failed: "
                                      f"{failed}")
        return IndexNotReadyError(
            "Plaud index not available. Start the indexer (plaud-index-mcp indexer) "
            "after plaud-index-mcp login."
        )

    def _upgrade(self, snap: Snapshot) -> Snapshot | None:
        """An index of an older version: convert it now (seconds, no re-embedding) if no
        indexer is running; otherwise the indexer does it on its next cycle, and until then
        it is read in its old format (slower to open; keyword matches of non-ASCII words
        weaker if its analyser was the ASCII one)."""
        lock = IndexerLock(self.config.lock_path)
        if not lock.try_acquire(role="search-upgrade"):
            return snap
        try:
            open_writer(self.config.index_dir, snap.model)
        finally:
            lock.release()
        return self.snapshot()

    @_noting_damage
    def search(self, request: SearchRequest) -> SearchResult:
        state = self.state.read()  # before the snapshot: see ``freshness``
        snap = self.ready_snapshot()
        ranking = self._rank(snap, replace(request, zone=self.config.zone.tz))
        hits = tuple(self._local_hit(hit) for hit in ranking.hits)
        return SearchResult(request.query, hits, self.freshness(snap, state),
                            self._match_note(ranking), self.today())

    def today(self) -> Today:
        return today(self.config.zone, datetime.now(timezone.utc))

    def _local_hit(self, hit: Hit) -> Hit:
        local, utc = stamps(self.config.zone, hit.created_at)
        return replace(hit, created_at=local, created_at_utc=utc)

    @_noting_damage
    def browse(self, request: ListRequest) -> RecordingList:
        """Recordings newest first in the user's local days, one page."""
        state = self.state.read()
        snap = self.ready_snapshot()
        page, matched, cursor = list_recordings(snap, replace(request,
                                                              zone=self.config.zone.tz))
        rows = []
        for rec in page:
            local, utc = stamps(self.config.zone, rec.created_at)
            rows.append(ListedRecording(
                file_id=rec.file_id, title=rec.title, created_at=local, created_at_utc=utc,
                duration=format_clock(rec.duration_ms), duration_ms=rec.duration_ms,
                speakers=people(rec.speakers)[0], notes=rec.note_titles,
                summary=summary_of(snap, rec), source_kind=rec.source_kind,
                path=rec.origin or None, folders=rec.folders, marks=marks_of(rec),
                more_speakers=people(rec.speakers)[1]))
        return RecordingList(tuple(rows), matched, cursor, self.freshness(snap, state),
                             self.today())

    def _match_note(self, ranking: Ranking) -> str | None:
        if not ranking.hits:
            return "No recording matches this query and its filters."
        model = self._embedder
        best = ranking.best_similarity
        if model is None or best is None:
            return None
        weak, unmatched = model.weak_similarity, model.unmatched_similarity
        unheard = ranking.term_coverage is not None and ranking.term_coverage < HEARD
        if (weak is not None and best < weak) or (
                unmatched is not None and unheard and best < unmatched):
            return (f"No passage is a close match (best similarity {best:.2f}): these are "
                    "only the nearest recordings; the topic may never have come up.")
        return None

    @_noting_damage
    def get(self, file_id: str, query: str | None = None, at_ms: int | None = None,
            window_ms: int = DEFAULT_WINDOW_S * 1000) -> RecordingInfo:
        """One recording's metadata and a few snippets (on ``query`` if given), or with
        ``at_ms`` the utterances around that moment."""
        snap = self.ready_snapshot()
        index = snap.by_id.get(file_id.strip())
        if index is None:
            raise UnknownRecordingError(f"No recording with file_id {echo(file_id)} is in the "
                                        "index; use plaud_search or plaud_list to find file "
                                        "ids.")
        rec = snap.recordings[index]
        window = around(snap, rec.file_id, at_ms, window_ms) if at_ms is not None else None
        moments = overview(snap, rec.file_id) if window is None else ()
        if query and query.strip() and window is None:
            request = replace(make_request(query), file_id=rec.file_id, limit=1)
            hits = self._rank(snap, request).hits
            moments = hits[0].moments if hits else moments
        local, utc = stamps(self.config.zone, rec.created_at)
        return RecordingInfo(
            file_id=rec.file_id, title=rec.title, created_at=local, created_at_utc=utc,
            duration=format_clock(rec.duration_ms), duration_ms=rec.duration_ms,
            speakers=people(rec.speakers)[0], more_speakers=people(rec.speakers)[1],
            notes=rec.note_titles, chunks=rec.chunk_count,
            snippets=moments, fetch=fetch_hint(rec.origin), around=window, today=self.today(),
            source_kind=rec.source_kind, path=rec.origin or None, folders=rec.folders,
            marks=marks_of(rec))

    @_noting_damage
    def transcript(self, file_id: str, cursor: object = None) -> TranscriptPage:
        """One page of a recording's whole transcript, from the index (no call to Plaud)."""
        return transcript_page(self.ready_snapshot(), file_id, cursor, self.config.zone)

    @_noting_damage
    def notes(self, request: NotesRequest) -> NotesResult:
        """AI notes (a kind of section, or whole) of one recording or of every recording the
        filters let through, newest first, one page."""
        state = self.state.read()
        snap = self.ready_snapshot()
        return notes_result(snap, replace(request, zone=self.config.zone),
                            self.freshness(snap, state), self.today())

    def _rank(self, snap: Snapshot, request: SearchRequest) -> Ranking:
        vector = None
        if request.mode != "keyword":
            embedder = self.embedder
            if snap.model.model_id == embedder.model_id and snap.model.dim == embedder.dim:
                vector = embedder.embed_query(request.query)
            else:
                log.warning("Index model %s differs from loaded model %s: keyword-only search",
                            snap.model.model_id, embedder.model_id)
        try:
            ranking = rank(snap, request, vector)
        except IndexCorruptError:  # damage in a file trusted at open: trust none of them
            distrust(self.config.index_dir)
            with self._snapshot_lock:
                self._key = None  # the next call opens (and checks) the index again
            raise
        return replace(ranking, hits=[replace(hit, fetch=fetch_hint(hit.path))
                                      for hit in ranking.hits])

    def pending(self) -> IndexInfo:
        """``freshness`` of an index with nothing committed yet (a first sync under way)."""
        info = self.freshness(None)
        return replace(info, complete=False, progress=info.progress or "starting")

    def freshness(self, snap: Snapshot | None, state: SyncState | None = None) -> IndexInfo:
        """How complete ``snap`` is. ``state`` must be read before ``snap`` was opened: a
        sync that finished by then committed everything first, so "complete" is never said
        of a snapshot older than the last commit (read after, it could be)."""
        after = self.state.read()
        before = state or after
        state, complete = after, before.complete and after.complete
        progress = SyncProgress.from_state(after.progress or before.progress)
        now = time.time()
        searchable = len(snap.recordings) if snap else 0
        described = None if progress is None or complete else \
            progress.describe(now, searchable=searchable) \
            if lock_holder(self.config.lock_path) else progress.describe_stopped(now)
        finished = after.last_success if after.last_success is not None else (
            # an index that came without a sync state counts as synced when it was written
            None if not complete or snap is None else _epoch(snap.manifest.updated_at))
        return IndexInfo(recordings=searchable,
                         chunks=snap.live_chunks if snap else 0,
                         last_sync=_local(self.config.zone, finished),
                         last_error=state.last_error, complete=complete,
                         progress=described,
                         last_commit=stamps(self.config.zone, snap.manifest.updated_at)[0]
                         if snap and snap.manifest.updated_at else None)

