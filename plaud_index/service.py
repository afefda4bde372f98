"""Wiring shared by the CLI and the MCP server: config → source, embedder, index, search.

Holds the per-process state: the embedding model (loaded at most once) and
the current index snapshot (reopened only when the manifest changes).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from .auth import TokenManager
from .config import Config
from .embedder import Embedder, HashEmbedder, OnnxEmbedder
from .errors import IndexNotReadyError, SourceError, UnknownRecordingError
from .health import health
from .indexer import Indexer, RecordingSource, read_sync_state
from .lock import IndexerLock, lock_holder
from .mock_client import MockClient
from .model_files import resolve_model
from .models import Hit, Moment, SyncReport
from .plaud_api import DETAIL_INTERVAL_S, PlaudClient
from .plaud_settings import plaud_settings
from .search import SearchRequest, format_clock, make_request, overview, search
from .snapshot import Snapshot
from .store import manifest_key, open_snapshot
from .tokens import TokenStore, default_store, migrate_legacy
from .transport import Transport
from .web_api import DEFAULT_WEB_BASE, WebClient

log = logging.getLogger(__name__)

FETCH_HINT = ("Full text: call Plaud's MCP get_transcript / get_note / get_file with this "
              "file_id.")


def make_embedder(config: Config) -> Embedder:
    if config.embedder == "mock":
        return HashEmbedder()
    return OnnxEmbedder(resolve_model(config), threads=config.embed_threads)


def make_source(config: Config, env: Mapping[str, str] | None = None) -> RecordingSource:
    """The mock corpus with ``PLAUD_CLIENT=mock``; otherwise the signed-in Plaud account."""
    if config.client == "mock":
        return MockClient(config.mock_corpus)
    env = os.environ if env is None else env
    if env.get("PLAUD_API_TOKEN"):  # the power-user web-API path; never used when unset
        return WebClient(env["PLAUD_API_TOKEN"], env.get("PLAUD_API_BASE") or DEFAULT_WEB_BASE)
    store = token_store(config)
    migrate_legacy(store, Path(env.get("HOME") or Path.home()) / ".plaud" / "tokens-mcp.json")
    if store.load() is None:
        raise SourceError("Not signed in to Plaud: run `plaud-index-mcp login` (or set "
                          "PLAUD_CLIENT=mock to index the bundled sample).")
    settings = plaud_settings(env)
    transport = Transport()
    tokens = TokenManager(store, settings, transport, config.home / "refresh.lock")
    interval = env.get("PLAUD_DETAIL_INTERVAL_MS", "")
    return PlaudClient(settings, tokens, transport, detail_interval=int(interval) / 1000
                       if interval.isdigit() else DETAIL_INTERVAL_S)


def token_store(config: Config) -> TokenStore:
    return default_store(config.home)


def run_locked_cycle(config: Config, embedder: Embedder,
                     source: RecordingSource | None = None,
                     should_stop: Callable[[], bool] = lambda: False) -> SyncReport:
    """One cycle under the indexer lock; ``IndexBusyError`` if someone else holds it."""
    with IndexerLock(config.lock_path):
        indexer = Indexer(source or make_source(config), embedder, config.index_dir,
                          interval_s=config.interval_ms / 1000, should_stop=should_stop)
        return indexer.run_cycle()


def moment_to_json(m: Moment) -> dict[str, Any]:
    return {"start": format_clock(m.start_ms), "start_ms": m.start_ms, "end_ms": m.end_ms,
            "speaker": m.speaker, "source": m.source, "snippet": m.snippet}


def hit_to_json(hit: Hit) -> dict[str, Any]:
    return {
        "file_id": hit.file_id,
        "title": hit.title,
        "created_at": hit.created_at,
        "score": hit.score,
        "snippet": hit.snippet,
        "moments": [moment_to_json(m) for m in hit.moments],
        "fetch": FETCH_HINT,
    }


class SearchService:
    def __init__(self, config: Config, embedder: Embedder | None = None) -> None:
        self.config = config
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
        if snap is not None and snap.recordings:
            return snap
        lock = IndexerLock(self.config.lock_path)
        if fallback and lock.try_acquire(role="search-fallback"):
            try:
                source = make_source(self.config)
                log.info("The index is empty and no indexer is running: indexing once now")
                Indexer(source, self.embedder, self.config.index_dir).run_cycle()
            except SourceError as exc:
                log.warning("Fallback index cycle impossible: %s", exc)
            finally:
                lock.release()
            snap = self.snapshot()
            if snap is not None and snap.recordings:
                return snap
        if lock_holder(self.config.lock_path):
            progress = read_sync_state(self.config.home).get("progress") or {}
            done, total = progress.get("done"), progress.get("total")
            count = f" ({done} of {total} recordings)" if total else ""
            raise IndexNotReadyError(
                f"Plaud index not available yet: the indexer is building it{count}.")
        raise IndexNotReadyError(
            "Plaud index not available. Start the indexer (python -m plaud_index indexer) "
            "after plaud-index-mcp login."
        )

    def search(self, request: SearchRequest) -> dict[str, Any]:
        snap = self.ready_snapshot()
        hits = self._rank(snap, request)
        return {"query": request.query, "results": [hit_to_json(h) for h in hits],
                "index": self.freshness(snap)}

    def get(self, file_id: str, query: str | None = None) -> dict[str, Any]:
        """One recording's metadata and a few snippets (on ``query`` if given)."""
        snap = self.ready_snapshot()
        index = snap.by_id.get(file_id.strip())
        if index is None:
            raise UnknownRecordingError(f"No recording with file_id {file_id!r} is in the "
                                        "index; use plaud_search to find file ids.")
        rec = snap.recordings[index]
        moments = overview(snap, rec.file_id)
        if query and query.strip():
            request = replace(make_request(query), file_id=rec.file_id, limit=1)
            hits = self._rank(snap, request)
            moments = hits[0].moments if hits else moments
        return {"file_id": rec.file_id, "title": rec.title, "created_at": rec.created_at,
                "duration": format_clock(rec.duration_ms), "duration_ms": rec.duration_ms,
                "speakers": list(rec.speakers), "notes": list(rec.note_titles),
                "chunks": rec.chunk_count, "snippets": [moment_to_json(m) for m in moments],
                "fetch": FETCH_HINT}

    def _rank(self, snap: Snapshot, request: SearchRequest) -> list[Hit]:
        vector = None
        if request.mode != "keyword":
            embedder = self.embedder
            if snap.model.model_id == embedder.model_id and snap.model.dim == embedder.dim:
                vector = embedder.embed([request.query])[0]
            else:
                log.warning("Index model %s differs from loaded model %s: keyword-only search",
                            snap.model.model_id, embedder.model_id)
        return search(snap, request, vector)

    def freshness(self, snap: Snapshot | None) -> dict[str, Any]:
        state = read_sync_state(self.config.home)
        return {"recordings": len(snap.recordings) if snap else 0,
                "chunks": snap.live_chunks if snap else 0,
                "last_sync": snap.manifest.get("updated_at") if snap else None,
                "last_error": state.get("last_error")}

    def status(self) -> dict[str, Any]:
        snap = self.snapshot()
        state = read_sync_state(self.config.home)
        return {
            "home": str(self.config.home),
            "index": str(self.config.index_dir),
            "recordings": len(snap.recordings) if snap else 0,
            "chunks": snap.live_chunks if snap else 0,
            "generation": snap.generation if snap else 0,
            "model": snap.manifest["model"] if snap else None,
            "last_commit": snap.manifest.get("updated_at") if snap else None,
            "last_success": state.get("last_success"),
            "last_attempt": state.get("last_attempt"),
            "last_error": state.get("last_error"),
            "last_error_kind": state.get("last_error_kind"),
            "last_report": state.get("last_report"),
            "pending": state.get("processing"),
            "held_deletion": state.get("held_deletion"),
            "daemon": state.get("daemon"),
            "lock_holder": lock_holder(self.config.lock_path),
            "health": health(state, time.time(), self.config.interval_ms,
                             _alive((state.get("daemon") or {}).get("pid"))),
        }


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


def render_results(result: dict[str, Any]) -> str:
    """The readable rendering of a search result (terminal and MCP text content)."""
    results = result["results"]
    index = result["index"]
    lines = [f'{len(results)} recording(s) for "{result["query"]}" '
             f'(index: {index["recordings"]} recordings, last sync {index["last_sync"]})']
    for rank, hit in enumerate(results, 1):
        lines.append(f'\n{rank}. {hit["title"]}  [{hit["created_at"][:10]}]  '
                     f'score {hit["score"]:.3f}  file_id {hit["file_id"]}')
        for moment in hit["moments"]:
            where = moment["start"] or moment["source"]
            who = f' {moment["speaker"]}' if moment["speaker"] else ""
            lines.append(f'   @{where}{who}: "{moment["snippet"]}"')
    if results:
        lines.append(f"\n{FETCH_HINT}")
    return "\n".join(lines)
