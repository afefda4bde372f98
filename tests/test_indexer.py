"""One index cycle against an in-memory source: diffing, reuse, deletions, the lock."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import pytest
from helpers import FakeSource, answers_of, detail

from plaud_index.config import Config
from plaud_index.embedding.embedder import HashEmbedder
from plaud_index.errors import IndexBusyError, SourceError
from plaud_index.index.store import open_snapshot
from plaud_index.setup.status import service_status
from plaud_index.sync.cycles import run_locked_cycle
from plaud_index.sync.indexer import Indexer
from plaud_index.sync.lock import IndexerLock, lock_holder
from plaud_index.sync.progress import SyncProgress
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


def test_a_slow_source_commits_at_the_first_recording_then_by_time(tmp_path: Path) -> None:
    source = SlowSource(corpus(12), seconds=2.0)
    seen: list[SyncProgress] = []
    indexer = Indexer(source, HashEmbedder(), tmp_path, clock=source.clock,
                      progress=seen.append, commit_seconds=10)
    report = indexer.run_cycle()
    # 2 s a fetch: a commit as soon as the first is embedded, then before the next fetch
    # would take the wait past 10 s
    assert sorted({p.committed for p in seen}) == [0, 1, 5, 9, 12]
    assert report.added == 12 and report.commits == 4
    fetching = [p.fetched for p in seen if p.phase == "fetching"]
    assert fetching[:4] == [0, 1, 2, 3]  # a tick per fetch
    assert {p.phase for p in seen} == {"fetching", "embedding", "committing"}


class SlowEmbedder(HashEmbedder):
    """Embedding costs ``seconds`` of the fake clock per chunk (a real model on 2 cores)."""

    def __init__(self, clock: SlowSource, seconds: float) -> None:
        super().__init__()
        self.fake, self.seconds, self.embedded = clock, seconds, 0

    def embed(self, texts):  # type: ignore[no-untyped-def]
        self.fake.now += self.seconds * len(texts)
        self.embedded += len(texts)
        return super().embed(texts)


def long_meetings(n: int, chunks: int) -> list[dict[str, object]]:
    """Recordings of about ``chunks`` chunks each: two long utterances a chunk."""
    return [detail(f"long{i:02d}", name=f"Long meeting {i}", segments=[
        {"start_time": j * 60_000, "end_time": j * 60_000 + 59_000, "speaker": "Ann",
         "content": f"part {i} {j} " + "we talked about the plan in much detail " * 9}
        for j in range(2 * chunks)]) for i in range(n)]


def commit_starts(seen: list[SyncProgress]) -> list[float]:
    """Fake-clock seconds into the cycle at which each commit began."""
    return [q.updated - 1000.0 for p, q in zip(seen, seen[1:], strict=False)
            if q.phase == "committing" and p.phase != "committing"]


def test_a_fast_source_of_long_meetings_commits_by_time_embedding_included(
        tmp_path: Path) -> None:
    source = SlowSource(long_meetings(12, 80), seconds=0.0)  # every recording at once
    embedder = SlowEmbedder(source, seconds=0.05)  # 20 chunks/s: 4 s a meeting
    seen: list[SyncProgress] = []
    report = Indexer(source, embedder, tmp_path, clock=source.clock, progress=seen.append,
                     commit_seconds=30).run_cycle()
    assert report.added == 12 and embedder.embedded == report.chunks_embedded > 900
    commits = commit_starts(seen)
    one_meeting_s = report.chunks_embedded / 12 * 0.05
    assert commits[0] <= one_meeting_s + 0.01  # right after the first meeting is embedded
    gaps = [b - a for a, b in zip(commits, commits[1:], strict=False)]
    assert gaps and max(gaps) <= 30  # a group that would overrun waits for the commit
    assert report.commits == len(commits) >= 3
    embedding = [p for p in seen if p.phase == "embedding"]
    ticks = [b.updated - a.updated for a, b in zip(embedding, embedding[1:], strict=False)]
    assert max(ticks) <= 64 * 0.05 + 0.01  # progress moves every group, not every commit


@pytest.mark.parametrize(("fetch_s", "chunk_s"), [(2.5, 0.05), (0.5, 0.1), (4.0, 0.03)])
def test_commits_stay_within_their_30_s_when_fetching_and_embedding_both_cost(
        tmp_path: Path, fetch_s: float, chunk_s: float) -> None:
    # A slow day on dev: a fetch (and chunking a 2-hour meeting) takes seconds and so does
    # a group. The step before a due commit is a fetch *and* the group it fills; counting
    # only the larger of the two overshot by a group's time (33 s).
    source = SlowSource(long_meetings(16, 80), seconds=fetch_s)
    embedder = SlowEmbedder(source, seconds=chunk_s)
    seen: list[SyncProgress] = []
    report = Indexer(source, embedder, tmp_path, clock=source.clock, progress=seen.append,
                     commit_seconds=30).run_cycle()
    assert report.added == 16
    commits = commit_starts(seen)
    gaps = [b - a for a, b in zip(commits, commits[1:], strict=False)]
    assert len(gaps) >= 3 and max(gaps) <= 30
    assert min(gaps[:-1]) >= 20  # and not so early that commits multiply


def test_one_very_long_recording_is_committed_in_part_then_whole(tmp_path: Path) -> None:
    source = SlowSource(long_meetings(1, 400), seconds=0.0)
    embedder = SlowEmbedder(source, seconds=0.1)  # 40 s of embedding for one recording
    partial_seen: list[int] = []

    def look(progress: SyncProgress) -> None:
        snap = open_snapshot(tmp_path / "vector-index")
        if snap is not None and snap.recordings and snap.recordings[0].partial:
            partial_seen.append(snap.recordings[0].chunk_count)

    report = Indexer(source, embedder, tmp_path, clock=source.clock, progress=look,
                     commit_seconds=30).run_cycle()
    assert partial_seen and 64 <= partial_seen[0] < 400  # searchable after ~10 s
    snap = open_snapshot(tmp_path / "vector-index")
    assert snap is not None and not snap.recordings[0].partial
    assert snap.recordings[0].chunk_count == snap.live_chunks == report.chunks_embedded


def test_a_stop_keeps_a_long_recording_in_part_and_the_next_cycle_embeds_only_the_rest(
        tmp_path: Path) -> None:
    source = SlowSource(long_meetings(1, 300), seconds=0.0)
    embedder = SlowEmbedder(source, seconds=0.01)
    seen: list[SyncProgress] = []  # what the cycle has counted as embedded (kept)
    first = Indexer(source, embedder, tmp_path, clock=source.clock, progress=seen.append,
                    should_stop=lambda: bool(seen) and seen[-1].chunks >= 128).run_cycle()
    assert first.stopped and first.chunks_embedded == 128
    snap = open_snapshot(tmp_path / "vector-index")
    assert snap is not None and snap.recordings[0].partial
    assert snap.recordings[0].chunk_count == 128
    second = Indexer(source, embedder, tmp_path, clock=source.clock).run_cycle()
    whole = open_snapshot(tmp_path / "vector-index")
    assert whole is not None and not whole.recordings[0].partial
    assert second.chunks_reused == 128
    assert second.chunks_embedded + 128 == whole.live_chunks


def test_a_first_sync_killed_after_its_first_commit_keeps_it(tmp_path: Path) -> None:
    class Dies(SlowSource):
        def get_file(self, file_id: str) -> dict[str, object]:
            if len(self.detail_calls) == 4:
                raise KeyboardInterrupt  # the process is going away mid-group
            return super().get_file(file_id)

    source = Dies(corpus(12), seconds=2.0)
    with pytest.raises(KeyboardInterrupt):
        Indexer(source, HashEmbedder(), tmp_path, clock=source.clock).run_cycle()
    snap = open_snapshot(tmp_path / "vector-index")
    assert snap is not None and len(snap.recordings) == 1
    progress = SyncProgress.from_state(SyncStateStore(tmp_path).read().progress)
    assert progress is not None
    assert (progress.done, progress.committed, progress.total) == (1, 1, 12)
    assert progress.fetched == 4 and progress.phase == "fetching"  # saved as it went


def test_an_index_refilled_from_nothing_answers_as_partial_until_the_fill_finishes(
        config: Config) -> None:
    """Deleting the index folder is the documented reset: status says the index is empty
    until a cycle runs, and the refill is a first sync again (answers partial, a stopped
    fill resumed), not "complete" from the success of the index that is gone."""
    from plaud_index.setup.status import build_status

    def flags() -> tuple[str, ...]:
        return build_status(config, SyncStateStore(config.home).read(),
                            open_snapshot(config.index_dir)).health.flags

    source, home = FakeSource(corpus(6)), config.home
    Indexer(source, HashEmbedder(), home).run_cycle()
    assert SyncStateStore(home).read().complete and not flags()
    shutil.rmtree(config.index_dir)
    assert any("the index is empty, though the last sync listed 6" in f for f in flags())
    seen: list[SyncProgress] = []
    stopped = Indexer(source, HashEmbedder(), home, commit_every=2, progress=seen.append,
                      should_stop=lambda: bool(seen) and seen[-1].committed >= 2).run_cycle()
    assert stopped.stopped
    snap = open_snapshot(config.index_dir)
    assert snap is not None and 0 < len(snap.recordings) < 6
    state = SyncStateStore(home).read()
    assert not state.complete and state.last_success is None
    assert any(f.startswith("the first sync stopped") for f in flags()), flags()
    again = Indexer(source, HashEmbedder(), home).run_cycle()
    assert not again.stopped and SyncStateStore(home).read().complete and not flags()
    snap = open_snapshot(config.index_dir)
    assert snap is not None and len(snap.recordings) == 6


def test_listing_rows_without_a_usable_id_are_reported_and_status_prints(
        tmp_path: Path) -> None:
    from plaud_index.config import build_config
    from plaud_index.render.reports import render_status

    source = FakeSource(corpus(2))
    good = [{k: d.get(k) for k in ("id", "name", "created_at", "start_at", "duration")}
            for d in source.details.values()]
    source.listing_override = [*good, {"id": "bad-\ud800", "name": "x"}, {"id": 7}]
    report = Indexer(source, HashEmbedder(), tmp_path).run_cycle()
    assert report.added == 2
    skipped = SyncStateStore(tmp_path).read().skipped
    assert set(skipped) == {"listing row 3", "listing row 4"}
    config = build_config({"PLAUD_INDEX_HOME": str(tmp_path)}, None)
    text = render_status(service_status(answers_of(config, HashEmbedder()).index), config.zone)
    text.encode("utf-8")  # no lone surrogate reaches the terminal
    assert "Skipped:      2 recording(s): listing row 3, listing row 4" in text


def test_a_padded_id_is_indexed_under_its_normal_form_cycle_after_cycle(tmp_path: Path) -> None:
    # "  bad-pad  " in the listing and the detail once stopped every other cycle with a
    # KeyError and deleted the recording in between.
    details = [*corpus(3), detail("  bad-pad  ", name="Padded")]
    for _ in range(2):
        report = Indexer(FakeSource(details), HashEmbedder(), tmp_path).run_cycle()
        snap = open_snapshot(tmp_path / "vector-index")
        assert snap is not None
        assert sorted(r.file_id for r in snap.recordings) == \
            sorted(["bad-pad", *(str(d["id"]) for d in corpus(3))])
        assert not report.deleted


@pytest.mark.parametrize("broken", ["indexer.lock", "sync-state.lock", "sync-state.json"])
def test_a_cycle_failing_on_its_lock_or_state_file_is_on_record_and_status_says_so(
        config: Config, broken: str) -> None:
    from plaud_index.errors import PlaudIndexError
    from plaud_index.setup.status import build_status
    from plaud_index.sync.state import SyncStateStore

    def status_flags() -> tuple[str, ...]:
        status = build_status(config, SyncStateStore(config.home).read(),
                              open_snapshot(config.index_dir))
        return status.health.flags

    assert run_locked_cycle(config, HashEmbedder(), FakeSource(corpus(2))).added == 2
    path = config.home / broken
    path.unlink(missing_ok=True)
    path.mkdir()  # a folder in its place: every write of it fails
    with pytest.raises((PlaudIndexError, OSError)):
        run_locked_cycle(config, HashEmbedder(), FakeSource(corpus(3)))
    flags = status_flags()
    assert any("the last sync failed" in f for f in flags), flags
    assert any(broken in f and "move it away" in f for f in flags), flags  # what to do
    assert not any("never synced" in f for f in flags), flags
    path.rmdir()
    assert run_locked_cycle(config, HashEmbedder(), FakeSource(corpus(3))).added == 1
    assert not any("failed" in f for f in status_flags())


def test_status_never_says_never_synced_beside_indexed_recordings(config: Config) -> None:
    from plaud_index.setup.status import build_status
    from plaud_index.sync.state import SyncState

    run_locked_cycle(config, HashEmbedder(), FakeSource(corpus(2)))
    status = build_status(config, SyncState(), open_snapshot(config.index_dir))  # state lost
    assert not any("never synced" in f for f in status.health.flags)
    assert any("holds 2 recording(s)" in f for f in status.health.flags)
