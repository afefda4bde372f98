"""One result per recording: the array collapse against the plain loop it replaced."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from plaud_index.search.collapse import SUPPORT_CHUNKS, SUPPORT_WEIGHT, collapse


def collapse_by_loop(scores: np.ndarray, top: np.ndarray, row_recording: np.ndarray,
                     limit: int) -> list[tuple[float, int, list[int]]]:
    """The definition: walk the rows best first, group them, score each group in Python
    floats, sort by score (stable: the first seen first among equals)."""
    groups: dict[int, list[int]] = {}
    for row in top:
        if scores[row] <= 0:
            break
        groups.setdefault(int(row_recording[row]), []).append(int(row))
    ranked = []
    for recording, rows in groups.items():
        best = float(scores[rows[0]])
        support = sum(float(scores[r]) for r in rows[1:1 + SUPPORT_CHUNKS])
        total = (best + SUPPORT_WEIGHT * support) / (1 + SUPPORT_WEIGHT * SUPPORT_CHUNKS)
        ranked.append((total, recording, rows))
    return sorted(ranked, key=lambda item: -item[0])[:limit]


@settings(max_examples=300)
@given(st.integers(1, 300).flatmap(lambda n: st.tuples(
    # few distinct values: ties between rows and between recordings are common
    arrays(np.float32, n, elements=st.sampled_from([0.0, 0.1, 0.25, 0.5, 0.9, 1.0])),
    arrays(np.int32, n, elements=st.integers(0, max(1, n // 3))))),
    st.integers(1, 25))
def test_the_collapse_equals_the_loop_it_replaced(case: tuple[np.ndarray, np.ndarray],
                                                  limit: int) -> None:
    scores, row_recording = case
    top = np.lexsort((np.arange(len(scores)), -scores))  # best first, ties in row order
    assert collapse(scores, top, row_recording, limit) == \
        collapse_by_loop(scores, top, row_recording, limit)


def test_a_recording_that_keeps_returning_to_the_topic_beats_one_passing_mention() -> None:
    scores = np.array([0.9, 0.8, 0.8, 0.8, 0.85], dtype=np.float32)
    row_recording = np.array([0, 1, 1, 1, 2], dtype=np.int32)
    ranked = collapse(scores, np.array([0, 4, 1, 2, 3]), row_recording, 3)
    assert [recording for _, recording, _ in ranked] == [1, 0, 2]
    assert ranked[0][2] == [1, 2, 3]


def test_nothing_above_zero_collapses_to_nothing() -> None:
    assert collapse(np.zeros(4, dtype=np.float32), np.arange(4),
                    np.zeros(4, dtype=np.int32), 8) == []
