"""One index cycle against an in-memory source: diffing, reuse, deletions, the lock."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from helpers import FakeSource, detail

from plaud_index.config import Config
from plaud_index.embedder import HashEmbedder
from plaud_index.errors import IndexBusyError, SourceError
from plaud_index.index.store import open_snapshot
from plaud_index.sync.cycles import run_locked_cycle
from plaud_index.sync.indexer import Indexer
from plaud_index.sync.lock import IndexerLock, lock_holder
from plaud_index.sync.state import SyncStateStore


class CountingEmbedder(HashEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.embedded: list[str] = []

    def embed(self, texts):  # type: ignore[no-untyped-def]
        self.embedded.extend(texts)
        return super().embed(texts)


def segments(n: int, prefix: str) -> list[dict[str, object]]:
    return [{"start_time": i * 5000, "end_time": i * 5000 + 4000, "speaker": "Ann",
             "content": f"{prefix} sentence number {i} about the plan and its many details."}
            for i in range(n)]


def corpus(n: int = 5) -> list[dict[str, object]]:
    return [detail(f"id{i:03d}", name=f"Meeting {i}", segments=segments(30, f"m{i}"),
                   note=f"## Summary\nMeeting {i} summary.") for i in range(n)]


def test_first_cycle_indexes_everything(tmp_path: Path) -> None:
    source = FakeSource(corpus())
    report = Indexer(source, HashEmbedder(), tmp_path, commit_every=2).run_cycle()
    assert (report.listed, report.added, report.fetched) == (5, 5, 5)
    assert report.commits == 3  # groups of two: progress is durable as it goes
    snap = open_snapshot(tmp_path / "vector-index")
    assert snap is not None and len(snap.recordings) == 5
    assert report.chunks_embedded == snap.live_chunks > 5


def test_unchanged_second_cycle_fetches_and_embeds_nothing(tmp_path: Path) -> None:
    source, embedder = FakeSource(corpus()), CountingEmbedder()
    Indexer(source, embedder, tmp_path).run_cycle()
    manifest = (tmp_path / "vector-index" / "manifest.json").stat().st_ino
    source.detail_calls.clear()
    embedder.embedded.clear()
    report = Indexer(source, embedder, tmp_path).run_cycle()
    # old recordings are re-checked in a rolling window: ceil(5 * 300 s / 1 day) = 1 per cycle
    assert len(source.detail_calls) == 1 and embedder.embedded == []
    assert report.unchanged == 5 and report.commits == 0
    # nothing rewritten
    assert (tmp_path / "vector-index" / "manifest.json").stat().st_ino == manifest


def test_renamed_recording_is_re_fetched_and_updates_its_title(tmp_path: Path) -> None:
    source = FakeSource(corpus())
    Indexer(source, HashEmbedder(), tmp_path).run_cycle()
    source.detail_calls.clear()
    source.details["id002"]["name"] = "Meeting 2 (edited)"
    report = Indexer(source, HashEmbedder(), tmp_path).run_cycle()
    assert source.detail_calls[0] == "id002" and report.updated == 1
    snap = open_snapshot(tmp_path / "vector-index")
    assert snap is not None
    assert snap.recordings[snap.by_id["id002"]].title == "Meeting 2 (edited)"


def test_changed_text_reuses_vectors_of_unchanged_chunks(tmp_path: Path) -> None:
    source, embedder = FakeSource(corpus(1)), CountingEmbedder()
    Indexer(source, embedder, tmp_path).run_cycle()
    total = len(embedder.embedded)
    embedder.embedded.clear()
    # Only the note changes, the title does not: transcript chunks keep their ids.
    source.details["id000"]["note_list"][0]["data_content"] = "## Summary\nRevised."
    report = Indexer(source, embedder, tmp_path, revalidate={"id000"}).run_cycle()
    assert report.chunks_embedded == 1 and embedder.embedded == [
        "Meeting 0 (2026-03-02)\nSummary\nRevised."]
    assert report.chunks_reused == total - 1


def test_recording_missing_from_a_healthy_listing_is_deleted(tmp_path: Path) -> None:
    source = FakeSource(corpus())
    Indexer(source, HashEmbedder(), tmp_path).run_cycle()
    del source.details["id004"]
    report = Indexer(source, HashEmbedder(), tmp_path).run_cycle()
    assert report.deleted == 1
    snap = open_snapshot(tmp_path / "vector-index")
    assert snap is not None and "id004" not in snap.by_id and len(snap.recordings) == 4


@pytest.mark.parametrize("listing", [[], [{"id": "id000", "name": "Meeting 0"}]])
def test_empty_or_shrunken_listing_deletes_nothing(
        listing: list[dict[str, object]], tmp_path: Path,
        caplog: pytest.LogCaptureFixture) -> None:
    source = FakeSource(corpus())
    Indexer(source, HashEmbedder(), tmp_path).run_cycle()
    source.listing_override = listing
    with caplog.at_level(logging.WARNING):
        report = Indexer(source, HashEmbedder(), tmp_path).run_cycle()
    assert report.deleted == 0 and "deleting nothing" in caplog.text
    snap = open_snapshot(tmp_path / "vector-index")
    assert snap is not None and len(snap.recordings) == 5


def test_listing_duplicates_are_fetched_once(tmp_path: Path) -> None:
    source = FakeSource(corpus(2))
    source.listing_override = source.list_files() * 3
    report = Indexer(source, HashEmbedder(), tmp_path).run_cycle()
    assert report.listed == 2 and sorted(source.detail_calls) == ["id000", "id001"]


def test_malformed_recording_is_logged_and_skipped(tmp_path: Path) -> None:
    source = FakeSource(corpus(3))
    source.details["id001"] = {"id": "id001", "name": "broken", "created_at": "whenever"}
    report = Indexer(source, HashEmbedder(), tmp_path).run_cycle()
    assert report.added == 2 and report.skipped == 1
    assert "id001" in report.errors[0]


def test_recording_without_content_is_re_fetched_next_cycle(tmp_path: Path) -> None:
    source = FakeSource(corpus(1))
    source.details["id000"]["source_list"] = []
    source.details["id000"]["note_list"] = []
    Indexer(source, HashEmbedder(), tmp_path).run_cycle()
    source.details["id000"] = corpus(1)[0]
    report = Indexer(source, HashEmbedder(), tmp_path).run_cycle()
    assert report.updated == 1
    snap = open_snapshot(tmp_path / "vector-index")
    assert snap is not None and snap.live_chunks > 0


def test_broken_listing_fails_the_cycle_and_records_the_error(tmp_path: Path) -> None:
    class Broken(FakeSource):
        def list_files(self, tail_hint: str | None = None) -> list[dict[str, object]]:
            raise SourceError("Plaud returned HTML instead of JSON")

    with pytest.raises(SourceError):
        Indexer(Broken([]), HashEmbedder(), tmp_path).run_cycle()
    state = SyncStateStore(tmp_path).read()
    assert state.last_error == "Plaud returned HTML instead of JSON"
    assert state.last_success is None


def test_sync_state_records_success(tmp_path: Path) -> None:
    Indexer(FakeSource(corpus(1)), HashEmbedder(), tmp_path).run_cycle()
    state = json.loads((tmp_path / "sync-state.json").read_text())
    assert state["last_error"] is None and state["last_report"]["added"] == 1


def test_a_second_cycle_while_the_lock_is_held_is_skipped(config: Config) -> None:
    holder = IndexerLock(config.lock_path)
    assert holder.try_acquire()
    try:
        info = lock_holder(config.lock_path)
        assert info is not None and info["role"] == "indexer"
        with pytest.raises(IndexBusyError, match="indexing already in progress, skipping cycle"):
            run_locked_cycle(config, HashEmbedder(), FakeSource(corpus(1)))
    finally:
        holder.release()
    assert lock_holder(config.lock_path) is None
    assert run_locked_cycle(config, HashEmbedder(), FakeSource(corpus(1))).added == 1


def test_model_change_re_indexes_and_promotes_when_complete(tmp_path: Path) -> None:
    source = FakeSource(corpus(3))
    Indexer(source, HashEmbedder(), tmp_path).run_cycle()

    class Other(HashEmbedder):
        model_id = "other/model"
        model_hash = "other-hash"

    report = Indexer(source, Other(), tmp_path).run_cycle()
    assert report.added == 3
    snap = open_snapshot(tmp_path / "vector-index")
    assert snap is not None and snap.model.model_id == "other/model"
    assert len(snap.recordings) == 3


class SlowSource(FakeSource):
    """Every detail fetch takes ``seconds`` of a fake clock (Plaud's pacing)."""

    def __init__(self, details: list[dict[str, object]], seconds: float) -> None:
        super().__init__(details)  # type: ignore[arg-type]
        self.now, self.seconds = 1000.0, seconds

    def clock(self) -> float:
        return self.now

    def get_file(self, file_id: str) -> dict[str, object]:
        self.now += self.seconds
        return super().get_file(file_id)


def test_a_slow_source_commits_by_time_and_the_first_commit_comes_within_seconds(
        tmp_path: Path) -> None:
    source = SlowSource(corpus(12), seconds=2.0)
    seen: list[tuple[int, int]] = []
    indexer = Indexer(source, HashEmbedder(), tmp_path, clock=source.clock,
                      progress=lambda p: seen.append((p.done, p.committed)),
                      first_commit_seconds=5, commit_seconds=10)
    report = indexer.run_cycle()
    # 2 s a fetch: the first group closes after 3 fetches (6 s >= 5 s), later ones after 5
    committed = sorted({c for _, c in seen})
    assert committed == [0, 3, 8, 12]
    assert report.added == 12 and report.commits == 3
    assert [d for d, _ in seen][:4] == [1, 2, 3, 3]  # a tick per fetch, then the commit


def test_a_first_sync_killed_after_its_first_commit_keeps_it(tmp_path: Path) -> None:
    class Dies(SlowSource):
        def get_file(self, file_id: str) -> dict[str, object]:
            if len(self.detail_calls) == 4:
                raise KeyboardInterrupt  # the process is going away mid-group
            return super().get_file(file_id)

    source = Dies(corpus(12), seconds=2.0)
    with pytest.raises(KeyboardInterrupt):
        Indexer(source, HashEmbedder(), tmp_path, clock=source.clock,
                first_commit_seconds=5).run_cycle()
    snap = open_snapshot(tmp_path / "vector-index")
    assert snap is not None and len(snap.recordings) == 3
    assert SyncStateStore(tmp_path).read().progress == {
        "done": 3, "total": 12, "started": 1000.0, "chunks": snap.live_chunks,
        "committed": 3, "updated": 1006.0}
