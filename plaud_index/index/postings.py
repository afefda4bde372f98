"""The keyword side of hybrid search: postings arrays and BM25. Pure.

Postings are stored per index segment as sorted numpy arrays (``terms``,
``offsets`` into ``rows``/``tfs``, ``doclen``), memory-mapped, so a query term
costs one binary search per segment, opening reads none of them, and a commit
writes only its own segment.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import IndexCorruptError
from .analyzer import term_spans

K1 = 1.2
B = 0.75


@dataclass(frozen=True)
class Postings:
    terms: np.ndarray  # sorted unicode array
    offsets: np.ndarray  # int64, len(terms) + 1
    rows: np.ndarray  # int32 row ids within the segment
    tfs: np.ndarray  # float32 term frequencies
    doclen: np.ndarray  # int32 terms per row
    label: str = "the keyword index"  # the file, for messages about damage

    def check(self, n_rows: int) -> None:
        """Raise ``ValueError`` unless the arrays fit together and address ``n_rows`` rows.
        Cheap at any size: the postings themselves are checked as a query reads them."""
        n_terms, n_postings = len(self.terms), len(self.rows)
        if len(self.offsets) != n_terms + 1 or len(self.tfs) != n_postings \
                or len(self.doclen) != n_rows:
            raise ValueError("postings arrays of inconsistent lengths")
        if n_terms and (self.offsets[0] != 0 or self.offsets[-1] != n_postings
                        or (np.diff(self.offsets) < 0).any()):
            raise ValueError("postings offsets out of order")

    def lookup(self, term: str) -> tuple[np.ndarray, np.ndarray]:
        try:
            key = self._key(term)
            if key is None:
                return _EMPTY_I, _EMPTY_F
            i = int(np.searchsorted(self.terms, key))
            if i >= len(self.terms) or self.terms[i] != term:
                return _EMPTY_I, _EMPTY_F
            lo, hi = int(self.offsets[i]), int(self.offsets[i + 1])
            rows, tfs = np.asarray(self.rows[lo:hi]), np.asarray(self.tfs[lo:hi])
        except (ValueError, UnicodeError) as exc:  # bytes that are no term
            raise self._damaged(f"{type(exc).__name__}: {exc}") from exc
        # rows ascend within a term, so the ends bound them all; a damaged list that does
        # not ascend fails where it is used (``bm25``), still as damage
        if len(rows) and not (int(rows[0]) >= 0 and int(rows[-1]) < len(self.doclen)):
            raise self._damaged(f"the postings of {term!r} point at rows that do not exist")
        return rows, tfs

    def _key(self, term: str) -> np.ndarray | None:
        """``term`` as an element of ``terms``' own type (``None``: longer than any term
        there). Searched for as a bare ``str``, numpy would first copy the whole sorted
        array to a common width: 80 us a lookup at 20,000 terms instead of 1."""
        dtype = self.terms.dtype
        if dtype.kind == "U" and len(term) > dtype.itemsize // 4:
            return None
        return np.array(term, dtype=dtype)

    def _damaged(self, why: str) -> IndexCorruptError:
        return IndexCorruptError(f"The index file {self.label} is damaged ({why}); the "
                                 "indexer rebuilds it from Plaud on its next cycle (or "
                                 "delete the folder).")


_EMPTY_I = np.zeros(0, dtype=np.int32)
_EMPTY_F = np.zeros(0, dtype=np.float32)


def build_postings(texts: Sequence[str]) -> Postings:
    by_term: dict[str, list[tuple[int, int]]] = {}
    doclen = np.zeros(len(texts), dtype=np.int32)
    for row, text in enumerate(texts):
        spans = list(term_spans(text))
        counts = Counter(term for _, term in spans)
        # Length in word positions: an accent-free alias or a CJK unigram beside its
        # bigram is the same word again, not a longer document.
        doclen[row] = len({offset for offset, _ in spans})
        for term, tf in counts.items():
            by_term.setdefault(term, []).append((row, tf))
    terms = sorted(by_term)
    offsets = np.zeros(len(terms) + 1, dtype=np.int64)
    rows: list[int] = []
    tfs: list[int] = []
    for i, term in enumerate(terms):
        for row, tf in by_term[term]:
            rows.append(row)
            tfs.append(tf)
        offsets[i + 1] = len(rows)
    return Postings(
        terms=np.array(terms, dtype=str) if terms else np.zeros(0, dtype="<U1"),
        offsets=offsets,
        rows=np.array(rows, dtype=np.int32),
        tfs=np.array(tfs, dtype=np.float32),
        doclen=doclen,
    )


def bm25(
    segments: Iterable[tuple[Postings, int]],
    terms: Sequence[str],
    total_rows: int,
    live: np.ndarray,
    doclen: np.ndarray | None = None,
) -> np.ndarray:
    """BM25 over all segments; ``segments`` pairs postings with their global row offset.
    Only rows in ``live`` are scored (the rest are 0), and the statistics (document count,
    frequencies, average length) are those of the live rows. ``doclen``: every row's
    length, concatenated once per snapshot by the caller (else here)."""
    segments = list(segments)
    scores = np.zeros(total_rows, dtype=np.float32)
    if not terms or not live.any():
        return scores
    if doclen is None:
        doclen = np.concatenate([p.doclen for p, _ in segments]).astype(np.float32)
    n_live = int(live.sum())
    everything = n_live == len(live)  # no filter: no row of a posting list to drop
    # float32 both sides: a float64 dot goes to a threaded BLAS routine that, on a busy
    # machine, waits 10-20 ms for its threads (bench/profile_search.py, speaker filter)
    avgdl = float(doclen.mean() if everything else
                  np.dot(doclen, live.astype(np.float32)) / n_live) or 1.0
    scratch: np.ndarray | None = None
    for term in terms:
        found = [hit for postings, offset in segments
                 if (hit := _live_postings(postings, offset, term, live, everything))]
        df = sum(count for *_, count in found)
        if not df:
            continue
        idf = np.log(1 + (n_live - df + 0.5) / (df + 0.5))
        for postings, offset, rows, tfs, alive, _ in found:  # per segment: no whole copies
            window = slice(offset, offset + len(postings.doclen))
            if alive is not None or len(rows) > DENSE_SHARE * len(postings.doclen):
                if scratch is None:  # made once per query: fresh large arrays cost page faults
                    scratch = np.empty((2, total_rows), dtype=np.float32)
                _add_dense(scores[window], doclen[window], rows, tfs, idf, avgdl, postings,
                           scratch[0, window], scratch[1, window], alive)
            else:
                _add_sparse(scores[window], doclen[window], rows, tfs, idf, avgdl, postings)
    if not np.isfinite(scores).all():  # damaged term frequencies never reach a ranking
        bad = next(p for p, off in segments
                   if not np.isfinite(scores[off:off + len(p.doclen)]).all())
        raise bad._damaged("term frequencies that are not numbers")
    return scores


Hit = tuple[Postings, int, np.ndarray, np.ndarray, "np.ndarray | None", int]


def present_terms(segments: Sequence[tuple[Postings, int]], terms: Iterable[str],
                  live: np.ndarray) -> set[str]:
    """The ``terms`` that occur in at least one row of ``live`` (a mask over all rows)."""
    found = set()
    everything = bool(live.all())  # then any posting will do: no gather of a common word's
    for term in set(terms):          # rows through the mask (2 ms at a million)
        for postings, offset in segments:
            hit = _live_postings(postings, offset, term, live, everything)
            if hit is not None and hit[5]:
                found.add(term)
                break
    return found


def _live_postings(postings: Postings, offset: int, term: str, live: np.ndarray,
                   everything: bool) -> Hit | None:
    """A segment's postings of ``term`` and how many of them are live. When the live ones
    are still many (a common word, a loose filter), all are kept with the segment's live
    mask (``alive``: the dense scoring zeroes the rest), since selecting them would cost
    three passes; otherwise they are cut to the live rows and scored sparsely."""
    rows, tfs = postings.lookup(term)
    if not len(rows):
        return None
    if everything:
        return postings, offset, rows, tfs, None, len(rows)
    window = live[offset:offset + len(postings.doclen)]
    try:
        keep = window[rows]
    except IndexError as exc:
        raise postings._damaged("postings that point at rows that do not exist") from exc
    count = int(np.count_nonzero(keep))
    if count > DENSE_SHARE * len(window):
        return postings, offset, rows, tfs, window, count
    rows, tfs = rows[keep], tfs[keep]
    return (postings, offset, rows, tfs, None, len(rows)) if len(rows) else None


DENSE_SHARE = 0.25  # a term in more than this share of a segment's rows is scored densely
# BM25 of one posting: idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * dl / avgdl))


def _add_sparse(scores: np.ndarray, doclen: np.ndarray, rows: np.ndarray, tfs: np.ndarray,
                idf: float, avgdl: float, postings: Postings) -> None:
    """``scores[rows] +=`` BM25, computed for the posting list's rows only."""
    try:
        rows = np.asarray(rows, dtype=np.intp)  # one conversion for the gather and scatter
        norm = doclen[rows]
        norm *= np.float32(K1 * B / avgdl)
        norm += np.float32(K1 * (1 - B))
        norm += tfs
        part = tfs * np.float32(idf * (K1 + 1))
        part /= norm
        scores[rows] += part
    except IndexError as exc:
        raise postings._damaged("postings that point at rows that do not exist") from exc


def _add_dense(scores: np.ndarray, doclen: np.ndarray, rows: np.ndarray, tfs: np.ndarray,
               idf: float, avgdl: float, postings: Postings, tf: np.ndarray,
               norm: np.ndarray, alive: np.ndarray | None) -> None:
    """The same for a common word, over the whole segment: one scatter of the term
    frequencies into ``tf`` (zeroed outside ``alive`` when given), then contiguous
    arithmetic in place (``tf`` and ``norm`` are scratch of the segment's length)."""
    tf.fill(0)
    try:
        tf[np.asarray(rows, dtype=np.intp)] = tfs
    except IndexError as exc:
        raise postings._damaged("postings that point at rows that do not exist") from exc
    if alive is not None:
        tf *= alive
    np.multiply(doclen, np.float32(K1 * B / avgdl), out=norm)
    norm += np.float32(K1 * (1 - B))
    norm += tf
    tf *= np.float32(idf * (K1 + 1))
    tf /= norm
    scores += tf
