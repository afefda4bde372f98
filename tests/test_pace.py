"""sync.pace: when a cycle owes a commit, from its own figures so far."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from plaud_index.sync.pace import FIRST_COMMIT_S, Pace, commit_owed, next_step_s

# a cycle 3 s after its last commit: 64-chunk groups embedded at 0.02 s a chunk, recordings
# fetched at 0.5 s each needing 40 chunks, commits of 0.4 s, a 30 s budget
STEADY = Pace(commit_seconds=30.0, commit_every=1000, commits=2, since_last_s=3.0,
              since_commit=4, longest_commit_s=0.4, group_chunks=64, fresh=10,
              embedded=500, embed_s=10.0, fetched=20, chunks_seen=800, fetch_s=10.0)


def test_a_full_group_waiting_is_the_next_step_at_a_margin_over_the_mean() -> None:
    assert next_step_s(replace(STEADY, fresh=64)) == pytest.approx(1.5 * 0.02 * 64)


def test_otherwise_the_next_fetch_and_the_group_it_fills_both_count() -> None:
    # 0.5 s for the fetch, then the 10 waiting and 40 new chunks at 1.5 x 0.02 s
    assert next_step_s(STEADY) == pytest.approx(0.5 + 1.5 * 0.02 * 50)


def test_before_anything_is_fetched_only_what_waits_counts() -> None:
    assert next_step_s(replace(STEADY, fetched=0, embedded=0, embed_s=0.0)) == 0.0


def test_no_commit_is_owed_well_inside_the_budget() -> None:
    assert not commit_owed(STEADY)


def test_a_commit_is_owed_when_the_next_step_would_overrun_the_budget() -> None:
    # 28 s since the last: the next fetch and group (2 s) and a commit (0.4 s) end past 30
    assert commit_owed(replace(STEADY, since_last_s=28.0))
    assert not commit_owed(replace(STEADY, since_last_s=27.5))


def test_the_first_commit_of_a_cycle_has_the_shorter_budget() -> None:
    first = replace(STEADY, commits=0, since_last_s=FIRST_COMMIT_S - 2.0)
    assert commit_owed(first)
    assert not commit_owed(replace(first, commits=1))


def test_enough_recordings_owe_a_commit_whatever_the_time() -> None:
    assert commit_owed(replace(STEADY, since_last_s=0.0, since_commit=1000))


@given(st.floats(0, 100), st.floats(0, 100), st.integers(0, 200), st.integers(1, 64))
def test_owed_once_owed_stays_owed_as_time_passes(since: float, later: float,
                                                  fresh: int, group: int) -> None:
    pace = replace(STEADY, since_last_s=since, fresh=fresh, group_chunks=group)
    if commit_owed(pace):
        assert commit_owed(replace(pace, since_last_s=since + later))
