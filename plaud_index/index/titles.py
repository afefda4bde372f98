"""The titles' own keyword index: a query that names a meeting finds it first. Pure.

People name meetings by their titles ("the ES2012 kick-off", "Bed003") far more often
than by what was said in them, and a title's words are few against an hour of speech:
as one more passage among a recording's chunks they weigh nothing. So a recording's
title is scored on its own, as a field: how much of the query it holds, each query term
weighted by how rare it is among titles (the inverse document frequency of BM25, over
recordings), so a series code shared by four meetings counts far more than "project"
shared by forty, and a query term no title has counts against every title.

    title_match = Σ idf(t) over query terms t in the title / Σ idf(t) over query terms

Ranking (``search.rank``) sharpens that share before it adds it, so a query made of a
title's words (share near 1) moves that recording to the top, while a content question
that shares a word or two with many titles (share well under 1) is decided by what was
said. A title's series codes count in both forms: "ES2012a" also as "es2012"
(the series), so "ES2012 kick-off" finds the meeting "…ES2012: project kick-off (ES2012a)".
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence

import numpy as np

from .analyzer import tokenize

_CODE = re.compile(r"^([^\W\d_]+\d+)[^\W\d_]+$")  # "es2012a": a series code and a letter


def title_terms(title: str) -> set[str]:
    """The terms a title is matched on: its words, and the series of each code in it."""
    terms = set(tokenize(title))
    terms.update(m.group(1) for t in list(terms) if (m := _CODE.match(t)))
    return terms


class TitleIndex:
    """Which recordings' titles hold each term, built once per snapshot (a term's
    recordings as an int32 array)."""

    def __init__(self, titles: Sequence[str]) -> None:
        self.count = len(titles)
        found: dict[str, list[int]] = {}
        for index, title in enumerate(titles):
            for term in title_terms(title):
                found.setdefault(term, []).append(index)
        self.holders = {t: np.array(ix, dtype=np.int32) for t, ix in found.items()}

    def idf(self, term: str) -> float:
        df = len(self.holders.get(term, ()))
        return math.log(1 + (self.count - df + 0.5) / (df + 0.5))

    def match(self, terms: Iterable[str]) -> np.ndarray | None:
        """Each recording's ``title_match`` for the query ``terms`` (float32 per
        recording, in [0, 1]), or ``None`` when no title holds any of them."""
        wanted = set(terms)
        weights = {t: self.idf(t) for t in wanted}
        total = sum(weights.values())
        if not total or not any(t in self.holders for t in wanted):
            return None
        share = np.zeros(self.count, dtype=np.float32)
        for term in wanted:
            if term in self.holders:
                share[self.holders[term]] += np.float32(weights[term] / total)
        np.clip(share, 0.0, 1.0, out=share)
        return share
