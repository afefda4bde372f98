"""Ranking: dense cosine + BM25, fused; filters first; one result per recording. Pure.

Scores, all in [0, 1], higher is better, comparable only within one query:
- a chunk's score, by mode: ``vector`` the cosine similarity of query and chunk
  (clipped at 0); ``keyword`` its BM25 divided by the best BM25 among the
  filtered rows; ``hybrid`` (default) ``(content + TITLE_WEIGHT * title) / (1 +
  TITLE_WEIGHT)``, where ``content`` is ``VECTOR_WEIGHT * semantic + (1 -
  VECTOR_WEIGHT) * keyword``, ``semantic`` the cosine rescaled so the query's best
  passage is 1 and its 300th best is 0, and ``title`` how much of the query its
  recording's title holds (``index.titles``) raised to ``TITLE_SHARPNESS``: a query
  that names a meeting by its title finds it first, a question about what was said
  is decided by what was said.
- a recording's score: its best chunk plus a little for each of its next best
  chunks (``collapse``: a meeting that keeps returning to the topic beats one
  passing mention), in [0, 1]. Recordings under ``RELEVANCE_FLOOR`` times the
  best recording's score are dropped.
The weights were chosen on the retrieval benchmark (README, "Retrieval quality").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, timezone, tzinfo

import numpy as np

from ..errors import InvalidQueryError
from ..index.analyzer import has_searchable_text, query_terms
from ..index.postings import bm25, present_terms
from ..index.snapshot import SOURCE_CODES, Snapshot
from ..results import Hit, Moment
from .collapse import collapse
from .moments import moment_room, pick_moments, quote_width
from .topk import masked, rescale_top, top_k

DEFAULT_LIMIT = 8
MAX_LIMIT = 25
MAX_QUERY_CHARS = 1000
MODES = ("hybrid", "vector", "keyword")
SOURCES = ("any", "transcript", "notes")
SOURCE_KINDS = ("any", "plaud", "folder")
VECTOR_WEIGHT = 0.2
# The title's part of a hybrid score, and how sharply it favours a title that holds the
# whole query over one holding a word of it; chosen on the dev benchmark (bench/people.py:
# series code + title finds the meeting first; bench/retrieval.py: content questions).
TITLE_WEIGHT = 0.75
TITLE_SHARPNESS = 4
CANDIDATES = 300  # chunks considered before collapsing to recordings
# Recordings scoring under this share of the best one are dropped: on the dev benchmark no
# relevant recording in a top 10 scores under 0.4 of its query's best (bench/retrieval.py
# --floor-report), so 0.3 keeps a margin while removing the tail of passing mentions.
RELEVANCE_FLOOR = 0.3
MOMENTS = 3  # at most, for the best recording (``moments.moment_room``)


@dataclass(frozen=True)
class SearchRequest:
    query: str
    date_from: date | None = None
    date_to: date | None = None
    limit: int = DEFAULT_LIMIT
    speaker: str | None = None
    source: str = "any"
    mode: str = "hybrid"
    file_id: str | None = None  # restrict to one recording (plaud_get's snippets)
    zone: tzinfo = timezone.utc  # whose calendar days date_from / date_to are
    source_kind: str = "any"  # "plaud" recordings or "folder" files only
    folder: str | None = None  # only recordings filed in the Plaud folder of this name


def echo(value: object, limit: int = 60) -> str:
    """A value quoted back in an error message, never more than ``limit`` characters."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + f"… ({len(text)} characters)"


_ISO_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")


def parse_day(value: object, name: str) -> date | None:
    if value is None or value == "":
        return None
    if isinstance(value, date):
        return value
    try:
        if not isinstance(value, str) or not _ISO_DAY.fullmatch(value):
            raise ValueError(value)
        return date.fromisoformat(value)
    except ValueError:
        raise InvalidQueryError(f"{name} must be a date as YYYY-MM-DD, got {echo(value)}") \
            from None


def make_request(query: object, *, date_from: object = None, date_to: object = None,
                 limit: object = DEFAULT_LIMIT, speaker: object = None, source: object = "any",
                 mode: object = "hybrid", source_kind: object = "any",
                 folder: object = None) -> SearchRequest:
    """Validate search arguments; every problem is an ``InvalidQueryError`` a model can fix.
    Arguments arrive as the client sent them (no coercion): ``"8"`` or ``true`` is not a
    limit, ``20250101`` is not a date."""
    if query is not None and not isinstance(query, str):
        raise InvalidQueryError(f"query must be text, got {echo(query)}")
    query = (query or "").strip()
    if not query:
        raise InvalidQueryError("query is empty: say what to look for")
    if not has_searchable_text(query):
        raise InvalidQueryError("query has no letters or digits to search for")
    if len(query) > MAX_QUERY_CHARS:
        raise InvalidQueryError(f"query is {len(query)} characters; the most is "
                                f"{MAX_QUERY_CHARS}")
    if not isinstance(mode, str) or mode not in MODES:
        raise InvalidQueryError(f"mode must be one of {', '.join(MODES)}, got {echo(mode)}")
    filters = parse_filters(date_from, date_to, speaker, source, source_kind, folder)
    return SearchRequest(query, filters.date_from, filters.date_to,
                         check_limit(limit, MAX_LIMIT), filters.speaker, filters.source, mode,
                         source_kind=filters.source_kind, folder=filters.folder)


@dataclass(frozen=True)
class Filters:
    """The filters ``plaud_search`` and ``plaud_list`` share, validated."""

    date_from: date | None
    date_to: date | None
    speaker: str | None
    source: str
    source_kind: str
    folder: str | None = None


def parse_filters(date_from: object, date_to: object, speaker: object, source: object,
                  source_kind: object, folder: object = None) -> Filters:
    start, end = parse_day(date_from, "date_from"), parse_day(date_to, "date_to")
    if start and end and start > end:
        raise InvalidQueryError(f"date_from {start} is after date_to {end}")
    if speaker is not None and not isinstance(speaker, str):
        raise InvalidQueryError(f"speaker must be text, got {echo(speaker)}")
    if folder is not None and not isinstance(folder, str):
        raise InvalidQueryError(f"folder must be a folder's name, got {echo(folder)}")
    return Filters(start, end, (speaker or "").strip()[:200] or None,
                   _one_of(source, SOURCES, "source"), _one_of(source_kind, SOURCE_KINDS,
                                                               "source_kind"),
                   " ".join((folder or "").split())[:200] or None)


def in_folder(folders: tuple[str, ...], wanted: str) -> bool:
    """Is a recording filed in the folder named ``wanted``? Whole names, any case."""
    key = wanted.casefold()
    return any(" ".join(f.split()).casefold() == key for f in folders)


def check_limit(limit: object, most: int) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= most:
        raise InvalidQueryError(f"limit must be an integer from 1 to {most}, got "
                                f"{echo(limit)}")
    return limit


def _one_of(value: object, choices: tuple[str, ...], name: str) -> str:
    if not isinstance(value, str) or value not in choices:
        raise InvalidQueryError(f"{name} must be one of {', '.join(choices)}, got "
                                f"{echo(value)}")
    return value


def filter_mask(snapshot: Snapshot, request: SearchRequest) -> np.ndarray:
    """Rows that may be ranked at all: live, and inside every filter."""
    mask: np.ndarray = np.array(snapshot.live, dtype=bool)
    if request.file_id is not None:
        mask &= snapshot.row_recording == snapshot.by_id.get(request.file_id, -2)
    if request.date_from or request.date_to:
        ok = np.ones(len(snapshot.recordings), dtype=bool)
        if request.date_from:
            ok &= snapshot.created_s >= day_start(request.date_from, request.zone)
        if request.date_to and request.date_to < date.max:
            ok &= snapshot.created_s < day_start(request.date_to + timedelta(days=1),
                                                 request.zone)
        mask &= np.append(ok, False)[snapshot.row_recording]  # -1 (dead): the False
    if request.source_kind != "any":
        kind = snapshot.folder_recordings == (request.source_kind == "folder")
        mask &= np.append(kind, False)[snapshot.row_recording]
    if request.folder:
        filed = np.array([in_folder(r.folders, request.folder) for r in snapshot.recordings],
                         dtype=bool)
        mask &= np.append(filed, False)[snapshot.row_recording]
    if request.source != "any":
        mask &= snapshot.columns.source == SOURCE_CODES[request.source]
    if request.speaker:
        mask &= snapshot.speaker_rows(request.speaker)
    return mask


def day_start(day: date, zone: tzinfo) -> float:
    """The instant ``day`` begins in ``zone``, seconds since the epoch (a recording is on
    that calendar day from then until the next day begins)."""
    return datetime.combine(day, time.min, tzinfo=zone).timestamp()


def similarities(snapshot: Snapshot, request: SearchRequest,
                 query_vector: np.ndarray | None, mask: np.ndarray) -> np.ndarray | None:
    """Each row's cosine similarity to the query, clipped to [0, 1], for the rows in
    ``mask`` (the rest 0); ``None`` when the mode or a missing vector leaves the semantic
    side out."""
    if request.mode == "keyword" or query_vector is None or not len(snapshot.chunks):
        return None
    scores = snapshot.cosine(query_vector, None if mask.all() else mask)
    clipped: np.ndarray = np.clip(scores, 0.0, 1.0, out=scores)
    return clipped


def chunk_scores(snapshot: Snapshot, request: SearchRequest, dense: np.ndarray | None,
                 mask: np.ndarray) -> np.ndarray:
    """One fused score in [0, 1] per row from the ``similarities`` (``dense``, ``None`` for
    keyword only) and BM25; rows outside ``mask`` get -1. Arrays of every row are made
    once and updated in place (at a million rows each pass costs about a millisecond)."""
    n = len(snapshot.chunks)
    keyword: np.ndarray = np.zeros(n, dtype=np.float32)
    if request.mode != "vector" and n:
        keyword = bm25(snapshot.keyword_segments(), query_terms(request.query), n, mask,
                       snapshot.doclen)
        top = float(keyword.max())  # BM25 scores only the rows in the mask
        if top > 0:
            keyword /= np.float32(top)
    if dense is None:
        fused = keyword if request.mode != "vector" else np.zeros(n, dtype=np.float32)
    elif request.mode == "vector":
        fused = dense
    else:
        fused = rescale_top(dense, mask, CANDIDATES)
        fused *= np.float32(VECTOR_WEIGHT)
        keyword *= np.float32(1 - VECTOR_WEIGHT)
        fused += keyword
    if request.mode == "hybrid":
        add_titles(fused, snapshot, request)
    if mask.all():
        return fused
    return np.where(mask, fused, np.float32(-1.0)).astype(np.float32, copy=False)


def add_titles(fused: np.ndarray, snapshot: Snapshot, request: SearchRequest) -> None:
    """Weigh each row's recording title in (in place): ``TITLE_WEIGHT`` times its title
    match sharpened, the sum scaled back into [0, 1]. Rows of one recording move together,
    so a recording named by the query rises with all its passages."""
    match = snapshot.titles.match(query_terms(request.query))
    if match is None:
        return
    match **= np.float32(TITLE_SHARPNESS)
    match *= np.float32(TITLE_WEIGHT)
    # ``take``, not fancy indexing: the same values, half the time at 100k rows
    fused += np.append(match, np.float32(0)).take(snapshot.row_recording)  # -1 (dead): 0
    fused /= np.float32(1 + TITLE_WEIGHT)


@dataclass(frozen=True)
class Ranking:
    hits: list[Hit]
    # the closest passage's cosine among the rows the filters allow: how near anything in
    # the index comes to the query at all (None without the semantic side)
    best_similarity: float | None
    # the share of the query's words (stopwords aside) that occur in any of those rows
    # (None: a query of stopwords only)
    term_coverage: float | None = None


def search(snapshot: Snapshot, request: SearchRequest,
           query_vector: np.ndarray | None, floor: float = RELEVANCE_FLOOR) -> list[Hit]:
    """Recordings best first, each with its best moments and a snippet on the match."""
    return rank(snapshot, request, query_vector, floor).hits


def rank(snapshot: Snapshot, request: SearchRequest, query_vector: np.ndarray | None,
         floor: float = RELEVANCE_FLOOR) -> Ranking:
    """``search`` with how close the best passage came."""
    mask = filter_mask(snapshot, request)
    if not mask.any():
        return Ranking([], None)
    dense = similarities(snapshot, request, query_vector, mask)
    best = float(masked(dense, mask).max()) if dense is not None else None
    scores = chunk_scores(snapshot, request, dense, mask)
    top = top_k(scores, min(CANDIDATES, int(mask.sum())))
    top = top[np.lexsort((top, -scores[top]))]  # best first; ties in row order
    terms = set(query_terms(request.query))
    coverage = len(present_terms(snapshot.keyword_segments(), terms, mask)) / len(terms) \
        if terms else None
    ranked = collapse(scores, top, snapshot.row_recording, request.limit)
    floor = floor * ranked[0][0] if ranked else 0.0
    hits: list[Hit] = []
    for score, rec_index, rows in ranked:
        if score < floor:
            break
        rec = snapshot.recordings[rec_index]
        room = moment_room(len(hits), score, ranked[0][0])
        moments = pick_moments(snapshot, rows, terms, request.speaker, room,
                               quote_width(len(hits)))
        hits.append(Hit(file_id=rec.file_id, title=rec.title, created_at=rec.created_at,
                        score=round(score, 4), snippet=moments[0].snippet, moments=moments,
                        similarity=round(float(dense[rows].max()), 4)
                        if dense is not None else None, source_kind=rec.source_kind,
                        path=rec.origin or None, folders=rec.folders))
    return Ranking(hits, best, coverage)


def overview(snapshot: Snapshot, file_id: str, count: int = MOMENTS) -> tuple[Moment, ...]:
    """Opening snippets of a recording, notes first (the summary says the most)."""
    index = snapshot.by_id[file_id]
    rows = [(chunk.source != "notes", chunk.start_ms or 0, int(r))
            for r, chunk in zip(snapshot.rows_of(index), snapshot.chunks_of(index), strict=True)]
    return pick_moments(snapshot, [r for *_, r in sorted(rows)], set(), None, count)
