"""What a segment's arrays must hold, beyond their types and shapes, for search to be
right. Pure: arrays in, the first problem found (or ``None``) out.

A checksum proves the bytes are the ones written; these prove the values are ones the
writer can write. They bound what readers trust without a check per use: a row index in
range, a length that is not negative, a sorted array that is sorted (a binary search over
an unsorted one misses silently), a vector of unit norm (a row scaled by 1e30 would rank
first for every query). Two depths, by cost:

- ``row_problem``: the per-row records (45 bytes a row), at every open of every segment;
- ``terms_problem``, ``postings_problem``, ``vectors_problem``: every term, posting and
  vector (about 1.9 GB at 1M chunks, ~1 s warm), once per file identity: the result is
  kept beside the checksums in ``verified.json`` (``trust.py``), so a reader checks only
  what changed.
"""

from __future__ import annotations

import codecs
from typing import Any

import numpy as np

from .snapshot import NO_MS, SOURCE_CODES

_SOURCES = np.zeros(256, dtype=bool)  # the codes a row's source may have
_SOURCES[[*SOURCE_CODES.values(), 255]] = True

# A stored row is ``l2_normalize``d float32: its norm is 1 within ~1e-6, or exactly 0
# (an all-zero embedding stays zero). Anything further off was not written by us.
NORM_TOLERANCE = 1e-3
BLOCK_ROWS = 1 << 16  # vectors read at a time (96 MB of 384-d float32)
BLOCK_POSTINGS = 1 << 22  # postings read at a time (~100 MB of working arrays)


def row_problem(rows: np.ndarray, n_recordings: int, n_speaker_ids: int,
                text_bytes: int) -> str | None:
    """The per-row records: what they point into exists, and their numbers are possible."""
    if not len(rows):
        return None
    at, spk = rows["at"], rows["spk"]
    if not (rows["rec"].min() >= 0 and rows["rec"].max() < n_recordings):
        return "rows of recordings that do not exist"
    if at[0] != 0 or (np.diff(at) <= 0).any() or at[-1] >= text_bytes:
        return "chunk positions out of order"
    if spk[0] != 0 or (np.diff(spk) < 0).any() or spk[-1] > n_speaker_ids:
        return "speaker positions out of order"
    if not _SOURCES[rows["source"]].all():
        return "sources that do not exist"
    doclen, nterms = rows["doclen"], rows["nterms"]
    # (no bound between them: an accent-free alias is a second term at one position)
    if doclen.min() < 0 or nterms.min() < 0:
        return "negative term counts"
    if ((nterms > 0) & (doclen == 0)).any():  # terms at no position: BM25 would divide by 0
        return "rows with terms but a length of 0"
    start, end = rows["start_ms"], rows["end_ms"]
    timed = (start != NO_MS) & (end != NO_MS)
    if ((start != NO_MS) & (start < 0)).any() or ((end != NO_MS) & (end < 0)).any() \
            or (end[timed] < start[timed]).any():
        return "negative or reversed times"
    return None


def terms_problem(terms: np.ndarray) -> str | None:
    """Strictly ascending: lookups binary-search them."""
    if len(terms) > 1 and not (terms[1:] > terms[:-1]).all():
        return "terms out of order"
    return None


def postings_problem(offsets: np.ndarray, rows: np.ndarray, tfs: np.ndarray,
                     nterms: np.ndarray, doclen: np.ndarray | None = None) -> str | None:
    """Each term's rows strictly ascending and in range, frequencies positive, finite and
    at most the row's length (a term occurs at most once per position), and each row
    holding as many postings as its record says (which ties the postings to the rows). In
    blocks: the postings of 1M chunks are ~45M."""
    n_rows, n = len(nterms), len(rows)
    # positions where a term's list begins: no order holds across that step
    firsts = np.zeros(n + 1, dtype=bool)
    firsts[np.clip(np.asarray(offsets), 0, n)] = True
    counts = np.zeros(n_rows, dtype=np.int64)
    for lo in range(0, n, BLOCK_POSTINGS):
        hi = min(lo + BLOCK_POSTINGS, n)
        block = np.asarray(rows[max(lo - 1, 0):hi], dtype=np.int64)
        if block.min() < 0 or block.max() >= n_rows:
            return "postings of rows that do not exist"
        step = np.diff(block) if lo else np.diff(block, prepend=-1)
        if not ((step > 0) | firsts[lo:hi]).all():
            return "postings out of order"
        freqs = np.asarray(tfs[lo:hi])
        if not (np.isfinite(freqs).all() and freqs.min() > 0):
            return "term frequencies that are not positive numbers"
        block_rows = block[1:] if lo else block
        if doclen is not None and (freqs > np.asarray(doclen)[block_rows]).any():
            return "term frequencies above their row's length"
        counts += np.bincount(block_rows, minlength=n_rows)
    if not np.array_equal(counts, nterms):
        return "postings that do not match the rows' term counts"
    return None


def vectors_problem(vectors: np.ndarray) -> str | None:
    """Every row of unit norm (or zero), read in blocks so memory stays bounded."""
    for lo in range(0, len(vectors), BLOCK_ROWS):
        block = np.asarray(vectors[lo:lo + BLOCK_ROWS])
        norms = np.sqrt(np.einsum("ij,ij->i", block, block, dtype=np.float64))
        good = (np.abs(norms - 1.0) <= NORM_TOLERANCE) | (norms == 0.0)
        if not good.all():
            row = lo + int(np.flatnonzero(~good)[0])
            return f"row {row} is not a unit vector (norm {norms[row - lo]:.3g})"
    return None


BLOCK_TEXT = 1 << 24  # bytes of chunk text decoded at a time


def text_problem(text: Any) -> str | None:
    """The chunk text (bytes or a read-only map) is UTF-8 throughout: a result's text is
    read one line at a time, so a damaged line would otherwise surface only when some
    search shows it."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    view = memoryview(text)
    try:
        for lo in range(0, len(view), BLOCK_TEXT):
            decoder.decode(view[lo:lo + BLOCK_TEXT])
        decoder.decode(b"", final=True)
    except UnicodeDecodeError as exc:
        return f"text that is not UTF-8 ({exc.reason})"
    return None
