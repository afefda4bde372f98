"""One result per recording: the best chunks grouped by the recording they belong to, and
each recording scored. Pure.

A recording's score is its best chunk plus ``SUPPORT_WEIGHT`` times each of its next
``SUPPORT_CHUNKS`` best chunks (a meeting that keeps returning to the topic beats one
passing mention), divided by the largest possible total, so it stays in [0, 1]. The
grouping and the scores are array operations: a query's few hundred candidate chunks
cost no Python loop per chunk.
"""

from __future__ import annotations

import numpy as np

SUPPORT_WEIGHT = 0.2
SUPPORT_CHUNKS = 4


def collapse(scores: np.ndarray, top: np.ndarray, row_recording: np.ndarray,
             limit: int) -> list[tuple[float, int, list[int]]]:
    """The best ``limit`` recordings among the ``top`` rows (best first) that score above
    0: ``(score, recording, its rows best first)``, best recording first; of two with the
    same score, the one whose best row came first."""
    rows = top[scores[top] > 0]
    if not len(rows):
        return []
    recordings = row_recording[rows]
    order = np.argsort(recordings, kind="stable")  # grouped, each group still best first
    grouped = recordings[order]
    starts = np.flatnonzero(np.concatenate(([True], grouped[1:] != grouped[:-1])))
    sizes = np.diff(np.append(starts, len(order)))
    place = np.arange(len(order)) - np.repeat(starts, sizes)  # 0: the group's best row
    group = np.repeat(np.arange(len(starts)), sizes)
    table = np.zeros((len(starts), 1 + SUPPORT_CHUNKS))  # float64, as Python floats add
    counted = place <= SUPPORT_CHUNKS
    table[group[counted], place[counted]] = scores[rows[order[counted]]]
    support = table[:, 1].copy()
    for column in range(2, 1 + SUPPORT_CHUNKS):  # left to right, as ``sum`` adds
        support += table[:, column]
    totals = (table[:, 0] + SUPPORT_WEIGHT * support) / (1 + SUPPORT_WEIGHT * SUPPORT_CHUNKS)
    best = np.lexsort((order[starts], -totals))[:limit]  # order[starts]: first row's place
    return [(float(totals[g]), int(grouped[starts[g]]),
             rows[order[starts[g]:starts[g] + sizes[g]]].tolist()) for g in best.tolist()]
