"""One set of figures, one installation: progress, index counts and last-sync times agree in
every answer, status and doctor; a client's config carries the user's settings; the mirror
pass tells the truth about a running cycle."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import REPO, answers_of, run_cli

from plaud_index.config import Config
from plaud_index.embedding.embedder import HashEmbedder
from plaud_index.errors import IndexBusyError
from plaud_index.search.rank import make_request
from plaud_index.setup.client_config import entry_env
from plaud_index.setup.doctor import check_clients
from plaud_index.setup.status import service_status
from plaud_index.sync.cycles import run_locked_cycle, run_mirror_pass
from plaud_index.sync.lock import IndexerLock
from plaud_index.sync.progress import SyncProgress
from plaud_index.sync.state import SyncStateStore


@pytest.fixture
def half_synced(config: Config) -> Config:
    """An index whose first sync is still under way: the 13 recordings of the sample
    committed, 15 of 20 done (two fetched since the last commit)."""
    run_locked_cycle(config, HashEmbedder())
    store = SyncStateStore(config.home)
    store.update(last_success=None, progress=SyncProgress(
        done=15, total=20, started=1.0, committed=13, updated=2.0).to_state())
    return config


def test_an_answer_status_and_doctor_say_the_same_of_a_first_sync(
        half_synced: Config, capsys: pytest.CaptureFixture[str]) -> None:
    lock = IndexerLock(half_synced.lock_path, role="first sync (server)")
    assert lock.try_acquire()
    try:
        service = answers_of(half_synced, HashEmbedder())
        answer = service.search.search(make_request("budget"))
        status = service_status(service.index)
        code, text = run_cli(capsys, "search", "budget")
        _, doctor = run_cli(capsys, "doctor")
        _, status_text = run_cli(capsys, "status")
    finally:
        lock.release()
    recordings = status.recordings
    assert answer.index.recordings == recordings == 13
    assert answer.index.progress == "fetching, 15 of 20 recordings done, 13 searchable"
    assert answer.index.last_sync is None and status.last_success is None  # never, both
    assert answer.index.last_commit is not None
    assert f"(index: {recordings} recordings, no sync finished yet, last commit" in text
    assert "Last sync:    never" in status_text
    assert "the first sync (server) runs now" in doctor
    assert "refreshed only when you run" not in doctor


def test_a_stopped_first_sync_fails_doctor_and_status_gives_both_figures(
        half_synced: Config, capsys: pytest.CaptureFixture[str]) -> None:
    """Nobody holds the lock: the first sync stopped at 15 of 20 with 13 searchable.
    doctor said "All checks passed" (exit 0), status "Recordings: 13" beside "15 of 20"."""
    code, doctor = run_cli(capsys, "doctor")
    _, status_text = run_cli(capsys, "status")
    assert code == 1 and "All checks passed" not in doctor
    assert "the first sync stopped" in doctor
    assert "at 15 of 20 recordings done, 13 searchable" in status_text


def test_counts_are_said_in_the_right_number(config: Config) -> None:
    from plaud_index.render.answers import index_line
    from plaud_index.results import IndexInfo

    assert index_line(IndexInfo(1, 3, "2026-12-06T03:00:00+00:00", None)) == \
        "index: 1 recording, last sync 2026-12-06T03:00:00+00:00"
    progress = SyncProgress(done=1, total=1, started=0.0, updated=1.0)
    assert progress.describe(2.0) == "fetching, 1 of 1 recording done"


def test_the_client_config_carries_the_users_settings(tmp_path: Path) -> None:
    shell = {k: v for k, v in os.environ.items() if k != "PLAUD_INDEX_HOME"}
    env = {**shell, "HOME": str(tmp_path), "PLAUD_INDEX_MIRROR": str(tmp_path / "m"),
           "PLAUD_INDEX_FOLDERS": str(tmp_path / "meetings"), "PLAUD_API_TOKEN": "secret-tok"}
    printed = subprocess.run([sys.executable, "-m", "plaud_index", "config", "claude-desktop"],
                             capture_output=True, text=True, cwd=REPO, timeout=60, env=env)
    assert printed.returncode == 0, printed.stderr
    server = json.loads(printed.stdout)["mcpServers"]["plaud-index"]
    assert server["env"] == {"PLAUD_INDEX_MIRROR": str(tmp_path / "m"),
                             "PLAUD_INDEX_FOLDERS": str(tmp_path / "meetings")}
    assert "secret-tok" not in printed.stdout + printed.stderr  # never a token
    assert "carries your settings: PLAUD_INDEX_FOLDERS, PLAUD_INDEX_MIRROR" in printed.stderr
    installed = subprocess.run([sys.executable, "-m", "plaud_index", "config", "cursor",
                                "--install"], capture_output=True, text=True, cwd=REPO,
                               timeout=120, env=env)
    assert installed.returncode == 0, installed.stderr
    assert "with the entry's settings" in installed.stdout
    path = tmp_path / ".cursor" / "mcp.json"
    assert entry_env("cursor", path) == server["env"]
    same = check_clients({"HOME": str(tmp_path), **{k: v for k, v in env.items()
                                                    if k.startswith("PLAUD_INDEX")}},
                         home=tmp_path)
    assert same.status == "ok", same
    moved = check_clients({"PLAUD_INDEX_MIRROR": str(tmp_path / "elsewhere")}, home=tmp_path)
    assert moved.status == "warn" and "cursor (PLAUD_INDEX_FOLDERS, PLAUD_INDEX_MIRROR)" in \
        moved.detail


def test_the_mirror_pass_waits_for_a_cycle_that_does_not_write_it(
        config: Config, tmp_path: Path) -> None:
    from dataclasses import replace

    mirrored = replace(config, mirror=tmp_path / "mirror")
    other = IndexerLock(config.lock_path, role="first sync (server)")  # no mirror setting
    assert other.try_acquire()
    waited: list[float] = []

    def wait(seconds: float) -> None:  # the cycle ends while the pass waits for it
        waited.append(seconds)
        other.release()

    report = run_mirror_pass(mirrored, wait=wait)
    assert waited and report.written == report.listed > 0
    writer = IndexerLock(config.lock_path, mirror=str(tmp_path / "mirror"))
    assert writer.try_acquire()
    try:
        with pytest.raises(IndexBusyError, match="writes this mirror too"):
            run_mirror_pass(mirrored, wait=wait)
    finally:
        writer.release()
