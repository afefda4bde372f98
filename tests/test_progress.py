"""Sync progress: the numbers, the live terminal line, plain log lines elsewhere."""

from __future__ import annotations

import io
import os
import pty
import subprocess
import sys
from pathlib import Path

from helpers import SAMPLE_RECORDINGS

from plaud_index.sync.progress import LogLines, ProgressLine, SyncProgress, about, reporter_for

REPO = Path(__file__).resolve().parent.parent


def test_progress_estimates_what_is_left_from_the_rate_so_far() -> None:
    progress = SyncProgress(done=10, total=70, started=1000.0)
    assert progress.rate(1100.0) == 0.1
    assert progress.eta_s(1100.0) == 600.0
    assert progress.describe(1100.0) == "10 of 70 recordings, about 10 minutes left"
    assert SyncProgress(0, 70, 1000.0).describe(1100.0) == "0 of 70 recordings"
    assert SyncProgress(70, 70, 1000.0).describe(1100.0) == "70 of 70 recordings"


def test_durations_read_as_a_person_says_them() -> None:
    assert [about(s) for s in (3, 42, 150, 5400, 9000)] == [
        "about 5 seconds", "about 40 seconds", "about 2 minutes", "about 1.5 hours",
        "about 2.5 hours"]


def test_stored_progress_round_trips_and_junk_is_ignored() -> None:
    progress = SyncProgress(done=3, total=9, started=5.0, chunks=40, committed=3, updated=9.0)
    assert SyncProgress.from_state(progress.to_state()) == progress
    assert SyncProgress.from_state({"done": 25, "total": 300}) == SyncProgress(25, 300, 0.0,
                                                                               committed=25)
    assert SyncProgress.from_state({"done": "x"}) is None
    assert SyncProgress.from_state(None) is None


def test_the_terminal_line_is_redrawn_in_place_and_ended_once() -> None:
    stream = io.StringIO()
    line = ProgressLine(stream)
    line(SyncProgress(done=1, total=4, started=1000.0, chunks=12, updated=1005.0))
    line(SyncProgress(done=2, total=4, started=1000.0, chunks=30, updated=1010.0))
    line.finish()
    line.finish()
    out = stream.getvalue()
    assert out.count("\r") == 2 and out.endswith("\n") and out.count("\n") == 1
    assert "Indexing: recordings 2/4 · 30 chunks · 0.2/s · about 10 seconds left" in out


def test_a_terminal_gets_the_line_and_anything_else_log_lines() -> None:
    assert isinstance(reporter_for(io.StringIO()), LogLines)
    main, child = pty.openpty()
    with os.fdopen(child, "w") as tty:
        assert isinstance(reporter_for(tty), ProgressLine)
    os.close(main)


def _read_all(fd: int) -> str:
    chunks = []
    while True:
        try:
            data = os.read(fd, 65536)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    return b"".join(chunks).decode()


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
    assert f"\rIndexing: recordings {SAMPLE_RECORDINGS}/{SAMPLE_RECORDINGS}" in out
    after_line = out.split("\rIndexing")[-1]
    assert "\n" in after_line.split("Cycle done")[0]  # the log line starts on a new line


def test_indexer_once_into_a_pipe_writes_plain_lines(tmp_path: Path) -> None:
    env = {**os.environ, "PLAUD_INDEX_HOME": str(tmp_path), "PLAUD_CLIENT": "mock",
           "PLAUD_EMBEDDER": "mock"}
    run = subprocess.run([sys.executable, "-m", "plaud_index", "indexer", "--once"],
                         capture_output=True, text=True, cwd=REPO, env=env, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "\r" not in run.stderr
    assert f"Indexed {SAMPLE_RECORDINGS} of {SAMPLE_RECORDINGS} recordings" in run.stderr
