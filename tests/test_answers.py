"""What ``plaud_index.answers`` says: partial-index marking, the no-match and weak-match notes."""

from __future__ import annotations

import os
import time

from helpers import answers_of

from plaud_index.config import Config
from plaud_index.embedding.embedder import HashEmbedder
from plaud_index.search.rank import make_request, rank
from plaud_index.sync.cycles import run_locked_cycle
from plaud_index.sync.state import SyncStateStore


class Picky(HashEmbedder):
    """A model whose measured threshold no hash vector reaches: every match is weak."""

    def __init__(self) -> None:
        super().__init__()
        self.weak_similarity = 0.999


def test_an_answer_from_a_finished_sync_is_complete(config: Config) -> None:
    run_locked_cycle(config, HashEmbedder())
    result = answers_of(config, HashEmbedder()).search.search(make_request("budget"))
    assert result.index.complete and result.index.progress is None
    assert result.results and result.note is None


def test_an_answer_during_the_first_sync_says_it_is_partial(config: Config) -> None:
    run_locked_cycle(config, HashEmbedder())
    state = SyncStateStore(config.home)
    state.update(last_success=None, progress={"done": 5, "total": 20, "fetched": 5,
                                              "fetch_s": 75.0, "updated": time.time() - 200,
                                              "started": time.time() - 300})
    result = answers_of(config, HashEmbedder()).search.search(make_request("budget"))
    assert not result.index.complete
    # nobody is indexing: the sync stopped, and its estimate is what it was when it did
    assert result.index.progress == ("stopped 3 minutes ago at 5 of 20 recordings done, 13 "
                                     "searchable (about 5 minutes of work left)")


def test_no_match_and_weak_match_are_said_plainly(config: Config) -> None:
    run_locked_cycle(config, HashEmbedder())
    nothing = answers_of(config, HashEmbedder()).search.search(
        make_request("budget", speaker="nobody by that name"))
    assert nothing.results == () and nothing.note == \
        "No recording matches this query and its filters."
    weak = answers_of(config, Picky()).search.search(make_request("budget"))
    assert weak.results and weak.note is not None
    assert weak.note.startswith("No passage is a close match (best similarity 0.")


def test_a_failed_first_sync_is_not_restarted_by_every_question(config: Config) -> None:
    """The first sync runs in a process of its own (here the real command, as the server
    starts it); once it failed, questions within a minute do not start another."""
    import subprocess

    from helpers import REPO

    from plaud_index.sync.detached import DetachedSync

    corpus = config.home.parent / "broken-corpus"
    corpus.mkdir(parents=True)  # a folder, not a file: the mock corpus cannot be read
    started: list[subprocess.Popen[bytes]] = []

    def popen(args: list[str], **kwargs: object) -> subprocess.Popen[bytes]:
        env = {**os.environ, "PLAUD_INDEX_HOME": str(config.home), "PLAUD_CLIENT": "mock",
               "PLAUD_MOCK_CORPUS": str(corpus), "PLAUD_EMBEDDER": "mock"}
        started.append(subprocess.Popen(args, cwd=REPO, env=env, **kwargs))  # type: ignore[call-overload]
        return started[-1]

    now = [time.time()]
    sync = DetachedSync("server", popen=popen, clock=lambda: now[0])
    assert sync.start(config)
    assert started[0].args[-4:-2] == ["--role", "first sync (server)"]
    assert started[0].wait(120) != 0  # it failed: the corpus cannot be read
    assert SyncStateStore(config.home).read().last_error
    again = DetachedSync("server", popen=popen, clock=lambda: now[0])  # the next server
    assert not again.start(config)  # a minute has not passed
    assert not sync.start(config)  # nor for the server that started it
    now[0] += DetachedSync.RETRY_AFTER_S + 1
    assert again.start(config)  # now it may try again
    started[-1].wait(120)


class Unheard(HashEmbedder):
    """A model with no weak cut but a cut for queries whose words the index lacks."""

    def __init__(self) -> None:
        super().__init__()
        self.weak_similarity = 0.0
        self.unmatched_similarity = 0.999


def test_a_query_whose_words_mostly_never_occur_gets_the_weak_match_note(
        config: Config) -> None:
    run_locked_cycle(config, HashEmbedder())
    service = answers_of(config, Unheard())
    heard = service.search.search(make_request("budget review"))
    assert heard.results and heard.note is None  # its words are in the meetings
    unheard = service.search.search(make_request("banana bread recipe with walnuts budget"))
    assert unheard.note is not None and unheard.note.startswith("No passage is a close match")
    ranking = rank(service.readiness.ready()[0], make_request("banana bread walnuts budget"),
                   None)
    assert ranking.term_coverage == 0.25


def test_an_answer_from_a_snapshot_older_than_the_last_commit_is_never_called_complete(
        config: Config) -> None:
    run_locked_cycle(config, HashEmbedder())
    store = SyncStateStore(config.home)
    store.update(last_success=None, progress={"done": 1, "total": 13, "fetched": 1})
    service = answers_of(config, HashEmbedder())
    before = store.read()  # what a tool call reads before it opens its snapshot
    snap = service.index.snapshot()
    store.update(last_success=time.time(), progress=None)  # the sync finishes meanwhile
    info = service.readiness.freshness(snap, before)
    assert info.complete is False and info.progress is not None
    assert service.readiness.freshness(snap).complete is True  # read afresh, it is


class Keeper:
    """A keeper whose sync is whatever the test says (``sync.keeper.Keeper``'s shape)."""

    def __init__(self, indexing: bool = False, failure: str | None = None,
                 refuses: Exception | None = None) -> None:
        self._indexing, self._failure, self.refuses = indexing, failure, refuses

    def holder(self) -> dict[str, object] | None:
        return {"pid": 1, "role": "sync"} if self._indexing else None

    def indexing(self) -> bool:
        return self._indexing

    def failure(self) -> str | None:
        return self._failure

    def waits_for_first_commit(self) -> bool:
        return False

    def start_first_sync(self, wait: bool, needed: object, embedder: object) -> None:
        if self.refuses is not None:
            raise self.refuses

    def keep_fresh(self, state: object, stale: object, current: object) -> bool:
        return False

    def upgrade(self, model: object) -> bool:
        return False


def test_readiness_says_its_state_typed_and_each_in_the_one_sentence_both_edges_give(
        config: Config) -> None:
    """Issue 52: a typed state, not an error with flags; the tools and the CLI both give
    its ``message`` (tools: ``Answering.answer``; the CLI prints the ``NotReadyYet``)."""
    import pytest

    from plaud_index.answers import Answers
    from plaud_index.answers.readiness import (
        Building,
        NeverSynced,
        NotReadyYet,
        Ready,
        SignedOut,
        SyncFailed,
        Unavailable,
    )
    from plaud_index.errors import PlaudAuthError, StorageError

    def check(keeper: Keeper) -> object:
        return Answers.of(config, HashEmbedder(), keeper=keeper).readiness.check()

    SyncStateStore(config.home).update(progress={"done": 2, "total": 30, "fetched": 2,
                                                 "fetch_s": 10.0, "updated": time.time(),
                                                 "started": time.time() - 60})
    building = check(Keeper(indexing=True))
    assert isinstance(building, Building) and "2 of 30" in building.doing
    assert building.message.startswith("Plaud index not available yet: the first sync is ")
    assert check(Keeper(failure="The disk is full: free some space")) == \
        SyncFailed("The disk is full: free some space")
    signed_out = check(Keeper(refuses=PlaudAuthError("Not signed in to Plaud: run login")))
    assert signed_out == SignedOut("Not signed in to Plaud: run login")
    assert isinstance(check(Keeper(refuses=StorageError("The disk is full"))), Unavailable)
    assert check(Keeper()) == NeverSynced()
    with pytest.raises(NotReadyYet) as caught:
        Answers.of(config, HashEmbedder(), keeper=Keeper()).search.search(
            make_request("budget"))
    assert caught.value.state == NeverSynced() and str(caught.value) == NeverSynced().message
    run_locked_cycle(config, HashEmbedder())
    assert isinstance(check(Keeper()), Ready)
