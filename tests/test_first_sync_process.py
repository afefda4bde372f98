"""The sync in a process of its own, where the user's world touches it: its log (a link, a
FIFO, a folder, a read-only file or home), many servers asking at once, a question right
after it finished, a full disk that empties again, an id asked for before it is indexed."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from conftest import fill_disk
from helpers import REPO, answers_of, write_corpus

from plaud_index.config import Config, build_config
from plaud_index.embedding.embedder import HashEmbedder
from plaud_index.errors import IndexNotReadyError, UnknownRecordingError
from plaud_index.home import Home
from plaud_index.search.browse import ListRequest
from plaud_index.search.rank import make_request
from plaud_index.sync.cycles import run_locked_cycle
from plaud_index.sync.detached import DetachedSync, sync_log_problem
from plaud_index.sync.lock import lock_holder
from plaud_index.sync.state import SyncState, SyncStateStore

MEETINGS = [{"id": f"m{k}", "name": f"Meeting {k}", "created_at": f"2026-11-0{k + 1}T10:00:00Z",
             "duration": 60, "note": f"## Summary\nThe budget for site {k}.",
             "transcript": [{"speaker": "Ann", "start": 0, "end": 5,
                             "text": f"We talked about the warehouse budget {k}."}]}
            for k in range(4)]


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    return write_corpus(tmp_path / "corpus.jsonl", MEETINGS)


def child_env(home: Path, corpus: Path) -> dict[str, str]:
    return {**os.environ, "PLAUD_INDEX_HOME": str(home), "PLAUD_CLIENT": "mock",
            "PLAUD_MOCK_CORPUS": str(corpus), "PLAUD_EMBEDDER": "mock"}


def spawner(home: Path, corpus: Path, started: list[subprocess.Popen[bytes]],
            prefix: tuple[str, ...] = ()) -> Callable[..., subprocess.Popen[bytes]]:
    """``subprocess.Popen`` for the real child, with the test's environment."""
    def popen(args: list[str], **kwargs: Any) -> subprocess.Popen[bytes]:
        started.append(subprocess.Popen([*prefix, *args], cwd=REPO,
                                        env=child_env(home, corpus), **kwargs))
        return started[-1]
    return popen


def mock_config(home: Path, corpus: Path) -> Config:
    return build_config({"PLAUD_INDEX_HOME": str(home), "PLAUD_CLIENT": "mock",
                         "PLAUD_MOCK_CORPUS": str(corpus), "PLAUD_EMBEDDER": "mock"}, None)


def synced(config: Config, started: list[subprocess.Popen[bytes]]) -> SyncState:
    assert started and started[-1].wait(120) == 0
    return SyncStateStore(config.home).read()


# ------------------------------------------------------------------ the log

def test_a_log_that_links_to_a_users_file_is_never_written_through(
        tmp_path: Path, corpus: Path) -> None:
    home, notes = tmp_path / "home", tmp_path / "notes.txt"
    home.mkdir()
    notes.write_text("my own notes\n")
    notes.chmod(0o644)
    Home(home).sync_log.symlink_to(notes)
    dangling = tmp_path / "elsewhere" / "made.log"
    config, started = mock_config(home, corpus), []
    assert DetachedSync("server", popen=spawner(home, corpus, started)).start(config)
    assert synced(config, started).last_success
    assert notes.read_text() == "my own notes\n" and notes.stat().st_mode & 0o777 == 0o644
    assert sync_log_problem(home) is not None and "a link" in str(sync_log_problem(home))
    Home(home).sync_log.unlink()
    Home(home).sync_log.symlink_to(dangling)
    SyncStateStore(home).update(last_success=None, progress={"done": 0, "total": 4})
    assert DetachedSync("server", popen=spawner(home, corpus, started)).start(config)
    synced(config, started)
    assert not dangling.parent.exists()


@pytest.mark.parametrize("damage", ["folder", "read-only file", "fifo", "read-only home"])
def test_a_log_that_cannot_be_written_costs_the_log_never_the_answer(
        tmp_path: Path, corpus: Path, damage: str) -> None:
    """As a user (root's override of file modes dropped): a question answers in one line,
    at once, and the sync runs where it can; status and doctor say the log is unusable."""
    home = tmp_path / "home"
    home.mkdir()
    log = Home(home).sync_log
    if damage == "folder":
        log.mkdir()
    elif damage == "read-only file":
        log.write_text("old lines\n")
        log.chmod(0o444)
    elif damage == "fifo":
        os.mkfifo(log)
    elif damage == "read-only home":
        home.chmod(0o555)
    drop = ("setpriv", "--bounding-set", "-dac_override,-dac_read_search") \
        if os.geteuid() == 0 else ()
    try:
        began = time.monotonic()
        asked = subprocess.run([*drop, sys.executable, "-m", "plaud_index", "search", "budget"],
                               cwd=REPO, env=child_env(home, corpus), capture_output=True,
                               text=True, timeout=180)
        took = time.monotonic() - began
        status = subprocess.run([*drop, sys.executable, "-m", "plaud_index", "status"],
                                cwd=REPO, env=child_env(home, corpus), capture_output=True,
                                text=True, timeout=60)
    finally:
        home.chmod(0o755)
    assert "Traceback" not in asked.stderr + status.stderr and took < 120
    if damage == "read-only home":  # nothing can be saved: said in one line
        assert asked.returncode == 1
        lines = [x for x in asked.stderr.splitlines() if x.startswith("plaud-index-mcp:")]
        assert len(lines) == 1 and "cannot be written" in lines[0], asked.stderr
        assert "cannot be written" in status.stdout
        return
    assert asked.returncode == 0 and "Meeting" in asked.stdout, asked.stderr
    assert "background-sync.log cannot be used" in asked.stderr  # said where it happens
    assert "background-sync.log cannot be used" in status.stdout
    if damage == "read-only file":
        assert log.read_text() == "old lines\n" and log.stat().st_mode & 0o777 == 0o444


def test_the_log_keeps_every_runs_lines_and_rotates_by_size(
        tmp_path: Path, corpus: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from plaud_index.sync import detached

    home = tmp_path / "home"
    config, started = mock_config(home, corpus), []
    for _ in range(2):  # a stop and a resume, or two servers one after the other
        SyncStateStore(home).update(last_success=None, progress={"done": 0, "total": 4})
        assert DetachedSync("server", popen=spawner(home, corpus, started)).start(config)
        synced(config, started)
    text = Home(home).sync_log.read_text()
    assert text.count("a sync started by the server") == 2
    assert Home(home).sync_log.stat().st_mode & 0o777 == 0o600
    monkeypatch.setattr(detached, "LOG_ROTATE_BYTES", len(text.encode()) - 1)
    SyncStateStore(home).update(last_success=None, progress={"done": 0, "total": 4})
    assert DetachedSync("server", popen=spawner(home, corpus, started)).start(config)
    synced(config, started)
    assert Path(f"{Home(home).sync_log}.1").read_text() == text  # the earlier runs, whole
    assert Home(home).sync_log.read_text().count("a sync started by") == 1


# ------------------------------------------------------------------ one, whoever asks first

def test_servers_asking_at_the_same_instant_start_exactly_one_sync(
        tmp_path: Path, corpus: Path) -> None:
    for round_ in range(5):
        home = tmp_path / f"home{round_}"
        config, started = mock_config(home, corpus), []
        syncs = [DetachedSync("server", popen=spawner(home, corpus, started))
                 for _ in range(4)]
        ready = threading.Barrier(len(syncs))
        results: list[bool] = []

        def ask(sync: DetachedSync, ready: threading.Barrier, results: list[bool],
                config: Config) -> None:
            ready.wait()
            results.append(sync.start(config))

        threads = [threading.Thread(target=ask, args=(s, ready, results, config))
                   for s in syncs]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert sorted(results) == [False, False, False, True] and len(started) == 1
        holder = lock_holder(config.lock_path)  # named from its first instant
        assert holder is None or (holder["pid"] == started[0].pid and
                                  holder["role"] == "first sync (server)")
        synced(config, started)


def test_three_cli_questions_at_once_start_one_sync_and_all_answer(
        tmp_path: Path, corpus: Path) -> None:
    home = tmp_path / "home"
    env = child_env(home, corpus)
    asks = [subprocess.Popen([sys.executable, "-m", "plaud_index", "search", "budget"],
                             cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True) for _ in range(3)]
    outs = [p.communicate(timeout=180) for p in asks]
    assert all(p.returncode == 0 for p in asks), outs
    assert Home(home).sync_log.read_text().count("a sync started by the cli") == 1


class Finishing:
    """The sync state as a reader sees it when the sync commits its last recording and
    records its success between the reader's two looks."""

    def __init__(self, real: SyncStateStore) -> None:
        self.real, self.reads = real, 0

    def read(self) -> SyncState:
        self.reads += 1
        state = self.real.read()
        return state if self.reads > 1 else replace(state, last_success=None,
                                                    progress={"done": 4, "total": 4})


class Counting(DetachedSync):
    def __init__(self) -> None:
        super().__init__("server", popen=self._spawn_nothing)
        self.spawned = 0

    def _spawn_nothing(self, *args: Any, **kwargs: Any) -> subprocess.Popen[bytes]:
        self.spawned += 1
        return subprocess.Popen(["true"])


def test_a_question_right_after_the_sync_finished_is_complete_and_starts_no_other(
        tmp_path: Path, corpus: Path) -> None:
    config = mock_config(tmp_path / "home", corpus)
    run_locked_cycle(config, HashEmbedder())
    sync = Counting()
    answers = answers_of(config, HashEmbedder(), sync=sync)
    answers.index.state = answers.readiness.state = Finishing(answers.index.state)  # type: ignore[assignment]
    result = answers.search.search(make_request("budget"))
    assert result.index.complete and result.index.progress is None
    assert "stopped" not in str(result.index) and sync.spawned == 0


# ------------------------------------------------------------------ a full disk

def test_a_full_disk_is_named_and_the_same_server_syncs_once_there_is_room(
        small_disk: Path, corpus: Path) -> None:
    home = small_disk / "home"
    config = mock_config(home, corpus)
    now = [time.time()]
    started: list[subprocess.Popen[bytes]] = []
    sync = DetachedSync("server", popen=spawner(home, corpus, started), clock=lambda: now[0])
    answers = answers_of(config, HashEmbedder(), sync=sync)
    home.mkdir()
    filler = small_disk / "filler"
    fill_disk(filler)
    for _ in range(2):  # the first question, then the next one
        with pytest.raises(IndexNotReadyError) as caught:
            answers.search.search(make_request("budget"))
        if started:
            started[-1].wait(120)
        assert "full" in str(caught.value), caught.value
    filler.unlink()  # no waiting a minute (issue 52: 62 s after it still said not running)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            result = answers.search.search(make_request("budget"))
        except IndexNotReadyError:
            time.sleep(0.5)
            continue
        if result.results:
            break
        time.sleep(0.5)
    assert result.results, "the same server never synced again"


def test_a_sync_the_full_disk_stopped_starts_again_at_the_first_question_after_it_is_freed(
        tmp_path: Path, corpus: Path) -> None:
    """Issue 52: a failure on record held every restart for a minute; a question 62 s after
    the disk was freed still said the sync was not running. A full disk that has room
    again is no reason to wait; another failure still is."""
    config = mock_config(tmp_path / "home", corpus)
    config.home.mkdir()
    store = SyncStateStore(config.home)
    store.record_failure(last_attempt=time.time(), last_error="The disk is full: free some "
                         "space", last_error_kind="StorageError", progress=None)
    sync = Counting()
    with pytest.raises(IndexNotReadyError):
        answers_of(config, HashEmbedder(), sync=sync).search.search(make_request("budget"))
    assert sync.spawned == 1  # at once: the disk has room now
    store.record_failure(last_attempt=time.time(), last_error="Plaud answered 503",
                         last_error_kind="PlaudUpstreamError", progress=None)
    other = Counting()
    with pytest.raises(IndexNotReadyError):
        answers_of(config, HashEmbedder(), sync=other).search.search(make_request("budget"))
    assert other.spawned == 0  # Plaud down: not one attempt per question


# ------------------------------------------------------------------ partial answers

def test_an_id_not_yet_indexed_during_a_first_sync_says_the_index_is_partial(
        tmp_path: Path, corpus: Path) -> None:
    config = mock_config(tmp_path / "home", corpus)
    run_locked_cycle(config, HashEmbedder())
    SyncStateStore(config.home).update(last_success=None, progress={
        "done": 2, "total": 9, "updated": time.time(), "started": time.time() - 30})
    answers = answers_of(config, HashEmbedder())
    for ask in (lambda: answers.search.get("later-recording"),
                lambda: answers.pages.transcript("later-recording")):
        with pytest.raises(UnknownRecordingError, match=r"still partial .*may not be indexed "
                                                        r"yet; ask again in 15 seconds"):
            ask()
    SyncStateStore(config.home).update(last_success=time.time(), progress=None)
    with pytest.raises(UnknownRecordingError) as complete:
        answers.search.get("later-recording")
    assert "partial" not in str(complete.value)


# ------------------------------------------------------------------ fresh without the agent

def test_a_server_keeps_a_stale_index_fresh_and_its_sync_outlives_the_session(
        tmp_path: Path, corpus: Path) -> None:
    import anyio
    from helpers import mcp_session

    config = mock_config(tmp_path / "home", corpus)
    run_locked_cycle(config, HashEmbedder())
    old = time.time() - 7200  # two hours: older than the 5-minute interval
    SyncStateStore(config.home).update(last_success=old, last_attempt=old)
    write_corpus(corpus, [*MEETINGS, {**MEETINGS[0], "id": "m-new", "name": "New meeting"}])

    async def one_question() -> dict[str, Any]:
        async with mcp_session(child_env(config.home, corpus)) as session:
            result = await session.call_tool("plaud_list", {})
            return dict(result.structured_content)

    listed = anyio.run(one_question)  # the session ends here: the server exits
    assert listed["index"]["complete"]  # answered at once from the index it has
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        state = SyncStateStore(config.home).read()
        if state.last_success and state.last_success > old and \
                lock_holder(config.lock_path) is None:
            break
        time.sleep(0.3)
    assert state.last_success and state.last_success > old, "no sync kept the index fresh"
    log = Home(config.home).sync_log.read_text()
    assert log.count("a sync started by the server") == 1
    answers = answers_of(config, HashEmbedder())
    assert "m-new" in {r.file_id for r in answers.browse.list(ListRequest()).recordings}


def test_no_sync_is_started_while_the_agent_keeps_the_index_fresh(
        tmp_path: Path, corpus: Path) -> None:
    config = mock_config(tmp_path / "home", corpus)
    run_locked_cycle(config, HashEmbedder())
    old = time.time() - 7200
    SyncStateStore(config.home).update(last_success=old, last_attempt=old, daemon={
        "pid": os.getpid(), "heartbeat": time.time(), "interval_ms": 300_000})
    sync = Counting()
    answers = answers_of(config, HashEmbedder(), sync=sync)
    assert not answers.readiness.keep_fresh() and sync.spawned == 0
    SyncStateStore(config.home).update(daemon=None)
    assert answers.readiness.keep_fresh() and sync.spawned == 1


def test_doctor_says_which_of_the_two_keeps_the_index_fresh(tmp_path: Path,
                                                            corpus: Path) -> None:
    from plaud_index.answers.index import IndexReader
    from plaud_index.setup.doctor import check_daemon

    config = mock_config(tmp_path / "home", corpus)
    run_locked_cycle(config, HashEmbedder())
    check = check_daemon(config, IndexReader(config))
    assert check.status == "warn" and "the servers your MCP clients start keep the index " \
        "fresh while they run" in check.detail and "install-agent" in str(check.fix)
    SyncStateStore(config.home).update(daemon={"pid": os.getpid(), "heartbeat": time.time(),
                                                "interval_ms": 300_000})
    running = check_daemon(config, IndexReader(config))
    assert running.status == "ok" and "running" in running.detail
