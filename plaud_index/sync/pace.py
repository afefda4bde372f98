"""When a cycle commits: a time budget from one commit's start to the next's, kept by
looking one step ahead on the cycle's own averages. Pure.

What a reader sees is a commit's end, so a commit is owed as soon as what comes before the
next chance to commit, and a commit as long as the longest yet, would take the time since
the last one past the budget: ``commit_seconds``, or for the first commit of a cycle at
most ``FIRST_COMMIT_S`` (which only matters when no recording is ready by then: the
first commit otherwise comes as soon as one is). ``commit_every`` recordings owe one too.
"""

from __future__ import annotations

from dataclasses import dataclass

FIRST_COMMIT_S = 10.0  # a first recording still unfinished by then goes in partly
# A group of chunks is reckoned at this much more than the mean time per chunk: chunk
# lengths vary, and a group of long ones took longer than the mean said.
GROUP_MARGIN = 1.5


@dataclass(frozen=True)
class Pace:
    """What a cycle has measured so far that the next commit's timing depends on."""

    commit_seconds: float
    commit_every: int
    commits: int  # made this cycle
    since_last_s: float  # since the last commit started (or the cycle did)
    since_commit: int  # recordings put since the last commit
    longest_commit_s: float  # merges included
    group_chunks: int  # chunks a full embedding group holds
    fresh: int  # chunks waiting to be embedded
    embedded: int  # chunks embedded this cycle
    embed_s: float
    fetched: int  # recordings fetched this cycle
    chunks_seen: int  # chunks those recordings needed embedded
    fetch_s: float


def next_step_s(pace: Pace) -> float:
    """Seconds until the cycle can ask again whether a commit is owed, on its averages.
    With a full group waiting that is the group; otherwise the next recording is fetched
    and the group it fills embedded before the commit (the cycle embeds what waits before
    a due commit), so both count: taking only the larger overshot 30 s by a group's time."""
    per_chunk = GROUP_MARGIN * pace.embed_s / pace.embedded if pace.embedded else 0.0
    if pace.fresh >= pace.group_chunks:
        return per_chunk * pace.group_chunks
    if not pace.fetched:
        return per_chunk * pace.fresh
    new_chunks = pace.chunks_seen / pace.fetched
    return pace.fetch_s / pace.fetched + \
        per_chunk * min(pace.fresh + new_chunks, pace.group_chunks)


def commit_owed(pace: Pace) -> bool:
    """Is a commit owed now (the budget would be overrun by waiting for the next
    chance), or after ``commit_every`` recordings?"""
    budget = pace.commit_seconds if pace.commits else \
        min(pace.commit_seconds, FIRST_COMMIT_S)
    ahead = next_step_s(pace) + pace.longest_commit_s
    return pace.since_last_s + ahead >= budget or pace.since_commit >= pace.commit_every
