"""BM25 over postings arrays equals the textbook formula, sparse or dense, any filter."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plaud_index.index import postings as postings_module
from plaud_index.index.analyzer import term_spans, tokenize
from plaud_index.index.postings import K1, B, bm25, build_postings, present_terms

WORDS = ["budget", "plan", "risk", "Küche", "会議", "vendor"]


def reference(texts: list[str], terms: list[str], live: list[bool]) -> list[float]:
    """Per row, straight from the definition (over the live rows only)."""
    docs = [Counter(tokenize(t)) for t in texts]
    lengths = [len({o for o, _ in term_spans(t)}) for t in texts]
    alive = [i for i, ok in enumerate(live) if ok]
    avgdl = (sum(lengths[i] for i in alive) / len(alive)) or 1.0
    out = [0.0] * len(texts)
    for term in terms:
        df = sum(1 for i in alive if docs[i][term])
        if not df:
            continue
        idf = math.log(1 + (len(alive) - df + 0.5) / (df + 0.5))
        for i in alive:
            tf = docs[i][term]
            if tf:
                norm = K1 * (1 - B + B * lengths[i] / avgdl)
                out[i] += idf * tf * (K1 + 1) / (tf + norm)
    return out


@given(st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=8), min_size=1,
                max_size=30),
       st.lists(st.sampled_from(["budget", "plan", "küche", "会議", "none"]), min_size=1,
                max_size=3, unique=True),
       st.integers(0, 2**32 - 1), st.sampled_from([0.0, 2.0]))
@settings(max_examples=100, deadline=None)
def test_bm25_equals_the_formula_sparse_or_dense(words: list[list[str]], terms: list[str],
                                                 seed: int, dense_share: float) -> None:
    texts = [" ".join(w) for w in words]
    live = np.random.default_rng(seed).random(len(texts)) < 0.8
    if not live.any():
        live[0] = True
    cut = len(texts) // 2  # two segments, as an index has
    first, second = build_postings(texts[:cut]), build_postings(texts[cut:])
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(postings_module, "DENSE_SHARE", dense_share)  # 0: all dense, 2: sparse
        got = bm25([(first, 0), (second, cut)], terms, len(texts), live,
                   np.concatenate([first.doclen, second.doclen]).astype(np.float32))
    np.testing.assert_allclose(got[live], np.array(reference(texts, terms, live.tolist()))[live],
                               rtol=1e-5, atol=1e-6)
    assert not got[~live].any()  # rows the filter removed score nothing


@given(st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=8), min_size=1,
                max_size=30),
       st.integers(0, 2**32 - 1), st.sampled_from([0.0, 0.8, 1.0]))
@settings(max_examples=100, deadline=None)
def test_present_terms_are_the_terms_of_the_rows_the_mask_keeps(words: list[list[str]],
                                                                seed: int,
                                                                share: float) -> None:
    texts = [" ".join(w) for w in words]
    live = np.random.default_rng(seed).random(len(texts)) < share  # none, some or all
    cut = len(texts) // 2
    segments = [(build_postings(texts[:cut]), 0), (build_postings(texts[cut:]), cut)]
    terms = ["budget", "küche", "会議", "none"]
    expected = {t for t in terms for i, text in enumerate(texts)
                if live[i] and t in tokenize(text)}
    assert present_terms(segments, terms, live) == expected


def test_a_term_longer_than_every_indexed_term_is_no_match_of_its_prefix() -> None:
    """The lookup searches with the term in the array's own width (not a copy of the
    array per lookup): a longer term must not be cut down to one that is there."""
    postings = build_postings(["the budget", "a budget review"])
    assert postings.terms.dtype.itemsize // 4 == len("budget")
    assert len(postings.lookup("budget")[0]) == 2
    assert len(postings.lookup("budgetary")[0]) == 0
    assert len(postings.lookup("budge")[0]) == 0
