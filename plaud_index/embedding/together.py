"""Queries that arrive together are embedded together: one model run at a time, and the
queries that came while it ran go into the next run as one batch.

Why: the shared server (``serve --http``) answers many clients at once, and each search
starts with its query's embedding. Left to themselves, concurrent runs of the one
onnxruntime session contend for its thread pool, whose threads spin while they wait (on
2 cores that spinning cost about 2 ms of CPU per search under 20 clients, a fifth of all
the server did). One run at a time spins only while it runs, and a batch of k short
queries costs less CPU than k runs. A query that finds the model idle runs at once,
alone, exactly as before: one client's latency is unchanged.

The caller that finds the model idle runs the batch for everyone waiting (no thread of
its own); a failure of a run is raised in every search whose query was in it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

import numpy as np

T = TypeVar("T")

MAX_TOGETHER = 16  # queries per run at most (a run's time grows with its batch)


@dataclass
class _Ticket(Generic[T]):
    item: T
    done: bool = False
    vector: np.ndarray | None = None
    error: BaseException | None = field(default=None, repr=False)


class Together(Generic[T]):
    """``embed(item)`` for many threads, ``run`` seeing one batch at a time."""

    def __init__(self, run: Callable[[Sequence[T]], np.ndarray],
                 most: int = MAX_TOGETHER) -> None:
        self._run, self._most = run, most
        self._turn = threading.Condition()
        self._waiting: list[_Ticket[T]] = []
        self._running = False

    @property
    def waiting(self) -> int:
        """Queries waiting for the next run."""
        with self._turn:
            return len(self._waiting)

    def embed(self, item: T) -> np.ndarray:
        ticket = _Ticket(item)
        with self._turn:
            self._waiting.append(ticket)
            while not ticket.done:
                if self._running:
                    self._turn.wait()
                    continue
                batch = self._waiting[:self._most]
                del self._waiting[:self._most]
                self._running = True
                self._turn.release()
                try:
                    self._embed(batch)
                finally:
                    self._turn.acquire()
                    self._running = False
                    self._turn.notify_all()
        if ticket.error is not None:
            raise ticket.error
        assert ticket.vector is not None
        return ticket.vector

    def _embed(self, batch: list[_Ticket[T]]) -> None:
        try:
            vectors = self._run([t.item for t in batch])
        except BaseException as exc:  # every search in the batch learns why
            for ticket in batch:
                ticket.error, ticket.done = exc, True
            return
        for ticket, vector in zip(batch, vectors, strict=True):
            ticket.vector, ticket.done = vector, True
