"""``plaud_search`` and ``plaud_get``: ranked recordings, and one recording's details."""

from __future__ import annotations

from dataclasses import replace

from ..errors import UnknownRecordingError
from ..results import RecordingInfo, SearchResult
from ..search.browse import about
from ..search.rank import Ranking, SearchRequest, echo, make_request, overview
from ..search.transcript import DEFAULT_WINDOW_S, around
from .index import IndexReader, fetch_hint
from .readiness import Readiness

# Fewer than this share of a query's words occurring anywhere in the index means the
# words point away from it: every dev query has at least half of them; "banana bread
# recipe with walnuts" a quarter (bench/retrieval.py --floor-report).
HEARD = 0.5


class Searching:
    def __init__(self, reader: IndexReader, readiness: Readiness) -> None:
        self.reader = reader
        self.readiness = readiness

    def search(self, request: SearchRequest) -> SearchResult:
        with self.reader.damage_noted():
            snap, state = self.readiness.ready()
            ranking = self.reader.rank(snap, request)
        return SearchResult(request.query, tuple(ranking.hits),
                            self.readiness.freshness(snap, state), self._match_note(ranking),
                            self.reader.today())

    def _match_note(self, ranking: Ranking) -> str | None:
        if not ranking.hits:
            return "No recording matches this query and its filters."
        model = self.reader.loaded_embedder
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

    def get(self, file_id: str, query: str | None = None, at_ms: int | None = None,
            window_ms: int = DEFAULT_WINDOW_S * 1000) -> RecordingInfo:
        """One recording's metadata and a few snippets (on ``query`` if given), or with
        ``at_ms`` the utterances around that moment."""
        with self.reader.damage_noted():
            snap, state = self.readiness.ready()
            index = snap.by_id.get(file_id.strip())
            if index is None:
                raise self.readiness.unknown(UnknownRecordingError(
                    f"No recording with file_id {echo(file_id)} is in the index; use "
                    "plaud_search or plaud_list to find file ids."), snap, state)
            rec = snap.recordings[index]
            window = around(snap, rec.file_id, at_ms, window_ms) if at_ms is not None \
                else None
            moments = overview(snap, rec.file_id) if window is None else ()
            if query and query.strip() and window is None:
                request = replace(make_request(query), file_id=rec.file_id, limit=1)
                hits = self.reader.rank(snap, request).hits
                moments = hits[0].moments if hits else moments
        return RecordingInfo(**about(rec, self.reader.config.zone), chunks=rec.chunk_count,
                             snippets=moments, fetch=fetch_hint(rec.origin), around=window,
                             today=self.reader.today())
