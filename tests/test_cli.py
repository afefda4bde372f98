"""The CLI as a user runs it: real subprocesses, the real model, the bundled sample."""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import SAMPLE_RECORDINGS, answers_of

from plaud_index.setup.status import service_status
from plaud_index.sync.lock import IndexerLock

REPO = Path(__file__).resolve().parent.parent


def cli(*args: str, env: dict[str, str] | None = None,
        check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run([sys.executable, "-m", "plaud_index", *args], capture_output=True,
                            text=True, env={**os.environ, **(env or {})}, cwd=REPO, timeout=300)
    if check:
        assert result.returncode == 0, result.stderr
    return result


@pytest.fixture
def mock_env() -> dict[str, str]:
    return {"PLAUD_CLIENT": "mock"}


def test_indexer_once_then_search_json_with_the_real_model(mock_env: dict[str, str]) -> None:
    run = cli("indexer", "--once", env=mock_env)
    assert "Effective index refresh interval: 5m (300000 ms) [source=default]" in run.stderr
    result = json.loads(cli("search", "what did we decide about the Q3 budget?", "--json",
                            env=mock_env).stdout)
    top = result["results"][0]
    assert top["title"] == "Q3 budget review"
    assert set(top) >= {"file_id", "title", "created_at", "score", "snippet", "moments"}
    transcript = [m for m in top["moments"] if m["source"] == "transcript"]
    assert transcript and all(m["start"].count(":") == 2 for m in transcript)
    assert all(m["start"] == "" and m["start_ms"] is None for m in top["moments"]
               if m["source"] == "notes")
    assert result["index"]["recordings"] == SAMPLE_RECORDINGS


def test_search_filters_from_the_command_line(mock_env: dict[str, str]) -> None:
    cli("indexer", "--once", env=mock_env)
    result = json.loads(cli("search", "budget", "--from", "2026-09-01", "--to", "2026-09-30",
                            "--json", env=mock_env).stdout)
    assert result["results"]
    assert all(r["created_at"].startswith("2026-09") for r in result["results"])
    text = cli("search", "postmortem outage", "--limit", "1", env=mock_env).stdout
    assert "Postmortem: checkout database outage" in text and "get_transcript" not in text
    assert "plaud-index-mcp get FILE_ID" in text  # a terminal has no Plaud MCP to call


def background_sync_ends(stderr: str) -> None:
    """Wait for the sync a CLI command started in the background (its own process, whose
    pid the command printed) to exit: the process itself, not a timer, says it ended."""
    pid = int(re.search(r"in the background \(pid (\d+)\)", stderr).group(1))  # type: ignore[union-attr]
    stat = Path(f"/proc/{pid}/stat")
    for _ in range(1200):
        try:
            if stat.read_text().rsplit(")", 1)[1].split()[0] == "Z":  # exited, not reaped
                return
        except FileNotFoundError:
            return
        time.sleep(0.1)
    raise AssertionError("the background sync never ended")


def test_search_on_an_empty_index_answers_from_the_first_commit_while_the_sync_goes_on(
        mock_env: dict[str, str], index_home: Path) -> None:
    run = cli("search", "kitchen countertops", "--json", env=mock_env)
    first = json.loads(run.stdout)
    assert first["results"] and first["index"]["recordings"] >= 1
    assert "goes on in the background" in run.stderr and "background-sync.log" in run.stderr
    background_sync_ends(run.stderr)
    done = json.loads(cli("search", "kitchen countertops", "--json", env=mock_env).stdout)
    assert done["results"][0]["title"] == "Kitchen renovation with contractor"
    assert done["index"]["complete"] and done["index"]["recordings"] == SAMPLE_RECORDINGS


def test_a_search_on_a_partial_index_answers_at_once_and_resumes_the_first_sync(
        mock_env: dict[str, str], index_home: Path) -> None:
    from plaud_index.sync.state import SyncStateStore

    cli("indexer", "--once", env=mock_env)
    SyncStateStore(index_home).update(last_success=None, progress={"done": 5, "total": 20})
    run = cli("search", "budget", env=mock_env)
    assert run.stdout.startswith("PARTIAL INDEX: the first sync is not finished (")
    assert "goes on in the background" in run.stderr
    background_sync_ends(run.stderr)
    assert SyncStateStore(index_home).read().complete


def test_search_without_index_or_source_refuses_clearly() -> None:
    run = cli("search", "budget", check=False)
    assert run.returncode == 1
    assert "Plaud index not available" in run.stderr and run.stdout == ""


def test_bad_search_arguments_exit_2_with_a_message(mock_env: dict[str, str]) -> None:
    run = cli("search", "budget", "--limit", "99", env=mock_env, check=False)
    assert run.returncode == 2 and "limit must be an integer from 1 to 25" in run.stderr


def test_status_json_reports_the_index(mock_env: dict[str, str]) -> None:
    cli("indexer", "--once", env=mock_env)
    status = json.loads(cli("status", "--json").stdout)
    assert status["recordings"] == SAMPLE_RECORDINGS and status["chunks"] > SAMPLE_RECORDINGS
    assert status["model"]["dim"] == 384 and status["last_error"] is None
    assert status["lock_holder"] is None and status["last_success"]
    assert f"Recordings:   {SAMPLE_RECORDINGS}" in cli("status").stdout


def test_second_concurrent_cycle_skips_and_exits_0(mock_env: dict[str, str],
                                                   index_home: Path) -> None:
    holder = IndexerLock(index_home / "indexer.lock")
    assert holder.try_acquire()
    try:
        run = cli("indexer", "--once", env={**mock_env, "PLAUD_EMBEDDER": "mock"})
    finally:
        holder.release()
    assert "indexing already in progress, skipping cycle" in run.stderr


def test_mock_corpus_in_the_eval_format(tmp_path: Path) -> None:
    corpus = tmp_path / "files.jsonl"
    corpus.write_text(json.dumps({
        "id": "qm-1", "name": "Remote control design", "created_at": "2025-01-21T11:30:38Z",
        "duration": 20, "note": "The team chose a yellow rubber case.",
        "transcript": [{"speaker": "Project Manager", "start": 0.0, "end": 4.5,
                        "text": "Let us pick the case material."},
                       {"speaker": "Industrial Designer", "start": 5.0, "end": 9.0,
                        "text": "I propose a yellow rubber case."}]}) + "\n")
    env = {"PLAUD_CLIENT": "mock", "PLAUD_MOCK_CORPUS": str(corpus)}
    cli("indexer", "--once", env=env)
    hit = json.loads(cli("search", "rubber case", "--json", "--source", "transcript",
                         env=env).stdout)["results"][0]
    assert hit["file_id"] == "qm-1" and hit["created_at"].startswith("2025-01-21T11:30:38")
    assert hit["moments"][0]["speaker"] == "Industrial Designer"
    assert hit["moments"][0]["start_ms"] == 5000


def test_demo_indexes_the_sample_and_answers(tmp_path: Path) -> None:
    run = cli("demo", "who owns the launch checklist", env={"TMPDIR": str(tmp_path)})
    assert f"Indexed {SAMPLE_RECORDINGS} recordings" in run.stdout
    assert "Spring launch marketing plan" in run.stdout.split("===")[1].split("\n2.")[0]


def test_console_script_entry_runs_subcommands(mock_env: dict[str, str]) -> None:
    script = Path(sys.executable).parent / "plaud-index-mcp"
    if not script.exists():
        pytest.fail("the console script plaud-index-mcp is not installed (pip install -e .)")
    run = subprocess.run([str(script), "status", "--json"], capture_output=True, text=True,
                         env={**os.environ, **mock_env}, timeout=60)
    assert run.returncode == 0 and json.loads(run.stdout)["recordings"] == 0


def test_output_into_a_closed_pipe_ends_quietly(mock_env: dict[str, str]) -> None:
    """``search … --json | head``: the reader is gone before we write (deterministic: the
    pipe's read end is closed before the command starts)."""
    cli("indexer", "--once", env=mock_env)
    for command in (["search", "budget", "--json"], ["status", "--json"], ["status"]):
        read_end, write_end = os.pipe()
        os.close(read_end)
        try:
            done = subprocess.run([sys.executable, "-m", "plaud_index", *command], cwd=REPO,
                                  stdout=write_end, stderr=subprocess.PIPE, text=True,
                                  env={**os.environ, **mock_env}, timeout=120)
        finally:
            os.close(write_end)
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr


def test_status_during_a_first_sync_says_so_not_never_synced(tmp_path: Path) -> None:
    from plaud_index.config import build_config
    from plaud_index.sync.lock import IndexerLock
    from plaud_index.sync.state import SyncStateStore

    config = build_config({"PLAUD_INDEX_HOME": str(tmp_path)}, None)
    SyncStateStore(tmp_path).update(progress={"done": 25, "total": 300})
    lock = IndexerLock(config.lock_path)
    assert lock.try_acquire()
    try:
        flags = service_status(answers_of(config).index).health.flags
    finally:
        lock.release()
    # (the index holds none of them: said, as a person asking would want)
    assert "first sync running: fetching, 25 of 300 recordings done, 0 searchable" in flags
    assert not any("never synced" in f for f in flags)


def test_every_option_of_every_command_says_what_it_does() -> None:
    from plaud_index.cli import build_parser

    def walk(parser: argparse.ArgumentParser, path: str) -> Iterator[str]:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    yield from walk(sub, f"{path} {name}")
            elif not isinstance(action, argparse._HelpAction) and not action.help:
                yield f"{path} {'/'.join(action.option_strings) or action.dest}"

    assert not list(walk(build_parser(), "plaud-index-mcp"))


@pytest.mark.parametrize("args, says", [
    (["search", "budget", "--from", "2026-1-1"], "--from must be a date as YYYY-MM-DD"),
    (["search", "budget", "--from", "2026-02-01", "--to", "2026-01-01"],
     "--from 2026-02-01 is after --to 2026-01-01"),
    (["search", "budget", "--limit", "99"], "--limit must be an integer from 1 to 25"),
    (["list", "--cursor", "nope"], "--cursor 'nope' is not one plaud-index-mcp list returned"),
])
def test_cli_errors_name_the_flags_not_the_tool_arguments(
        args: list[str], says: str, capsys: pytest.CaptureFixture[str]) -> None:
    from plaud_index.cli import main

    assert main(args) == 2
    assert says in capsys.readouterr().err


def test_a_cli_search_is_quiet_about_the_model_and_a_partial_index_says_so_first(
        mock_env: dict[str, str], index_home: Path) -> None:
    from plaud_index.sync.state import SyncStateStore

    cli("indexer", "--once", env=mock_env)
    SyncStateStore(index_home).update(last_success=None, progress={"done": 5, "total": 20})
    run = cli("search", "budget", env=mock_env)
    assert "Loaded embedding model" not in run.stderr and "INFO" not in run.stderr
    assert run.stdout.startswith("PARTIAL INDEX: the first sync is not finished (")
    background_sync_ends(run.stderr)  # the search resumed it
    assert "Loaded embedding model" in cli("-v", "search", "budget", env=mock_env).stderr


def test_status_is_not_ok_while_signed_out_and_names_the_mock_corpus(
        tmp_path: Path) -> None:
    from plaud_index.config import build_config

    signed_out = service_status(
        answers_of(build_config({"PLAUD_INDEX_HOME": str(tmp_path)}, None)).index)
    assert not signed_out.health.ok
    assert any("plaud-index-mcp login" in f for f in signed_out.health.flags)
    corpus = tmp_path / "mine.jsonl"
    mock = build_config({"PLAUD_INDEX_HOME": str(tmp_path), "PLAUD_CLIENT": "mock",
                         "PLAUD_MOCK_CORPUS": str(corpus)}, None)
    assert service_status(answers_of(mock).index).auth.account == f"the mock corpus {corpus}"


def test_main_in_process_leaves_the_callers_logging_as_it_was(
        capsys: pytest.CaptureFixture[str]) -> None:
    """A script (or a test) that calls ``main`` keeps its own handlers: one left on a
    stream that has since closed would fail every later record, and print a stack each."""
    from plaud_index.cli import main

    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    main(["status", "--json"])
    assert root.handlers == handlers and root.level == level
    capsys.readouterr()
