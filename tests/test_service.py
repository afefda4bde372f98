"""The service's answers: partial-index marking, the no-match and weak-match notes."""

from __future__ import annotations

import time

from plaud_index.config import Config
from plaud_index.embedding.embedder import HashEmbedder
from plaud_index.search.rank import make_request, rank
from plaud_index.service import SearchService
from plaud_index.sync.cycles import run_locked_cycle
from plaud_index.sync.lock import lock_holder
from plaud_index.sync.state import SyncStateStore


class Picky(HashEmbedder):
    """A model whose measured threshold no hash vector reaches: every match is weak."""

    def __init__(self) -> None:
        super().__init__()
        self.weak_similarity = 0.999


def test_an_answer_from_a_finished_sync_is_complete(config: Config) -> None:
    run_locked_cycle(config, HashEmbedder())
    result = SearchService(config, HashEmbedder()).search(make_request("budget"))
    assert result.index.complete and result.index.progress is None
    assert result.results and result.note is None


def test_an_answer_during_the_first_sync_says_it_is_partial(config: Config) -> None:
    run_locked_cycle(config, HashEmbedder())
    state = SyncStateStore(config.home)
    state.update(last_success=None, progress={"done": 5, "total": 20, "fetched": 5,
                                              "fetch_s": 75.0, "updated": time.time() - 200,
                                              "started": time.time() - 300})
    result = SearchService(config, HashEmbedder()).search(make_request("budget"))
    assert not result.index.complete
    # nobody is indexing: the sync stopped, and its estimate is what it was when it did
    assert result.index.progress == ("stopped 3 minutes ago at 5 of 20 recordings (about 5 "
                                     "minutes of work left)")


def test_no_match_and_weak_match_are_said_plainly(config: Config) -> None:
    run_locked_cycle(config, HashEmbedder())
    nothing = SearchService(config, HashEmbedder()).search(
        make_request("budget", speaker="nobody by that name"))
    assert nothing.results == () and nothing.note == \
        "No recording matches this query and its filters."
    weak = SearchService(config, Picky()).search(make_request("budget"))
    assert weak.results and weak.note is not None
    assert weak.note.startswith("No passage is a close match (best similarity 0.")


def test_a_failed_background_sync_is_not_restarted_by_every_question(config: Config) -> None:
    from helpers import FakeSource

    from plaud_index.errors import PlaudRateLimitedError
    from plaud_index.sync.cycles import BackgroundSync

    class Limited(FakeSource):
        def list_files(self, tail_hint: str | None = None) -> list[dict[str, object]]:
            raise PlaudRateLimitedError("Plaud is rate-limiting requests (test)")

    now = [1000.0]
    sync = BackgroundSync(clock=lambda: now[0])
    assert sync.start(config, HashEmbedder, Limited([]))
    deadline = time.monotonic() + 60
    while lock_holder(config.lock_path) or SyncStateStore(config.home).read().last_error_kind \
            != "PlaudRateLimitedError":  # wait for the condition, not for a guessed time
        assert time.monotonic() < deadline, "the background sync never ended"
        time.sleep(0.05)
    assert not sync.start(config, HashEmbedder, Limited([]))  # a minute has not passed
    now[0] += BackgroundSync.RETRY_AFTER_S + 1
    assert sync.start(config, HashEmbedder, Limited([]))  # now it may try again
    sync.stop(30)


class Unheard(HashEmbedder):
    """A model with no weak cut but a cut for queries whose words the index lacks."""

    def __init__(self) -> None:
        super().__init__()
        self.weak_similarity = 0.0
        self.unmatched_similarity = 0.999


def test_a_query_whose_words_mostly_never_occur_gets_the_weak_match_note(
        config: Config) -> None:
    run_locked_cycle(config, HashEmbedder())
    service = SearchService(config, Unheard())
    heard = service.search(make_request("budget review"))
    assert heard.results and heard.note is None  # its words are in the meetings
    unheard = service.search(make_request("banana bread recipe with walnuts budget"))
    assert unheard.note is not None and unheard.note.startswith("No passage is a close match")
    ranking = rank(service.ready_snapshot(), make_request("banana bread walnuts budget"),
                   None)
    assert ranking.term_coverage == 0.25


def test_an_answer_from_a_snapshot_older_than_the_last_commit_is_never_called_complete(
        config: Config) -> None:
    run_locked_cycle(config, HashEmbedder())
    store = SyncStateStore(config.home)
    store.update(last_success=None, progress={"done": 1, "total": 13, "fetched": 1})
    service = SearchService(config, HashEmbedder())
    before = store.read()  # what a tool call reads before it opens its snapshot
    snap = service.snapshot()
    store.update(last_success=time.time(), progress=None)  # the sync finishes meanwhile
    info = service.freshness(snap, before)
    assert info.complete is False and info.progress is not None
    assert service.freshness(snap).complete is True  # read afresh, it is
