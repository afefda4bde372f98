"""Recordings waiting for their vectors, embedded a group of chunks at a time.

The cycle fetches recordings one by one and hands each to this queue; the
queue embeds the chunks it does not already know in groups of about
``GROUP_CHUNKS`` (length-sorted model batches inside each group keep the model
busy), so the indexer can report and commit between groups instead of after one
call over everything fetched. A group may span recordings (short folder files)
or cover part of one (a two-hour meeting is ~80 chunks). A group the model
rejects is embedded again recording by recording, so only the recording whose
text breaks the model is dropped.

Each group runs on a worker thread, one model run (a few chunks) at a time, while the
cycle's thread keeps the vectors of every finished run, ticks the progress, and watches
for a stop: a session that ends commits what is embedded without waiting for the run in
flight (a client allows 2 s; a run under load can take longer). The worker finishes that
one run and then stops; ``settle`` waits for it where the process goes on.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ..embedding.embedder import Embedder, embed_batches
from ..models import Chunk, Recording

log = logging.getLogger(__name__)

# Chunks per embedding call: ~2-4 s of work on 2 cores, so progress and commits come
# that often, while a call is still long enough to sort its texts into full batches.
GROUP_CHUNKS = 64
TICK_S = 0.25  # how often the cycle looks up from a model run: a stop, the clock


def _never() -> bool:
    return False


def _ignore(embedded: int) -> None:
    """No progress to tell."""


@dataclass
class Waiting:
    """A fetched recording and what is known of its vectors so far."""

    recording: Recording
    digest: str
    chunks: list[Chunk]
    vectors: dict[str, np.ndarray] = field(default_factory=dict)  # by chunk id
    missing: list[Chunk] = field(default_factory=list)  # still to embed, in order

    @property
    def ready(self) -> bool:
        return not self.missing

    def matrix(self, chunks: list[Chunk], dim: int) -> np.ndarray:
        matrix = np.array([self.vectors[c.chunk_id] for c in chunks], dtype=np.float32)
        matrix = matrix.reshape(len(chunks), dim)
        if not np.isfinite(matrix).all():
            raise ValueError("the model produced vectors that are not numbers")
        return matrix

    def embedded(self) -> list[Chunk]:
        """The chunks that have their vector, in recording order."""
        return [c for c in self.chunks if c.chunk_id in self.vectors]


@dataclass
class Failed:
    waiting: Waiting
    error: Exception


class EmbedQueue:
    def __init__(self, embedder: Embedder,
                 known_vector: Callable[[Chunk], np.ndarray | None],
                 group_chunks: int = GROUP_CHUNKS) -> None:
        self.embedder = embedder
        self.known_vector = known_vector  # a committed vector, so it is never embedded again
        self.group_chunks = group_chunks
        self.waiting: list[Waiting] = []
        self._worker: threading.Thread | None = None
        self._cancel = threading.Event()

    @property
    def fresh(self) -> int:
        """Chunks waiting to be embedded."""
        return sum(len(w.missing) for w in self.waiting)

    def add(self, recording: Recording, digest: str, chunks: list[Chunk]) -> tuple[int, int]:
        """Queue a recording; returns (chunks to embed, chunks whose vector is reused)."""
        waiting = Waiting(recording, digest, chunks)
        for chunk in chunks:
            vector = self.known_vector(chunk)
            if vector is None:
                waiting.missing.append(chunk)
            else:
                waiting.vectors[chunk.chunk_id] = vector
        self.waiting.append(waiting)
        return len(waiting.missing), len(chunks) - len(waiting.missing)

    def embed_group(self, stop: Callable[[], bool] = _never,
                    tick: Callable[[int], None] = _ignore) -> list[Failed]:
        """Embed up to ``group_chunks`` waiting chunks, oldest recordings first; ``tick``
        hears of every chunk that got its vector (and ``0`` when the clock moved on), and a
        ``stop`` keeps what is done. Returns the recordings dropped because the model failed
        on them (no longer queued)."""
        taken: list[tuple[Waiting, list[Chunk]]] = []
        room = self.group_chunks
        for waiting in self.waiting:
            if room <= 0:
                break
            if waiting.missing:
                part = waiting.missing[:room]
                taken.append((waiting, part))
                room -= len(part)
        if not taken:
            return []
        try:
            self._embed(taken, stop, tick)
            return []
        except Exception as exc:  # noqa: BLE001 - whatever the model raises, find who caused it
            if len(taken) == 1:
                return [self._drop(taken[0][0], exc)]
            log.warning("Embedding a group of %d chunks failed; embedding its recordings "
                        "one by one to find the one at fault", sum(len(p) for _, p in taken))
        failed = []
        for waiting, part in taken:
            if stop():
                break
            try:
                self._embed([(waiting, part)], stop, tick)
            except Exception as exc:  # noqa: BLE001 - e.g. text the tokenizer rejects
                failed.append(self._drop(waiting, exc))
        return failed

    def _embed(self, taken: list[tuple[Waiting, list[Chunk]]], stop: Callable[[], bool],
               tick: Callable[[int], None]) -> None:
        places = [(waiting, chunk) for waiting, part in taken for chunk in part]
        runs = self._start([chunk.embed_text for _, chunk in places])
        try:
            while (item := self._next_run(runs, stop, tick)) is not None:
                rows, vectors = item
                fresh = 0
                for row, vector in zip(rows, vectors, strict=True):
                    waiting, chunk = places[row]
                    fresh += chunk.chunk_id not in waiting.vectors
                    waiting.vectors[chunk.chunk_id] = vector
                tick(fresh)
        finally:
            for waiting, _ in taken:
                waiting.missing = [c for c in waiting.missing if c.chunk_id not in
                                   waiting.vectors]

    def _start(self, texts: list[str]) -> queue.Queue[object]:
        """The model runs over ``texts`` on a worker thread, each run's result queued."""
        runs: queue.Queue[object] = queue.Queue()
        cancelled = threading.Event()

        def work() -> None:
            try:
                for run in embed_batches(self.embedder, texts):
                    runs.put(run)
                    if cancelled.is_set():
                        return
            except Exception as exc:  # noqa: BLE001 - handed to the cycle's thread
                runs.put(exc)
            runs.put(None)

        self._cancel = cancelled
        self._worker = threading.Thread(target=work, name="embed-group", daemon=True)
        self._worker.start()
        return runs

    def _next_run(self, runs: queue.Queue[object], stop: Callable[[], bool],
                  tick: Callable[[int], None]) -> tuple[list[int], np.ndarray] | None:
        """The next finished run; ``None`` when all are done or a stop came first (the
        run in flight is left to finish on its own)."""
        while True:
            stopping = stop()  # a run already finished is kept even then
            try:
                item = runs.get(block=not stopping, timeout=TICK_S)
            except queue.Empty:
                if stopping:
                    self._cancel.set()
                    return None
                tick(0)
                continue
            if isinstance(item, Exception):
                raise item
            return item  # type: ignore[return-value]

    def settle(self, timeout_s: float | None = None) -> None:
        """Wait for a model run left in flight by a stop (before the process exits: a
        model torn down under a running thread can crash the interpreter's exit)."""
        if self._worker is not None:
            self._worker.join(timeout_s)

    def _drop(self, waiting: Waiting, error: Exception) -> Failed:
        self.waiting.remove(waiting)
        return Failed(waiting, error)

    def pop_ready(self) -> list[Waiting]:
        """Recordings whose every chunk has its vector, taken off the queue."""
        ready = [w for w in self.waiting if w.ready]
        self.waiting = [w for w in self.waiting if not w.ready]
        return ready

    def clear(self) -> None:
        self.waiting = []
