"""Progress of a running sync: the numbers, how they read, a log line per commit. Pure.

The indexer keeps a ``SyncProgress`` in the sync state while it works (at most
about once a second, and at every phase change and commit), so ``status``, the
MCP answers and a second terminal read the same numbers. Time left comes from
what the work has cost so far: seconds per recording fetched and seconds per
chunk embedded, applied to what is left. It is stored, not derived from the
clock, so a sync that stopped keeps its estimate instead of one that grows.
On a terminal the indexer also redraws one line; anywhere else (launchd's log
file, a pipe) it writes a plain log line per commit instead.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, fields
from typing import Any, Protocol

log = logging.getLogger(__name__)

PHASES = ("listing", "fetching", "embedding", "committing")


@dataclass(frozen=True)
class SyncProgress:
    """``done`` of ``total`` recordings handled (indexed, unchanged or skipped) since
    ``started`` (epoch seconds); ``committed`` of them are safely on disk."""

    done: int
    total: int
    started: float
    chunks: int = 0  # chunks embedded so far
    committed: int = 0
    updated: float = 0.0  # when these numbers were taken (epoch seconds)
    phase: str = "fetching"
    fetched: int = 0  # recordings whose details were fetched
    chunks_seen: int = 0  # chunks of the fetched recordings that need embedding
    fetch_s: float = 0.0  # seconds spent fetching
    embed_s: float = 0.0  # seconds spent embedding
    fetched_ms: int = 0  # listed duration of the recordings fetched (0: not listed)
    total_ms: int = 0  # listed duration of all ``total``

    @classmethod
    def from_state(cls, raw: dict[str, Any] | None) -> SyncProgress | None:
        """The stored form; ``None`` when there is none or it is not ours."""
        if not raw or not isinstance(raw, dict):
            return None
        try:
            done = int(raw["done"])
            values: dict[str, Any] = {"done": done, "total": int(raw["total"]),
                                      "committed": int(raw.get("committed", done))}
            for f in fields(cls):  # each optional field read as the type of its default
                if f.name not in values and f.name in raw:
                    kind: type = float if f.name == "started" else type(f.default)
                    values[f.name] = kind(raw[f.name])
        except (KeyError, TypeError, ValueError, OverflowError):
            return None
        values.setdefault("started", 0.0)
        if values.get("phase", "fetching") not in PHASES:
            values["phase"] = "fetching"
        return cls(**values)

    def to_state(self) -> dict[str, Any]:
        return asdict(self)

    def chunk_rate(self) -> float:
        """Chunks embedded per second of embedding (0 before the first batch)."""
        return self.chunks / self.embed_s if self.chunks and self.embed_s > 0 else 0.0

    def eta_s(self) -> float | None:
        """Seconds of work left, from the cost so far: the recordings not yet fetched at
        this sync's seconds per fetch, and the chunks not yet embedded (those fetched, plus
        the unfetched recordings' at this sync's chunks per listed second, or per recording)
        at its seconds per chunk, times the share of wall time those two timers account
        for. ``None`` until both costs are known."""
        if self.phase == "listing" or not self.fetched:
            return None
        unfetched = max(self.total - self.fetched, 0)
        # the chunks still to come scale with the listed duration left where the listing
        # gives durations (newest recordings, fetched first, are often shorter), else with
        # the count of recordings left
        to_come = (self.total_ms - self.fetched_ms) / self.fetched_ms if \
            self.fetched_ms > 0 and self.total_ms >= self.fetched_ms else unfetched / self.fetched
        chunks_left = max(self.chunks_seen - self.chunks, 0) + to_come * self.chunks_seen
        if chunks_left and not self.chunks:
            return None  # nothing embedded yet: no rate to go by
        per_chunk = self.embed_s / self.chunks if self.chunks else 0.0
        work = unfetched * self.fetch_s / self.fetched + chunks_left * per_chunk
        # what neither timer sees (commits, merges, a server answering on another thread)
        # slows the rest down as much as it slowed what was done
        measured = self.fetch_s + self.embed_s
        overhead = (self.updated - self.started) / measured if measured > 0 else 1.0
        return work * max(overhead, 1.0)

    def left_s(self, now: float) -> float | None:
        """While running: the estimate counted down since it was taken (never below a
        few seconds: the numbers are refreshed as the work goes on)."""
        eta = self.eta_s()
        return None if eta is None else max(eta - max(now - self.updated, 0.0), 5.0)

    def describe(self, now: float, phase: bool = True, searchable: int | None = None) -> str:
        """``embedding, 12 of 73 recordings done, 10 searchable, 840 chunks embedded, about
        4 minutes left`` (without ``phase``: from ``12 of 73``; ``searchable``: how many
        recordings the index answers from, said when it differs from the done: fewer are
        while a commit is owed, more when the first commit came inside a long recording,
        which is then searchable in part while it is not done)."""
        if self.phase == "listing":
            return "listing the recordings"
        text = f"{self.phase}, " if phase else ""
        text += f"{self.done} of {plural(self.total, 'recording')} done"
        if searchable is not None and searchable != self.done:
            text += f", {searchable} searchable"
        if self.chunks:
            text += f", {self.chunks} chunks embedded"
        left = self.left_s(now)
        return f"{text}, {about(left)} left" if left and self.done < self.total else text

    def describe_stopped(self, now: float, searchable: int | None = None) -> str:
        """A sync nobody runs any more: when it stopped, how far it got (with how many
        recordings the index answers from, when that differs: a recording being embedded
        when it stopped is searchable in part), and how much it left (frozen)."""
        text = f"stopped {ago(now - self.updated)} at {self.done} of " \
            f"{plural(self.total, 'recording')} done"
        if searchable is not None and searchable != self.done:
            text += f", {searchable} searchable"
        eta = self.eta_s()
        return f"{text} ({about(eta)} of work left)" if eta and self.done < self.total \
            else text


def plural(n: int, noun: str) -> str:
    """``1 recording``, ``2 recordings``."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def about(seconds: float) -> str:
    """A duration as a person would say it: ``about 40 seconds``, ``about 3 minutes``."""
    if seconds < 90:
        return f"about {max(5, round(seconds / 5) * 5):.0f} seconds"
    if seconds < 90 * 60:
        return f"about {round(seconds / 60):.0f} minutes"
    return f"about {seconds / 3600:.1f} hours"


def ago(seconds: float) -> str:
    """``just now``, ``3 minutes ago``, ``2.5 hours ago``, ``4 days ago``."""
    if seconds < 60:
        return "just now"
    if seconds < 90 * 60:
        minutes = round(seconds / 60)
        return f"{minutes} minute{'s' if minutes > 1 else ''} ago"
    if seconds < 48 * 3600:
        return f"{seconds / 3600:.1f} hours ago"
    return f"{seconds / 86400:.0f} days ago"


class LogLines:
    """The plain reporter (launchd's log, a pipe): one log line per commit."""

    def __init__(self, verb: str = "Committed") -> None:
        self.verb = verb
        self._committed = 0

    def __call__(self, progress: SyncProgress) -> None:
        if progress.committed < self._committed:  # a new cycle
            self._committed = 0
        if progress.committed > self._committed:
            self._committed = progress.committed
            log.info("%s %s", self.verb, progress.describe(progress.updated, phase=False))

    def finish(self, then: str | None = None) -> None:
        """Nothing to end: every line was complete."""


log_commits = LogLines()


class Reporter(Protocol):
    def __call__(self, progress: SyncProgress) -> None: ...

    def finish(self, then: str | None = None) -> None: ...
