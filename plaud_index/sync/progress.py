"""Progress of a running sync: the numbers, how they read, and the live terminal line.

The indexer stores a ``SyncProgress`` in the sync state at every commit, so
``status``, the MCP answers and a second terminal all read the same n of N.
On a terminal the indexer also redraws one line per recording; anywhere else
(launchd's log file, a pipe) it writes a plain log line per commit instead.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass
from typing import Any, Protocol, TextIO

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SyncProgress:
    """``done`` of ``total`` recordings handled since ``started`` (epoch seconds)."""

    done: int
    total: int
    started: float
    chunks: int = 0  # chunks embedded so far
    committed: int = 0  # recordings whose work is safely on disk
    updated: float = 0.0  # when these numbers were taken (epoch seconds)

    @classmethod
    def from_state(cls, raw: dict[str, Any] | None) -> SyncProgress | None:
        """The stored form; ``None`` when there is none or it is not ours."""
        if not raw:
            return None
        try:
            return cls(done=int(raw["done"]), total=int(raw["total"]),
                       started=float(raw.get("started", 0.0)),
                       chunks=int(raw.get("chunks", 0)),
                       committed=int(raw.get("committed", raw["done"])),
                       updated=float(raw.get("updated", 0.0)))
        except (KeyError, TypeError, ValueError):
            return None

    def to_state(self) -> dict[str, Any]:
        return asdict(self)

    def rate(self, now: float) -> float:
        """Recordings per second so far (0 until the first one is done)."""
        elapsed = now - self.started
        return self.done / elapsed if self.done and self.started and elapsed > 0 else 0.0

    def eta_s(self, now: float) -> float | None:
        rate = self.rate(now)
        return (self.total - self.done) / rate if rate else None

    def describe(self, now: float) -> str:
        """``12 of 73 recordings, about 4 minutes left`` (no estimate before the first)."""
        text = f"{self.done} of {self.total} recordings"
        eta = self.eta_s(now)
        return f"{text}, {about(eta)} left" if eta and self.done < self.total else text


def about(seconds: float) -> str:
    """A duration as a person would say it: ``about 40 seconds``, ``about 3 minutes``."""
    if seconds < 90:
        return f"about {max(5, round(seconds / 5) * 5):.0f} seconds"
    if seconds < 90 * 60:
        return f"about {round(seconds / 60):.0f} minutes"
    return f"about {seconds / 3600:.1f} hours"


class ProgressLine:
    """Redraws ``recordings 12/73 · 340 chunks · 0.6/s · about 2 minutes left`` in place
    on a terminal; ``finish()`` ends the line so the next log line starts clean."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self._width = 0

    def __call__(self, progress: SyncProgress) -> None:
        now = progress.updated  # the line is redrawn per recording fetched and per commit
        eta = progress.eta_s(now)
        parts = [f"recordings {progress.done}/{progress.total}", f"{progress.chunks} chunks",
                 f"{progress.rate(now):.1f}/s"]
        if eta and progress.done < progress.total:
            parts.append(f"{about(eta)} left")
        text = "Indexing: " + " · ".join(parts)
        self.stream.write("\r" + text.ljust(self._width))
        self.stream.flush()
        self._width = len(text)

    def finish(self) -> None:
        if self._width:
            self.stream.write("\n")
            self.stream.flush()
            self._width = 0


class LogLines:
    """The plain reporter (launchd's log, a pipe): one log line per commit."""

    def __call__(self, progress: SyncProgress) -> None:
        if progress.committed == progress.done:
            log.info("Indexed %s", progress.describe(progress.updated))

    def finish(self) -> None:
        """Nothing to end: every line was complete."""


log_commits = LogLines()


class Reporter(Protocol):
    def __call__(self, progress: SyncProgress) -> None: ...

    def finish(self) -> None: ...


def reporter_for(stream: TextIO) -> Reporter:
    """The live line on a terminal, plain log lines anywhere else."""
    isatty = getattr(stream, "isatty", None)
    return ProgressLine(stream) if isatty is not None and isatty() else LogLines()
