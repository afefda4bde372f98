"""Wiring shared by the CLI and the MCP server: config → source, embedder, index, search.

Holds the per-process state: the embedding model (loaded at most once) and
the current index snapshot (reopened only when the manifest changes). Every
answer is one of the result types of ``models``.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from .analyzer import VERSION as ANALYZER
from .config import Config
from .embedder import Embedder, HashEmbedder, OnnxEmbedder
from .errors import IndexNotReadyError, SourceError, UnknownRecordingError
from .health import health
from .index.snapshot import Snapshot
from .index.store import manifest_key, open_snapshot
from .index.writer import open_writer
from .indexer import Indexer
from .lock import IndexerLock, lock_holder
from .model_files import resolve_model
from .model_specs import model_spec
from .models import Hit, IndexInfo, RecordingInfo, SearchResult, Status, SyncReport
from .plaud import RecordingSource, make_source
from .search import SearchRequest, echo, format_clock, make_request, overview, search
from .sync_state import SyncStateStore

log = logging.getLogger(__name__)

FETCH_HINT = ("Full text: call Plaud's MCP get_transcript / get_note / get_file with this "
              "file_id.")


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


def make_indexer(config: Config, embedder: Embedder, source: RecordingSource | None = None,
                 should_stop: Callable[[], bool] = lambda: False) -> Indexer:
    return Indexer(source or make_source(config), embedder, config.home,
                   interval_s=config.interval_ms / 1000, should_stop=should_stop)


def run_locked_cycle(config: Config, embedder: Embedder,
                     source: RecordingSource | None = None,
                     should_stop: Callable[[], bool] = lambda: False) -> SyncReport:
    """One cycle under the indexer lock; ``IndexBusyError`` if someone else holds it."""
    with IndexerLock(config.lock_path):
        return make_indexer(config, embedder, source, should_stop).run_cycle()


class SearchService:
    def __init__(self, config: Config, embedder: Embedder | None = None) -> None:
        self.config = config
        self.state = SyncStateStore(config.home)
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

    def ready_snapshot(self, fallback: bool = True) -> Snapshot:
        """A populated index, building it first if it is empty and nobody else is indexing."""
        snap = self.snapshot()
        if snap is not None and snap.manifest.analyzer != ANALYZER:
            snap = self._upgrade(snap)
        if snap is not None and snap.recordings:
            return snap
        lock = IndexerLock(self.config.lock_path)
        if fallback and lock.try_acquire(role="search-fallback"):
            try:
                log.info("The index is empty and no indexer is running: indexing once now")
                make_indexer(self.config, self.embedder).run_cycle()
            except SourceError as exc:
                log.warning("Fallback index cycle impossible: %s", exc)
            finally:
                lock.release()
            snap = self.snapshot()
            if snap is not None and snap.recordings:
                return snap
        if lock_holder(self.config.lock_path):
            progress = self.state.read().progress or {}
            done, total = progress.get("done"), progress.get("total")
            count = f" ({done} of {total} recordings)" if total else ""
            raise IndexNotReadyError(
                f"Plaud index not available yet: the indexer is building it{count}.")
        raise IndexNotReadyError(
            "Plaud index not available. Start the indexer (plaud-index-mcp indexer) "
            "after plaud-index-mcp login."
        )

    def _upgrade(self, snap: Snapshot) -> Snapshot | None:
        """An index of an older version: re-tokenise it now (seconds, no re-embedding) if
        no indexer is running; otherwise the indexer does it, and until then keyword
        matches of non-ASCII words are weaker."""
        lock = IndexerLock(self.config.lock_path)
        if not lock.try_acquire(role="search-upgrade"):
            return snap
        try:
            open_writer(self.config.index_dir, snap.model)
        finally:
            lock.release()
        return self.snapshot()

    def search(self, request: SearchRequest) -> SearchResult:
        snap = self.ready_snapshot()
        hits = self._rank(snap, request)
        return SearchResult(request.query, tuple(hits), self.freshness(snap))

    def get(self, file_id: str, query: str | None = None) -> RecordingInfo:
        """One recording's metadata and a few snippets (on ``query`` if given)."""
        snap = self.ready_snapshot()
        index = snap.by_id.get(file_id.strip())
        if index is None:
            raise UnknownRecordingError(f"No recording with file_id {echo(file_id)} is in the "
                                        "index; use plaud_search to find file ids.")
        rec = snap.recordings[index]
        moments = overview(snap, rec.file_id)
        if query and query.strip():
            request = replace(make_request(query), file_id=rec.file_id, limit=1)
            hits = self._rank(snap, request)
            moments = hits[0].moments if hits else moments
        return RecordingInfo(
            file_id=rec.file_id, title=rec.title, created_at=rec.created_at,
            duration=format_clock(rec.duration_ms), duration_ms=rec.duration_ms,
            speakers=rec.speakers, notes=rec.note_titles, chunks=rec.chunk_count,
            snippets=moments, fetch=FETCH_HINT)

    def _rank(self, snap: Snapshot, request: SearchRequest) -> list[Hit]:
        vector = None
        if request.mode != "keyword":
            embedder = self.embedder
            if snap.model.model_id == embedder.model_id and snap.model.dim == embedder.dim:
                vector = embedder.embed_query(request.query)
            else:
                log.warning("Index model %s differs from loaded model %s: keyword-only search",
                            snap.model.model_id, embedder.model_id)
        return [replace(hit, fetch=FETCH_HINT) for hit in search(snap, request, vector)]

    def freshness(self, snap: Snapshot | None) -> IndexInfo:
        return IndexInfo(recordings=len(snap.recordings) if snap else 0,
                         chunks=snap.live_chunks if snap else 0,
                         last_sync=snap.manifest.updated_at if snap else None,
                         last_error=self.state.read().last_error)

    def status(self) -> Status:
        snap = self.snapshot()
        state = self.state.read()
        daemon_pid = (state.daemon or {}).get("pid")
        holder = lock_holder(self.config.lock_path)
        return Status(
            home=str(self.config.home), index=str(self.config.index_dir),
            recordings=len(snap.recordings) if snap else 0,
            chunks=snap.live_chunks if snap else 0,
            generation=snap.generation if snap else 0,
            model=snap.model.to_json() if snap else None,
            last_commit=snap.manifest.updated_at if snap else None,
            last_success=state.last_success, last_attempt=state.last_attempt,
            last_error=state.last_error, last_error_kind=state.last_error_kind,
            last_report=state.last_report, pending=state.processing,
            held_deletion=state.held_deletion, daemon=state.daemon, progress=state.progress,
            skipped=state.skipped,
            lock_holder=holder,
            health=health(state, time.time(), self.config.interval_ms, _alive(daemon_pid),
                          writable=None if _writable(self.config.home) else
                          str(self.config.home), syncing=holder is not None),
        )


def _writable(home: Path) -> bool:
    return not home.exists() or os.access(home, os.W_OK)


def _alive(pid: object) -> bool | None:
    if not isinstance(pid, int):
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
