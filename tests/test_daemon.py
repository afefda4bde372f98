"""The always-on indexer against the fake Plaud: resume after kill -9, changes, outages,
the steady-state cost, SIGTERM, and what status says."""

from __future__ import annotations

import json
import math
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fake_plaud import FakePlaud, Rule
from helpers import SAMPLE_RECORDINGS, answers_of

from plaud_index.config import build_config
from plaud_index.embedding.embedder import HashEmbedder
from plaud_index.errors import PlaudAuthError, PlaudTransientError
from plaud_index.index.store import open_snapshot
from plaud_index.index.trust import VERIFIED
from plaud_index.plaud import PlaudSource
from plaud_index.plaud.api import PlaudClient
from plaud_index.plaud.refresh import TokenManager
from plaud_index.plaud.settings import plaud_settings
from plaud_index.plaud.tokens import default_store
from plaud_index.plaud.transport import Transport
from plaud_index.reports import SyncReport
from plaud_index.search.rank import make_request
from plaud_index.sync.indexer import Indexer
from plaud_index.sync.state import SyncStateStore

REPO = Path(__file__).resolve().parent.parent


def cycle(home: Path, embedder: HashEmbedder | None = None) -> SyncReport:
    settings = plaud_settings(os.environ)
    transport = Transport(sleep=lambda s: None, timeout=3)
    manager = TokenManager(default_store(home), settings, transport, home / "refresh.lock")
    client = PlaudClient(settings, manager, transport, detail_interval=0)
    return Indexer(PlaudSource(client), embedder or HashEmbedder(), home).run_cycle()


def titles(home: Path) -> set[str]:
    snap = open_snapshot(home / "vector-index")
    return {r.title for r in snap.recordings} if snap else set()


def test_first_sync_killed_mid_way_resumes_without_re_embedding(
        fake: FakePlaud, plaud_env: dict[str, str], index_home: Path) -> None:
    fake.seed(300)
    env = {**os.environ, **plaud_env, "PLAUD_EMBEDDER": "mock",
           "PLAUD_DETAIL_INTERVAL_MS": "15"}
    child = subprocess.Popen([sys.executable, "-m", "plaud_index", "indexer", "--once"],
                             cwd=REPO, env=env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while (SyncStateStore(index_home).read().progress or {}).get("committed", 0) < 75:
        assert time.monotonic() < deadline and child.poll() is None
        time.sleep(0.05)
    child.kill()
    child.wait()
    snap = open_snapshot(index_home / "vector-index")
    assert snap is not None
    committed = len(snap.recordings)
    assert 75 <= committed < 300
    resumed = subprocess.run([sys.executable, "-m", "plaud_index", "indexer", "--once"],
                             cwd=REPO, env={**env, "PLAUD_DETAIL_INTERVAL_MS": "0"},
                             capture_output=True, text=True, timeout=300)
    report = json.loads(resumed.stderr.split("Cycle done: ", 1)[1].splitlines()[0])
    assert report["added"] == 300 - committed and report["updated"] == 0
    assert report["chunks_embedded"] == 2 * (300 - committed)  # committed ones: none again
    assert len(titles(index_home)) == 300


def test_cycles_follow_new_edited_and_deleted_recordings(
        fake: FakePlaud, plaud_env: dict[str, str], index_home: Path) -> None:
    fake.seed(20)
    recent = fake.add_file(500, name="Yesterday's standup", created_epoch=time.time() - 86400)
    cycle(index_home)
    fake.add_file(501, name="Brand new recording", topic="quarterly hiring plan",
                  created_epoch=time.time() - 60)
    report = cycle(index_home)
    assert report.added == 1 and "Brand new recording" in titles(index_home)
    service = answers_of(build_config({"PLAUD_INDEX_HOME": str(index_home),
                                          "PLAUD_EMBEDDER": "mock"}, None))
    hit = service.search.search(make_request("quarterly hiring plan")).results[0]
    assert hit.title == "Brand new recording"
    fake.update_note(recent["id"], "## Summary\nThe standup moved to Tuesdays.")
    edited = cycle(index_home)
    assert edited.updated == 1 and edited.chunks_embedded == 1  # only the note's chunk
    fake.delete_file(recent["id"])
    assert cycle(index_home).deleted == 1
    assert "Yesterday's standup" not in titles(index_home)


def test_an_empty_listing_deletes_nothing(fake: FakePlaud, plaud_env: dict[str, str],
                                          index_home: Path) -> None:
    fake.seed(10)
    cycle(index_home)
    fake.files.clear()
    for _ in range(3):
        assert cycle(index_home).deleted == 0
    assert len(titles(index_home)) == 10


def test_dead_refresh_token_keeps_the_index_and_status_says_auth_expired(
        fake: FakePlaud, plaud_env: dict[str, str], index_home: Path) -> None:
    fake.seed(10)
    cycle(index_home)
    fake.config.refresh_mode = "reject"
    token = default_store(index_home).load()
    assert token is not None
    fake.access[token.access_token]["revoked"] = True
    with pytest.raises(PlaudAuthError):
        cycle(index_home)
    assert len(titles(index_home)) == 10
    status = json.loads(subprocess.run(
        [sys.executable, "-m", "plaud_index", "status", "--json"], cwd=REPO, timeout=60,
        capture_output=True, text=True, env={**os.environ, **plaud_env}).stdout)
    assert "sign-in: Plaud auth expired — run `plaud-index-mcp login`" in status["health"]["flags"]
    assert status["recordings"] == 10


def test_network_down_for_several_cycles_then_back(
        fake: FakePlaud, plaud_env: dict[str, str], index_home: Path) -> None:
    fake.seed(10)
    cycle(index_home)
    outage = Rule(path=".", action="drop", times=None)
    fake.faults.append(outage)
    for _ in range(3):
        with pytest.raises(PlaudTransientError):
            cycle(index_home)
        assert len(titles(index_home)) == 10
    assert SyncStateStore(index_home).read().last_error_kind == "PlaudTransientError"
    fake.faults.remove(outage)
    fake.add_file(600, name="After the outage", created_epoch=time.time())
    assert cycle(index_home).added == 1
    assert SyncStateStore(index_home).read().last_error is None


def test_steady_state_cycle_costs_only_the_list_and_the_revalidation_budget(
        fake: FakePlaud, plaud_env: dict[str, str], index_home: Path) -> None:
    fake.seed(1000, link_every=1000)
    cycle(index_home)
    index = index_home / "vector-index"
    def index_files() -> dict[str, int]:  # the scrub's bookkeeping moves every cycle
        return {p.name: p.stat().st_mtime_ns for p in index.iterdir() if p.name != VERIFIED}

    before = index_files()
    state_before = (index_home / "sync-state.json").stat().st_mtime_ns
    fake.log.clear()
    report = cycle(index_home)
    lists = [r for r in fake.log if r["path"].endswith("/files/")]
    details = [r for r in fake.log if "/files/" in r["path"] and not r["path"].endswith("/")]
    assert len(lists) == math.ceil(1000 / 100)
    assert len(details) == math.ceil(1000 * 300 / 86400)  # the rolling re-check budget: 4
    assert report.chunks_embedded == 0 and report.commits == 0
    assert index_files() == before
    assert (index_home / "sync-state.json").stat().st_mtime_ns != state_before


def test_daemon_stops_cleanly_on_sigterm(index_home: Path) -> None:
    env = {**os.environ, "PLAUD_CLIENT": "mock", "PLAUD_EMBEDDER": "mock"}
    daemon = subprocess.Popen([sys.executable, "-m", "plaud_index", "indexer"], cwd=REPO,
                              env=env, stderr=subprocess.PIPE, text=True)
    assert daemon.stderr is not None
    lines: list[str] = []
    while not any("Cycle done" in line for line in lines):
        line = daemon.stderr.readline()
        assert line, "".join(lines)
        lines.append(line)
    state = SyncStateStore(index_home).read()
    assert state.daemon is not None and state.daemon["pid"] == daemon.pid
    daemon.send_signal(signal.SIGTERM)
    assert daemon.wait(timeout=10) == 0
    assert "Indexer stopped" in daemon.stderr.read()
    assert (SyncStateStore(index_home).read().daemon or {"pid": 0})["pid"] is None
    assert len(titles(index_home)) == SAMPLE_RECORDINGS


# A bug in a listing, injected into the daemon process: while the flag file exists, the
# mock source's listing raises an exception that is none of ours.
FLAKY_DAEMON = """
import sys
from pathlib import Path
import plaud_index.plaud.mock as mock
flag, real = Path(sys.argv[1]), mock.MockClient.list_files
def flaky(self, tail_hint=None):
    if flag.exists():
        raise ValueError("a bug in the listing")
    return real(self, tail_hint)
mock.MockClient.list_files = flaky
from plaud_index.cli import main
sys.exit(main(["indexer"]))
"""


def test_the_daemon_survives_a_cycle_that_crashes_and_recovers(
        index_home: Path, tmp_path: Path) -> None:
    """A listing that raises an unexpected exception (not one of ours) must not end the
    daemon: it logs, records it, waits one interval, and the next cycle runs."""
    flag = tmp_path / "broken"
    flag.touch()
    env = {**os.environ, "PLAUD_CLIENT": "mock", "PLAUD_EMBEDDER": "mock",
           "PLAUD_INDEX_INTERVAL": "30s"}
    daemon = subprocess.Popen([sys.executable, "-c", FLAKY_DAEMON, str(flag)], cwd=REPO,
                              env=env, stderr=subprocess.PIPE, text=True)
    assert daemon.stderr is not None
    lines: list[str] = []

    def read_until(marker: str, within_s: float = 120) -> None:
        deadline = time.monotonic() + within_s
        while not any(marker in line for line in lines):
            ready, _, _ = select.select([daemon.stderr], [], [],
                                        max(0.0, deadline - time.monotonic()))
            assert ready, f"no {marker!r} within {within_s:.0f} s: " + "".join(lines)
            line = daemon.stderr.readline()  # type: ignore[union-attr]
            assert line, "".join(lines)
            lines.append(line)

    try:
        read_until("failed unexpectedly")
        state = SyncStateStore(index_home).read()
        assert state.last_error_kind == "ValueError" and state.last_success is None
        flag.unlink()  # fixed upstream
        read_until("Cycle done")
        assert daemon.poll() is None  # still running
        state = SyncStateStore(index_home).read()
        assert state.last_error is None
        assert len(titles(index_home)) == SAMPLE_RECORDINGS
    finally:
        daemon.send_signal(signal.SIGTERM)
        assert daemon.wait(timeout=30) == 0
