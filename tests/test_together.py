"""Queries of searches running at the same time share one model run (``together``): each
search gets its own query's vector, runs never overlap, a query that finds the model idle
runs alone at once, and a failed run fails every search whose query was in it."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

import numpy as np

from plaud_index.embedding.embedder import OnnxEmbedder
from plaud_index.embedding.together import Together


class Model:
    """A fake model: a query's vector is its number; the first run can be held, so that
    other queries arrive while it runs."""

    def __init__(self, fail: bool = False) -> None:
        self.batches: list[list[int]] = []
        self.running = 0
        self.overlapped = False
        self.first_started, self.release = threading.Event(), threading.Event()
        self.fail = fail

    def run(self, items: Sequence[int]) -> np.ndarray:
        self.running += 1
        self.overlapped |= self.running > 1
        self.batches.append(list(items))
        if len(self.batches) == 1:
            self.first_started.set()
            assert self.release.wait(60)
        self.running -= 1
        if self.fail:
            raise RuntimeError("the model failed")
        return np.array([[float(i)] for i in items], dtype=np.float32)


def until(done: object, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not done():  # type: ignore[operator]
        assert time.monotonic() < deadline
        time.sleep(0.005)


def held_first(model: Model, together: Together[int], queries: int) -> dict[int, object]:
    """``queries`` searches: the first runs alone and is held while all the others queue,
    then everything runs; what each search got (its vector's value, or the error)."""
    got: dict[int, object] = {}

    def search(q: int) -> None:
        try:
            got[q] = float(together.embed(q)[0])
        except RuntimeError as exc:
            got[q] = exc

    threads = [threading.Thread(target=search, args=(q,)) for q in range(queries)]
    threads[0].start()
    assert model.first_started.wait(60)  # the first query runs alone, at once
    for thread in threads[1:]:
        thread.start()
    until(lambda: together.waiting == queries - 1)
    model.release.set()
    for thread in threads:
        thread.join(60)
    return got


def test_queries_that_arrive_while_the_model_runs_share_the_next_run() -> None:
    model = Model()
    got = held_first(model, Together(model.run), 9)
    assert got == {q: float(q) for q in range(9)}  # each search its own query's vector
    assert model.batches[0] == [0] and sorted(model.batches[1]) == list(range(1, 9))
    assert not model.overlapped


def test_a_batch_holds_at_most_its_limit_and_the_rest_run_next() -> None:
    model = Model()
    got = held_first(model, Together(model.run, most=3), 8)
    assert got == {q: float(q) for q in range(8)}
    assert [len(b) for b in model.batches] == [1, 3, 3, 1] and not model.overlapped


def test_a_failed_run_fails_every_search_in_it_and_the_next_run_still_runs() -> None:
    model = Model(fail=True)
    together: Together[int] = Together(model.run)
    got = held_first(model, together, 4)
    assert all(isinstance(got[q], RuntimeError) for q in range(4)), got
    model.fail = False
    assert float(together.embed(7)[0]) == 7.0  # nothing is left stuck


def test_the_real_model_gives_a_query_the_same_vector_alone_or_with_others(
        real_embedder: OnnxEmbedder) -> None:
    queries = ["what did we decide about the Q3 budget?", "database outage root cause",
               "Lagerkosten für die Kartons", "who owns the launch checklist",
               "kitchen renovation quote", "hiring plan", "ok", "予算の決定"]
    alone = {q: real_embedder.embed_query(q) for q in queries}
    barrier = threading.Barrier(len(queries))
    got: dict[str, np.ndarray] = {}

    def search(q: str) -> None:
        barrier.wait(60)
        got[q] = real_embedder.embed_query(q)

    workers = [threading.Thread(target=search, args=(q,)) for q in queries]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(120)
    for q in queries:
        np.testing.assert_allclose(got[q], alone[q], atol=1e-5)
