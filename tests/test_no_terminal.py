"""From one install to answers with no terminal step: ``install`` finds the seven clients
of a fresh HOME and writes only our entry into each; the server a client starts from that
entry answers a first question with a sign-in link, the link is followed as a browser
would (against the fake Plaud), and the next question is answered; the sign-in tools; the
prompts through a client; ``uninstall`` gives every file back."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import anyio
import pytest
import tomllib
from conftest import free_port
from fake_plaud import FakePlaud
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS

from plaud_index.setup.clients import CLIENTS, config_path

REPO = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def client_folders(home: Path) -> None:
    """Each client's settings folder, as it leaves it at its first start (Linux paths)."""
    for name in CLIENTS:
        config_path(name, home, {}).parent.mkdir(parents=True, exist_ok=True)
    (home / ".claude").mkdir(exist_ok=True)


def run(home: Path, env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "plaud_index", *argv], capture_output=True,
                          text=True, cwd=REPO, timeout=300,
                          env={**os.environ, "HOME": str(home), **env})


@pytest.fixture
def fresh(tmp_path: Path, fake: FakePlaud) -> tuple[Path, dict[str, str]]:
    """A fresh HOME with the seven clients, and the PLAUD_* settings that point at the fake
    (they are carried into the entries' env, as a user's would be)."""
    home = tmp_path / "home"
    home.mkdir()
    client_folders(home)
    fake.seed(3)
    env = {**fake.env(f"http://localhost:{free_port()}/auth/callback"),
           "PLAUD_INDEX_HOME": str(home / ".plaud-index-mcp"), "PLAUD_DETAIL_INTERVAL_MS": "0",
           "PLAUD_EMBEDDER": "mock"}
    return home, env


def entry_of(home: Path, name: str) -> dict[str, Any]:
    path = config_path(name, home, {})
    if name == "codex":
        return dict(tomllib.loads(path.read_text())["mcp_servers"]["plaud-index"])
    key = "servers" if name == "vscode" else "mcpServers"
    return dict(json.loads(path.read_text())[key]["plaud-index"])


async def first_answers(home: Path, entry: dict[str, Any]) -> tuple[dict[str, Any], ...]:
    """As Claude Desktop starts it: the entry's command, args and env (and the GUI PATH)."""
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin:/usr/sbin:/sbin", **entry["env"]}
    params = StdioServerParameters(command=entry["command"], args=entry["args"], env=env,
                                   cwd=str(home))
    with (home / "server.log").open("w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), \
                ClientSession(read, write) as session:
            await session.initialize()
            first = await session.call_tool("plaud_search", {"query": "milestone review"})
            assert not first.is_error, first.content
            link = first.structured_content["index"]["sign_in_url"]
            # the browser: Plaud's page (the fake approves at once) sends it back to the
            # server's own listener, which exchanges the code and answers with a page
            page = await anyio.to_thread.run_sync(
                lambda: urllib.request.urlopen(link, timeout=60).read().decode())
            deadline = time.monotonic() + 240
            while time.monotonic() < deadline:  # the first sync starts by itself
                later = await session.call_tool("plaud_search", {"query": "milestone review"})
                data = later.structured_content
                if not later.is_error and data["results"] and data["index"]["complete"]:
                    break
                await anyio.sleep(0.5)
            who = await session.call_tool("plaud_sign_in", {})
    return first.structured_content, {"page": page}, later.structured_content, \
        who.structured_content


async def test_from_install_to_answers_without_a_terminal(
        fresh: tuple[Path, dict[str, str]], fake: FakePlaud) -> None:
    home, env = fresh
    done = run(home, env, "install", "--no-agent")
    assert done.returncode == 0, done.stderr
    for name in CLIENTS:
        assert f"{name}: adds our entry to" in done.stdout, (name, done.stdout)
        assert entry_of(home, name)["command"], name
    assert "Not found on this machine" not in done.stdout
    first, browser, later, who = await first_answers(home, entry_of(home, "claude-desktop"))
    assert first["results"] == [] and "Open this link" in first["note"]
    assert "Signed in to Plaud" in browser["page"]
    assert later["results"] and later["index"]["complete"], later
    assert who["signed_in"] is True and who["sign_in_url"] is None
    tokens = [*fake.access, *fake.refresh]
    for answer in (first, later, who):  # nothing of a token in any answer
        assert not any(t in json.dumps(answer) for t in tokens)
    log = (home / "server.log").read_text()
    assert "Traceback" not in log and not any(t in log for t in tokens)


def test_install_dry_run_writes_nothing_and_uninstall_gives_every_file_back(
        fresh: tuple[Path, dict[str, str]]) -> None:
    home, env = fresh
    cursor = config_path("cursor", home, {})
    cursor.write_text('{\n  "mcpServers": {\n    "fs": {"command": "npx"}\n  }\n}\n')
    codex = config_path("codex", home, {})
    codex.write_text('model = "o4-mini"\n')
    before = {p: p.read_bytes() for p in home.rglob("*") if p.is_file()}
    dry = run(home, env, "install", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert dry.stdout.count("would: ") == len(CLIENTS)
    assert {p: p.read_bytes() for p in home.rglob("*") if p.is_file()} == before
    assert run(home, env, "install", "--no-agent").returncode == 0
    assert "plaud-index" in cursor.read_text() and "plaud-index" in codex.read_text()
    gone = run(home, env, "uninstall")
    assert gone.returncode == 0, gone.stderr
    assert gone.stdout.count("removes our entry from") == len(CLIENTS)
    assert cursor.read_bytes() == before[cursor] and codex.read_bytes() == before[codex]
    # issue 52: an install and an uninstall left 12 backups behind; now each file as it
    # was, and no backup beside it
    assert not [p for p in home.rglob("*.bak-*")], sorted(home.rglob("*.bak-*"))
    for name in CLIENTS:  # the ones install created hold no entry of ours now
        path = config_path(name, home, {})
        assert "plaud-index" not in path.read_text(), name


async def test_the_prompts_build_on_the_tools_with_their_arguments(tmp_path: Path) -> None:
    env = {**os.environ, "PLAUD_INDEX_HOME": str(tmp_path / "home"), "PLAUD_CLIENT": "mock",
           "PLAUD_EMBEDDER": "mock"}
    params = StdioServerParameters(command=sys.executable, args=["-m", "plaud_index"],
                                   env=env, cwd=REPO)
    with open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), \
                ClientSession(read, write) as session:
            init = await session.initialize()
            prompts = {p.name: p for p in (await session.list_prompts()).prompts}
            items = await session.get_prompt("action_items_since",
                                             {"since": "2026-11-01", "owner": "Ann"})
            week = await session.get_prompt("week_recap", {"week_of": "2026-11-19"})
            prep = await session.get_prompt("prepare_meeting", {"person": "Dana",
                                                                "topic": "Q3 budget"})
            bad = None
            try:
                await session.get_prompt("action_items_since", {"since": "last tuesday"})
            except Exception as exc:  # the client raises the server's error
                bad = str(exc)
            refused = {}  # issue 52: these were error code 0, with a traceback in the log
            for name, arguments in (("no_such_prompt", {}), ("prepare_meeting", {})):
                try:
                    await session.get_prompt(name, arguments)
                except MCPError as exc:
                    refused[name] = (exc.error.code, exc.error.message)
    assert init.server_info.icons and init.server_info.icons[0].src.startswith(
        "data:image/png;base64,")
    assert set(prompts) == {"action_items_since", "week_recap", "prepare_meeting"}
    assert all(p.title and p.arguments is not None for p in prompts.values())
    text = items.messages[0].content.text  # type: ignore[union-attr]
    assert 'plaud_notes(section="action items", date_from="2026-11-01")' in text
    assert "owned by Ann" in text
    week_text = week.messages[0].content.text  # type: ignore[union-attr]
    assert 'date_from="2026-11-16", date_to="2026-11-22"' in week_text
    prep_text = prep.messages[0].content.text  # type: ignore[union-attr]
    assert "plaud_list(speaker='Dana')" in prep_text and "Q3 budget" in prep_text
    assert bad is not None and "since" in bad and "YYYY-MM-DD" in bad
    assert refused == {
        "no_such_prompt": (INVALID_PARAMS, "No prompt named 'no_such_prompt': the prompts are "
                           "action_items_since, week_recap, prepare_meeting"),
        "prepare_meeting": (INVALID_PARAMS, "prepare_meeting needs person")}
