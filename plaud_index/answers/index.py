"""The index as this process reads it: the embedding model (loaded at most once), the
current snapshot (reopened only when the manifest changes), ranking with the query's
vector, and what a damaged file met on the way leaves on record."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime, timezone
from typing import Any, Protocol

from ..clock import stamps, today
from ..config import Config
from ..embedding.embedder import Embedder, HashEmbedder, OnnxEmbedder
from ..embedding.files import resolve_model
from ..embedding.specs import model_spec
from ..errors import IndexCorruptError
from ..index.analyzer import VERSION as ANALYZER
from ..index.manifest import SCHEMA_VERSION, ModelInfo
from ..index.snapshot import Snapshot
from ..index.store import manifest_key, open_snapshot
from ..index.trust import distrust
from ..people import NameStore
from ..results import Hit, Today
from ..search.rank import Ranking, SearchRequest, rank
from ..sync.state import SyncState, SyncStateStore, note_read_damage

log = logging.getLogger(__name__)

FETCH_HINT = ("Around a moment: plaud_get(file_id, at=<the moment's start>); the whole "
              "transcript: plaud_transcript(file_id); the AI notes: plaud_notes(file_id).")


def fetch_hint(path: str | None) -> str:
    """How to read a result in full: the tools that read the index, and the local file."""
    return f"{FETCH_HINT} The file: {path}" if path else FETCH_HINT


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


class Keeping(Protocol):
    """What the reading side asks of the keeper it is handed (``sync.keeper.Keeper``):
    the reader never syncs, takes the lock or writes the index itself."""

    def holder(self) -> dict[str, Any] | None: ...

    def indexing(self) -> bool: ...

    def failure(self) -> str | None: ...

    def waits_for_first_commit(self) -> bool: ...

    def start_first_sync(self, wait: bool, needed: Callable[[], bool],
                         embedder: Callable[[], Embedder]) -> None: ...

    def keep_fresh(self, state: SyncState, stale: Callable[[SyncState], bool],
                   current: Callable[[], SyncState]) -> bool: ...

    def upgrade(self, model: ModelInfo) -> bool: ...


class IndexReader:
    """One per process; tool calls may use it from several threads. ``keeper`` converts an
    index an older version wrote (``_upgrade``)."""

    def __init__(self, config: Config, embedder: Embedder | None = None,
                 keeper: Keeping | None = None) -> None:
        self.config = config
        self.keeper = keeper
        self.state = SyncStateStore(config.home, cached=True)
        self._embedder = embedder
        self._embedder_lock = threading.Lock()
        self._snapshot_lock = threading.Lock()
        self._snapshot: Snapshot | None = None
        self._key: tuple[int, int, int] | None = None
        self.names = NameStore(config.home)
        self._named: tuple[Snapshot, object, Snapshot] | None = None  # (as opened, names, read)

    @property
    def embedder(self) -> Embedder:
        with self._embedder_lock:  # at most one load per process, even from threads
            if self._embedder is None:
                self._embedder = make_embedder(self.config)
            return self._embedder

    @property
    def loaded_embedder(self) -> Embedder | None:
        """The model if it is loaded already (nothing is loaded for asking)."""
        return self._embedder

    def snapshot(self) -> Snapshot | None:
        """The current index read with the local speaker names (``people``)."""
        snap = self.opened()
        if snap is None:
            return None
        names = self.names.names()
        with self._snapshot_lock:
            if self._named is None or self._named[0] is not snap or self._named[1] != names:
                self._named = (snap, names, snap.with_names(names))
            return self._named[2]

    def opened(self) -> Snapshot | None:
        """The current index as on disk; reopened only when the manifest was replaced, and
        an index of an older version converted on the way when nobody indexes
        (``_upgrade``)."""
        with self._snapshot_lock:
            key = manifest_key(self.config.index_dir)
            if key != self._key or self._snapshot is None:
                self._snapshot = open_snapshot(self.config.index_dir) if key else None
                self._key = key
            snap = self._snapshot
        if snap is not None and (snap.manifest.analyzer != ANALYZER
                                 or snap.manifest.schema < SCHEMA_VERSION):
            return self._upgrade(snap)
        return snap

    def _upgrade(self, snap: Snapshot) -> Snapshot | None:
        """An index of an older version: the keeper converts it now (seconds, no
        re-embedding) if nobody indexes; otherwise the indexer does it on its next cycle,
        and until then it is read in its old format (slower to open; keyword matches of
        non-ASCII words weaker if its analyser was the ASCII one)."""
        if self.keeper is None or not self.keeper.upgrade(snap.model):
            return snap
        with self._snapshot_lock:
            self._key = None
        return self.opened()

    @contextmanager
    def damage_noted(self) -> Iterator[None]:
        """A read that meets a damaged index file records it for ``status`` (``ok`` would be
        a lie until a cycle rebuilds it), then raises as before."""
        try:
            yield
        except IndexCorruptError as exc:
            note_read_damage(self.config.home, str(exc))
            raise

    def rank(self, snap: Snapshot, request: SearchRequest) -> Ranking:
        vector = None
        if request.mode != "keyword":
            embedder = self.embedder
            if snap.model.model_id == embedder.model_id and snap.model.dim == embedder.dim:
                vector = embedder.embed_query(request.query)
            else:
                log.warning("Index model %s differs from loaded model %s: keyword-only search",
                            snap.model.model_id, embedder.model_id)
        try:
            ranking = rank(snap, replace(request, zone=self.config.zone.tz), vector)
        except IndexCorruptError:  # damage in a file trusted at open: trust none of them
            distrust(self.config.index_dir)
            with self._snapshot_lock:
                self._key = None  # the next call opens (and checks) the index again
            raise
        return replace(ranking, hits=[self.local_hit(hit) for hit in ranking.hits])

    def local_hit(self, hit: Hit) -> Hit:
        """A hit as it is answered: its times in the user's zone, and how to fetch it."""
        local, utc = stamps(self.config.zone, hit.created_at)
        return replace(hit, created_at=local, created_at_utc=utc, fetch=fetch_hint(hit.path))

    def today(self) -> Today:
        return today(self.config.zone, datetime.now(timezone.utc))
