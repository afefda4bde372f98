"""Sync progress: the numbers, the live terminal line, plain log lines elsewhere."""

from __future__ import annotations

import io
import logging
import os
import pty
import re
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest
from helpers import SAMPLE_RECORDINGS, cpu_hogs, dev_meetings, write_corpus

from plaud_index.sync.progress import LogLines, SyncProgress, about
from plaud_index.sync.terminal import LineSafeHandler, ProgressLine, reporter_for

REPO = Path(__file__).resolve().parent.parent


RUNNING = SyncProgress(done=10, total=70, started=1054.0, chunks=800, updated=1100.0,
                       phase="embedding", fetched=12, chunks_seen=960, fetch_s=6.0,
                       embed_s=40.0)


def test_time_left_is_the_cost_so_far_applied_to_what_is_left() -> None:
    # 58 unfetched × 0.5 s + (160 queued + 58 × 80 to come) chunks × 0.05 s = 269 s
    assert RUNNING.eta_s() == pytest.approx(269.0)
    assert RUNNING.chunk_rate() == 20.0
    assert RUNNING.describe(1100.0) == ("embedding, 10 of 70 recordings done, 800 chunks "
                                        "embedded, about 4 minutes left")
    assert RUNNING.describe(1160.0).endswith("about 3 minutes left")  # counts down
    assert RUNNING.describe(5000.0).endswith("about 5 seconds left")  # never below
    # listed durations, where known, size what is to come: 4 of 10 listed hours fetched
    by_duration = replace(RUNNING, fetched_ms=4 * 3_600_000, total_ms=10 * 3_600_000)
    assert by_duration.eta_s() == pytest.approx(29 + (160 + 1.5 * 960) * 0.05)
    # when the timers saw only half the wall time (commits, merges), the rest is slower too
    assert replace(RUNNING, started=1008.0).eta_s() == pytest.approx(2 * 269.0)


def test_no_estimate_before_a_rate_is_known_and_none_while_listing() -> None:
    assert SyncProgress(0, 0, 1000.0, phase="listing").describe(1001.0) == \
        "listing the recordings"
    fetched_only = SyncProgress(0, 70, 1000.0, phase="fetching", fetched=1, chunks_seen=80,
                                fetch_s=0.1, updated=1000.1)
    assert fetched_only.eta_s() is None
    assert fetched_only.describe(1001.0) == "fetching, 0 of 70 recordings done"
    nothing_to_embed = SyncProgress(10, 70, 1000.0, fetched=10, fetch_s=10.0)
    assert nothing_to_embed.eta_s() == 60.0  # a quiet re-check: fetching is all the cost
    assert SyncProgress(70, 70, 1000.0, fetched=70, fetch_s=1).describe(1100.0) == \
        "fetching, 70 of 70 recordings done"


def test_a_stopped_sync_says_since_when_and_its_time_left_does_not_grow() -> None:
    assert RUNNING.describe_stopped(1700.0) == ("stopped 10 minutes ago at 10 of 70 "
                                                "recordings done (about 4 minutes of work left)")
    assert RUNNING.describe_stopped(1100.0 + 86400 * 3).endswith(
        "ago at 10 of 70 recordings done (about 4 minutes of work left)")


def test_a_stopped_sync_says_how_many_recordings_answer_when_that_differs() -> None:
    """status said "Recordings: 27" beside "stopped … at 25 of 73 recordings"."""
    assert RUNNING.describe_stopped(1700.0, searchable=12).startswith(
        "stopped 10 minutes ago at 10 of 70 recordings done, 12 searchable (")
    assert ", searchable" not in RUNNING.describe_stopped(1700.0, searchable=10)


def test_a_running_sync_says_a_recording_is_searchable_before_it_is_done() -> None:
    """Issue 52: "0 of 30 recordings done" while the first commit, inside a long
    recording, had made it searchable already."""
    first = SyncProgress(done=0, total=30, started=1000.0, chunks=40, committed=0,
                         updated=1010.0, phase="embedding", fetched=1, chunks_seen=80,
                         fetch_s=1.0, embed_s=8.0)
    assert first.describe(1010.0, searchable=1).startswith(
        "embedding, 0 of 30 recordings done, 1 searchable, 40 chunks embedded")
    assert ", searchable" not in first.describe(1010.0, searchable=0)


def test_durations_read_as_a_person_says_them() -> None:
    assert [about(s) for s in (3, 42, 150, 5400, 9000)] == [
        "about 5 seconds", "about 40 seconds", "about 2 minutes", "about 1.5 hours",
        "about 2.5 hours"]


def test_stored_progress_round_trips_and_junk_is_ignored() -> None:
    assert SyncProgress.from_state(RUNNING.to_state()) == RUNNING
    assert SyncProgress.from_state({**RUNNING.to_state(), "phase": "dancing"}) == \
        SyncProgress(**{**RUNNING.to_state(), "phase": "fetching"})
    assert SyncProgress.from_state({**RUNNING.to_state(), "embed_s": "x"}) is None
    assert SyncProgress.from_state({"done": 25, "total": 300}) == SyncProgress(25, 300, 0.0,
                                                                               committed=25)
    assert SyncProgress.from_state({"done": "x"}) is None
    assert SyncProgress.from_state(None) is None


def test_the_terminal_line_is_redrawn_in_place_and_ends_saying_where_it_stopped() -> None:
    stream = io.StringIO()
    line = ProgressLine(stream, clock=lambda: 1065.0, tick_s=0)
    line(SyncProgress(0, 0, 1000.0, phase="listing", updated=1000.0))
    line(RUNNING)
    line.finish()
    line.finish()
    out = stream.getvalue()
    assert out.count("\r") == 3 and out.endswith("\n") and out.count("\n") == 1
    assert "\rIndexing: listing the recordings · 1m05s" in out
    assert ("Indexing: embedding · recordings 10/70 · 800 chunks · 20.0 chunks/s · about 4 "
            "minutes left · 11s") in out  # RUNNING started 11 s before the clock
    assert "\rIndexing: stopped · recordings 10/70" in out  # not "embedding" once it ended


def test_a_finished_line_says_done() -> None:
    stream = io.StringIO()
    line = ProgressLine(stream, clock=lambda: 1010.0, tick_s=0)
    line(replace(RUNNING, done=70, committed=70))
    line.finish()
    assert "\rIndexing: done · recordings 70/70" in stream.getvalue()


def test_the_line_moves_with_the_clock_while_the_work_stands_still() -> None:
    stream = io.StringIO()
    now = [1000.0]
    line = ProgressLine(stream, clock=lambda: now[0], tick_s=0.01)
    line(RUNNING)
    for _ in range(500):  # until the ticker has redrawn with a later time
        now[0] += 1
        if "· 1m" in stream.getvalue():
            break
        time.sleep(0.01)
    line.finish()
    assert "· 1m" in stream.getvalue()


def test_a_log_record_starts_on_its_own_line_and_the_live_line_comes_back() -> None:
    stream = io.StringIO()
    handler = LineSafeHandler(stream)
    logger = logging.getLogger("test.progress.above")
    logger.addHandler(handler)
    logger.propagate = False
    line = ProgressLine(stream, clock=lambda: 1000.0, tick_s=0)
    try:
        line(RUNNING)
        logger.warning("Merged 10 segments")
        line.finish()
    finally:
        logger.removeHandler(handler)
    out = stream.getvalue()
    before, after = out.split("Merged 10 segments\n")
    assert before.endswith("\r")  # the live line was blanked first: nothing glued to it
    assert after.startswith("\rIndexing: embedding")  # and drawn again below the record


def test_plain_lines_come_once_per_commit(caplog: pytest.LogCaptureFixture) -> None:
    lines = LogLines()
    with caplog.at_level(logging.INFO, logger="plaud_index.sync.progress"):
        for committed in (0, 0, 3, 3, 5):
            lines(replace(RUNNING, committed=committed))
    assert [r.getMessage()[:24] for r in caplog.records] == ["Committed 10 of 70 recor"] * 2


def test_a_terminal_gets_the_line_and_anything_else_log_lines() -> None:
    assert isinstance(reporter_for(io.StringIO()), LogLines)
    main, child = pty.openpty()
    with os.fdopen(child, "w") as tty:
        assert isinstance(reporter_for(tty), ProgressLine)
    os.close(main)


def _read_all(fd: int) -> str:
    return b"".join(data for _, data in _read_timed(fd)).decode()


def test_indexer_once_on_a_terminal_shows_a_live_line(tmp_path: Path) -> None:
    main, child = pty.openpty()
    env = {**os.environ, "PLAUD_INDEX_HOME": str(tmp_path), "PLAUD_CLIENT": "mock",
           "PLAUD_EMBEDDER": "mock"}
    proc = subprocess.Popen([sys.executable, "-m", "plaud_index", "indexer", "--once"],
                            stderr=child, stdout=subprocess.DEVNULL, cwd=REPO, env=env)
    os.close(child)
    out = _read_all(main)
    assert proc.wait(timeout=120) == 0
    os.close(main)
    assert re.search(rf"\rIndexing: \w+ · recordings {SAMPLE_RECORDINGS}/{SAMPLE_RECORDINGS}",
                     out)
    after_line = out.split("\rIndexing")[-1]
    assert "\n" in after_line.split("Cycle done")[0]  # the log line starts on a new line


def test_indexer_once_into_a_pipe_writes_plain_lines(tmp_path: Path) -> None:
    env = {**os.environ, "PLAUD_INDEX_HOME": str(tmp_path), "PLAUD_CLIENT": "mock",
           "PLAUD_EMBEDDER": "mock"}
    run = subprocess.run([sys.executable, "-m", "plaud_index", "indexer", "--once"],
                         capture_output=True, text=True, cwd=REPO, env=env, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "\r" not in run.stderr
    assert f"Committed {SAMPLE_RECORDINGS} of {SAMPLE_RECORDINGS} recordings" in run.stderr


LOG_RECORD = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} (DEBUG|INFO|WARNING|ERROR) ")


def _read_timed(fd: int) -> list[tuple[float, bytes]]:
    """Everything a child writes to its terminal, each read with the time it arrived."""
    reads = []
    while True:
        try:
            data = os.read(fd, 65536)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        reads.append((time.monotonic(), data))
    return reads


def _line_changes(reads: list[tuple[float, bytes]]) -> list[float]:
    """When the live line a person sees changed: the times of reads that drew a new text."""
    changes, shown, pending = [], "", b""
    for at, data in reads:
        pending += data
        frames = pending.split(b"\r")
        pending = frames.pop()  # a frame is complete once the next one starts
        for frame in (f.decode().rstrip() for f in frames):
            if frame.startswith("Indexing:") and frame != shown:
                shown = frame
                changes.append(at)
    return changes


def test_the_live_line_moves_every_few_seconds_on_a_loaded_machine_with_logs_above_it(
        tmp_path: Path) -> None:
    """A real-length meeting, the real model, two busy processes beside it (load 4 on two
    cores with the model's threads, as in the trial; the suite adds its own): the line
    changes at least every 2.5 s, no log record is glued to it, and it ends saying done."""
    corpus = write_corpus(tmp_path / "meetings.jsonl", dev_meetings(1))
    env = {**os.environ, "PLAUD_INDEX_HOME": str(tmp_path / "home"), "PLAUD_CLIENT": "mock",
           "PLAUD_MOCK_CORPUS": str(corpus)}
    main, child = pty.openpty()
    with cpu_hogs(2):
        proc = subprocess.Popen([sys.executable, "-m", "plaud_index", "indexer", "--once", "-v"],
                                stderr=child, stdout=subprocess.DEVNULL, cwd=REPO, env=env)
        os.close(child)
        reads = _read_timed(main)
        assert proc.wait(timeout=600) == 0
    os.close(main)
    out = b"".join(data for _, data in reads).decode()
    changes = _line_changes(reads)
    gaps = [b - a for a, b in zip(changes, changes[1:], strict=False)]
    assert len(changes) > 10 and max(gaps) <= 2.5, (len(changes), sorted(gaps)[-5:])
    records = [m.start() for m in LOG_RECORD.finditer(out)]
    assert records, "-v logs the cycle's steps"
    glued = [out[max(i - 60, 0):i + 40] for i in records if i and out[i - 1] not in "\r\n"]
    assert not glued, glued
    final = out.rsplit("\rIndexing:", 1)[-1]
    assert final.startswith(" done · recordings 1/1"), final[:80]
