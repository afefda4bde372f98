"""The live progress line on a terminal: redrawn in place as the work goes and as the clock
moves, with log records printed above it, never glued to it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TextIO

from .progress import LogLines, Reporter, SyncProgress, about


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


def reporter_for(stream: TextIO, mirror: bool = False) -> Reporter:
    """The live line on a terminal, plain log lines anywhere else; ``mirror``: worded for
    ``mirror --once``, which fetches and writes files but embeds nothing."""
    isatty = getattr(stream, "isatty", None)
    if isatty is not None and isatty():
        return ProgressLine(stream, "Mirroring", chunks=False) if mirror else \
            ProgressLine(stream)
    return LogLines("Mirrored") if mirror else LogLines()
