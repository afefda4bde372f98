"""Real Plaud shapes (API.md §8) end to end against the fake: sign in, one cycle, search,
get, list, the Markdown mirror, the MCP tools; one broken recording; the web API's folders."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fake_plaud import FakePlaud
from helpers import mcp_session, tool_result

REPO = Path(__file__).resolve().parent.parent
SHAPES = ("summary_error_10", "highlights_array", "highlights_markdown", "device_marks",
          "note_image", "verbatim_and_polish", "heading_only_note", "untitled_action_items")


def run(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "plaud_index", *args], capture_output=True,
                          text=True, cwd=REPO, timeout=300,
                          env={**os.environ, "PLAUD_EMBEDDER": "mock", **env})


def search(query: str, env: dict[str, str], *flags: str) -> dict[str, Any]:
    done = run("search", query, "--json", "--mode", "keyword", *flags, env=env)
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def top(result: dict[str, Any]) -> dict[str, Any]:
    assert result["results"], result
    return dict(result["results"][0])


@pytest.fixture
def shaped(fake: FakePlaud, plaud_env: dict[str, str], tmp_path: Path
           ) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """One recording of each shape, signed in, one cycle run with the mirror on."""
    fake.seed(3)
    files = {name: fake.add_special(name) for name in SHAPES}
    env = {**plaud_env, "PLAUD_INDEX_MIRROR": str(tmp_path / "mirror")}
    cycle = run("indexer", "--once", env=env)
    assert cycle.returncode == 0, cycle.stderr
    return files, env


def test_every_published_shape_is_found_by_its_own_words(
        shaped: tuple[dict[str, dict[str, Any]], dict[str, str]]) -> None:
    files, env = shaped
    summary = top(search("zebra procurement", env))
    assert summary["file_id"] == files["summary_error_10"]["id"]
    assert "zebra procurement was approved" in summary["snippet"]

    highlight = top(search("kiwi launch", env))
    assert highlight["file_id"] == files["highlights_array"]["id"]
    moment = highlight["moments"][0]
    assert (moment["start"], moment["source"]) == ("00:12:30", "highlight")
    assert "kiwi launch slips to March" in moment["snippet"]
    assert top(search("osprey budget", env))["moments"][0]["source"] == "notes"

    mark = top(search("pelican contract", env))
    assert mark["file_id"] == files["device_marks"]["id"]
    assert (mark["moments"][0]["start"], mark["moments"][0]["source"]) == ("00:01:31", "mark")

    verbatim = top(search("walrus", env))  # only the verbatim transcript says it
    assert "walrus budget" in verbatim["snippet"]

    heron = top(search("heron", env))
    assert heron["file_id"] == files["note_image"]["id"]
    for query in ("poster", "permanent", "png"):
        found = search(query, env)["results"]
        assert all("permanent" not in json.dumps(hit) for hit in found), query

    toucan = top(search("toucan deck", env))
    assert toucan["moments"][0]["source"] == "notes"


def test_highlights_and_marks_are_read_around_listed_and_mirrored(
        shaped: tuple[dict[str, dict[str, Any]], dict[str, str]], tmp_path: Path) -> None:
    files, env = shaped
    marks_id = files["device_marks"]["id"]
    got = run("get", marks_id, "--at", "00:00:30", "--window", "10", "--json", env=env)
    assert got.returncode == 0, got.stderr
    info = json.loads(got.stdout)
    assert [(m["start"], m["snippet"]) for m in info["marks"]] == [
        ("00:01:31", "pelican contract clause")]
    assert info["around"]["utterances"], info["around"]
    text = run("get", marks_id, env=env).stdout
    assert "your marks: @00:01:31 pelican contract clause" in text
    listed = json.loads(run("list", "--json", "--limit", "50", env=env).stdout)
    rows = {r["file_id"]: r for r in listed["recordings"]}
    assert rows[marks_id]["marks"][0]["start_ms"] == 91000
    mirror = tmp_path / "mirror"
    documents = {p.name: p.read_text() for p in mirror.glob("*.md")}
    assert len(documents) == 3 + len(SHAPES)
    joined = "\n".join(documents.values())
    assert "kiwi launch slips to March" in joined and "pelican contract clause" in joined
    assert "zebra procurement" in joined and "permanent/" not in joined


def test_notes_plaud_sent_without_text_are_named_by_status(
        shaped: tuple[dict[str, dict[str, Any]], dict[str, str]]) -> None:
    files, env = shaped
    status = json.loads(run("status", "--json", env=env).stdout)
    assert status["empty_notes"] == {
        files["heading_only_note"]["id"]: "note 'Summary' has no text"}
    assert "Empty notes:  1 recording(s)" in run("status", env=env).stdout


def test_one_recording_answering_500_cannot_stop_a_first_sync(
        fake: FakePlaud, plaud_env: dict[str, str]) -> None:
    fake.seed(6)
    broken = fake.files[2]["id"]
    fake.config.broken_ids.add(broken)  # every try, every cycle: HTTP 500 (API.md §8)
    first = run("indexer", "--once", env=plaud_env)
    assert first.returncode == 0, first.stderr
    status = json.loads(run("status", "--json", env=plaud_env).stdout)
    assert status["recordings"] == 5 and status["last_success"] is not None
    assert list(status["failing"]) == [broken]
    assert status["failing"][broken]["tries"] == 1 and "HTTP 500" in \
        status["failing"][broken]["error"]
    second = run("indexer", "--once", env=plaud_env)  # not due yet: the others only
    assert second.returncode == 0, second.stderr
    text = run("status", env=plaud_env).stdout
    assert f"Failing:      {broken} since" in text
    assert f"1 recording keep failing on Plaud's side: {broken}" in text
    doctor = run("doctor", env=plaud_env).stdout
    assert broken in doctor and "keep failing on Plaud's side" in doctor
    assert len(fake.requests(f"/files/{broken}")) == 5  # one cycle's tries, then backoff


@pytest.fixture
def web_env(fake: FakePlaud, index_home: Path) -> dict[str, str]:
    """The web-API path, with a token pasted as a browser shows it and three folders."""
    fake.seed(5)
    fake.config.filetags = {"t1": "Clients", "t2": "Internal", "t3": "Empty"}
    fake.files[0]["filetags"] = ["t1"]
    fake.files[1]["filetags"] = ["t1", "t2"]
    fake.files[3]["filetags"] = ["t2"]
    return {"PLAUD_INDEX_HOME": str(index_home), "PLAUD_API_BASE": f"{fake.base_url}/web",
            "PLAUD_API_TOKEN": f"bearer {fake.config.web_token}", "PLAUD_DETAIL_INTERVAL_MS": "0"}


def test_a_pasted_bearer_token_syncs_and_folders_filter_every_answer(
        fake: FakePlaud, web_env: dict[str, str], tmp_path: Path) -> None:
    mirror = tmp_path / "mirror"
    env = {**web_env, "PLAUD_INDEX_MIRROR": str(mirror)}
    cycle = run("indexer", "--once", env=env)
    assert cycle.returncode == 0, cycle.stderr
    ids = [f["id"] for f in fake.files]
    found = search("milestone review", env, "--folder", "clients", "--limit", "25")
    assert {h["file_id"] for h in found["results"]} == {ids[0], ids[1]}
    assert found["results"][0]["folders"][0] == "Clients"
    listed = json.loads(run("list", "--json", "--folder", "INTERNAL", env=env).stdout)
    assert {r["file_id"] for r in listed["recordings"]} == {ids[1], ids[3]}
    assert listed["matched"] == 2
    assert search("milestone review", env, "--folder", "Empty")["results"] == []
    assert json.loads(run("get", ids[3], "--json", env=env).stdout)["folders"] == ["Internal"]
    assert (mirror / "Clients").is_dir() and len(list((mirror / "Clients").glob("*.md"))) == 2
    fake.files[3]["filetags"] = ["t1"]  # moved to another folder in Plaud: the listing says
    assert run("indexer", "--once", env=env).returncode == 0
    assert len(list((mirror / "Clients").glob("*.md"))) == 3
    assert not (mirror / "Internal").exists()  # its last file moved out, so it went too


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_the_mcp_tools_take_a_folder(fake: FakePlaud, web_env: dict[str, str]) -> None:
    assert run("indexer", "--once", env=web_env).returncode == 0
    async with mcp_session({**os.environ, "PLAUD_EMBEDDER": "mock", **web_env}) as session:
        found = await tool_result(session, "plaud_search", query="milestone review",
                                  folder="Clients", limit=25)
        listed = await tool_result(session, "plaud_list", folder="internal")
    ids = [f["id"] for f in fake.files]
    assert {h["file_id"] for h in found["results"]} == {ids[0], ids[1]}
    assert {r["file_id"] for r in listed["recordings"]} == {ids[1], ids[3]}
    assert all("Internal" in r["folders"] for r in listed["recordings"])
