"""Progress of a running sync: the numbers, how they read, and the live terminal line.

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
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields
from typing import Any, Protocol, TextIO

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

    def describe(self, now: float, phase: bool = True) -> str:
        """``embedding, 12 of 73 recordings done, 840 chunks embedded, about 4 minutes
        left`` (without ``phase``: from ``12 of 73``)."""
        if self.phase == "listing":
            return "listing the recordings"
        text = f"{self.phase}, " if phase else ""
        text += f"{self.done} of {self.total} recordings done"
        if self.chunks:
            text += f", {self.chunks} chunks embedded"
        left = self.left_s(now)
        return f"{text}, {about(left)} left" if left and self.done < self.total else text

    def describe_stopped(self, now: float) -> str:
        """A sync nobody runs any more: when it stopped, and how much it left (frozen)."""
        text = f"stopped {ago(now - self.updated)} at {self.done} of {self.total} recordings"
        eta = self.eta_s()
        return f"{text} ({about(eta)} of work left)" if eta and self.done < self.total \
            else text


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


class ProgressLine:
    """Redraws ``Indexing: embedding · recordings 12/73 · 840 chunks · 14.2 chunks/s ·
    about 2 minutes left · 1m05s`` in place on a terminal. A ticker redraws it every
    ``tick_s`` with the time elapsed, so it moves while a fetch or a model run takes long;
    log lines print above it (``LineSafeHandler``), never glued to it; ``finish()`` leaves
    the last line saying done (or where it stopped) and ends it."""

    def __init__(self, stream: TextIO, label: str = "Indexing", chunks: bool = True,
                 clock: Callable[[], float] = time.time, tick_s: float = 1.0) -> None:
        self.stream = stream
        self.label = label
        self.chunks = chunks  # the mirror's pass embeds nothing
        self.clock = clock
        self.tick_s = tick_s  # 0: no ticker (redrawn on progress only)
        self._width = 0
        self._last: SyncProgress | None = None
        self._lock = threading.RLock()
        self._ticking = threading.Event()

    def __call__(self, progress: SyncProgress) -> None:
        with self._lock:
            self._last = progress
            self._draw(self._text(progress))
            if self.tick_s and not self._ticking.is_set():
                self._ticking.set()
                threading.Thread(target=self._tick, name="progress-line", daemon=True).start()
        global _live
        _live = self

    def _text(self, progress: SyncProgress, final: bool = False, then: str | None = None
              ) -> str:
        if progress.phase == "listing" and not then:
            parts = ["stopped while listing the recordings" if final else
                     "listing the recordings"]
        else:
            complete = progress.done >= progress.total
            phase = then or ("done" if complete else "stopped") if final else progress.phase
            parts = [phase, f"recordings {progress.done}/{progress.total}"]
            parts += [f"{progress.chunks} chunks"] if self.chunks else []
            if rate := progress.chunk_rate():
                parts.append(f"{rate:.1f} chunks/s")
            left = progress.left_s(progress.updated)
            if left and not complete and not final:
                parts.append(f"{about(left)} left")
        if progress.started:
            parts.append(elapsed(self.clock() - progress.started))
        return f"{self.label}: " + " · ".join(parts)

    def _draw(self, text: str) -> None:
        self.stream.write("\r" + text.ljust(self._width))
        self.stream.flush()
        self._width = len(text)

    def _tick(self) -> None:
        while self._ticking.is_set():
            time.sleep(self.tick_s)
            with self._lock:
                if self._ticking.is_set() and self._last is not None:
                    self._draw(self._text(self._last))

    def print_above(self, text: str) -> None:
        """Write a complete line (a log record) where the live line is, then redraw it."""
        with self._lock:
            if self._width:
                self.stream.write("\r" + " " * self._width + "\r")
            self.stream.write(text)
            self._width = 0
            if self._last is not None:  # (finish clears it: an ended line stays ended)
                self._draw(self._text(self._last))
            self.stream.flush()

    def finish(self, then: str | None = None) -> None:
        """End the line on what became of the work: done, stopped, or ``then`` (what the
        command does next while the work goes on elsewhere)."""
        global _live
        with self._lock:
            self._ticking.clear()
            if _live is self:
                _live = None
            if self._width and self._last is not None:
                self._draw(self._text(self._last, final=True, then=then))
            if self._width:
                self.stream.write("\n")
                self.stream.flush()
                self._width = 0
            self._last = None


_live: ProgressLine | None = None  # the line on the terminal now, for log records to avoid


class LineSafeHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """stderr's log handler: a record printed while a live line is drawn on the same
    stream starts on its own line, and the live line is redrawn under it."""

    def emit(self, record: logging.LogRecord) -> None:
        line = _live
        if line is None or line.stream is not self.stream:
            super().emit(record)
            return
        try:
            line.print_above(self.format(record) + self.terminator)
        except Exception:  # noqa: BLE001 - logging's own policy for a failed emit
            self.handleError(record)


def elapsed(seconds: float) -> str:
    """``45s``, ``3m07s``, ``1h02m``: how long the work has run."""
    seconds = max(int(seconds), 0)
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


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


def reporter_for(stream: TextIO, mirror: bool = False) -> Reporter:
    """The live line on a terminal, plain log lines anywhere else; ``mirror``: worded for
    ``mirror --once``, which fetches and writes files but embeds nothing."""
    isatty = getattr(stream, "isatty", None)
    if isatty is not None and isatty():
        return ProgressLine(stream, "Mirroring", chunks=False) if mirror else \
            ProgressLine(stream)
    return LogLines("Mirrored") if mirror else LogLines()
