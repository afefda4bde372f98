"""The MCP server as a client sees it: a subprocess driven by the SDK's stdio client."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from helpers import SAMPLE_RECORDINGS, tool_error, tool_result
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from plaud_index.sync.lock import IndexerLock

REPO = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def index_once(home: Path, **env: str) -> None:
    subprocess.run([sys.executable, "-m", "plaud_index", "indexer", "--once"], check=True,
                   capture_output=True, cwd=REPO, timeout=300,
                   env={**os.environ, "PLAUD_INDEX_HOME": str(home), "PLAUD_CLIENT": "mock",
                        **env})


@pytest.fixture(scope="module")
def built_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled sample indexed once with the real model; tests copy it."""
    home = tmp_path_factory.mktemp("built") / "home"
    index_once(home)
    return home


@pytest.fixture
def home(built_home: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "served-home"
    shutil.copytree(built_home, copy)
    return copy


@asynccontextmanager
async def connect(home: Path, **env: str) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(command=sys.executable, args=["-m", "plaud_index"],
                                   env={"PLAUD_INDEX_HOME": str(home), **env}, cwd=REPO)
    with open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), \
                ClientSession(read, write) as session:
            await session.initialize()
            yield session


async def search(session: ClientSession, **arguments: Any) -> dict[str, Any]:
    return await tool_result(session, "plaud_search", **arguments)



async def test_tools_list_schemas_and_annotations(home: Path) -> None:
    async with connect(home) as session:
        tools = {t.name: t for t in (await session.list_tools()).tools}
    reading = {"plaud_search", "plaud_list", "plaud_get", "plaud_transcript", "plaud_notes",
               "plaud_people"}
    assert set(tools) == reading | {"plaud_sign_in", "plaud_sign_out", "plaud_name_speaker"}
    for name in reading - {"plaud_people"}:
        tool = tools[name]
        assert tool.annotations is not None and tool.title
        assert tool.annotations.read_only_hint and tool.annotations.open_world_hint is False
        assert tool.output_schema and tool.description and "file_id" in tool.description
    people = tools["plaud_people"].annotations
    assert people is not None and people.read_only_hint and tools["plaud_people"].output_schema
    naming = tools["plaud_name_speaker"].annotations  # writes the user's name, locally only
    assert naming is not None and naming.read_only_hint is False
    assert naming.destructive_hint is False and naming.open_world_hint is False
    for name in ("plaud_sign_in", "plaud_sign_out"):  # they change the sign-in, at Plaud
        annotations = tools[name].annotations
        assert annotations is not None and tools[name].title and tools[name].output_schema
        assert annotations.read_only_hint is False and annotations.open_world_hint is True
    from plaud_index.server.failures import REQUIRED  # filled in as null: ours to report

    assert {n: tuple(t.input_schema.get("required", ())) for n, t in tools.items()
            if t.input_schema.get("required")} == REQUIRED
    search_schema = tools["plaud_search"].input_schema
    assert search_schema["required"] == ["query"]
    assert set(search_schema["properties"]) == {"query", "date_from", "date_to", "limit",
                                                "speaker", "source", "source_kind", "folder"}
    assert all(p.get("description") for p in search_schema["properties"].values())
    assert {"results", "index", "query"} <= set(tools["plaud_search"].output_schema["properties"])


async def test_search_returns_structured_and_readable_results(home: Path) -> None:
    async with connect(home) as session:
        raw = await session.call_tool("plaud_search", {"query": "Q3 budget decision"})
    data = raw.structured_content
    assert data is not None
    top = data["results"][0]
    assert top["title"] == "Q3 budget review" and 0 < top["score"] <= 1
    assert top["moments"] and "plaud_transcript(file_id)" in top["fetch"]
    assert data["index"]["recordings"] == SAMPLE_RECORDINGS and data["index"]["last_sync"]
    text = raw.content[0].text  # type: ignore[union-attr]
    assert "Q3 budget review" in text and f'"{top["moments"][0]["snippet"]}"' in text


async def test_search_filters(home: Path) -> None:
    async with connect(home) as session:
        september = await search(session, query="budget", date_from="2026-09-01",
                                 date_to="2026-09-30")
        by_speaker = await search(session, query="PgBouncer load test", speaker="Bea")
        notes = await search(session, query="action items", source="notes", limit=3)
        transcript = await search(session, query="quartz countertops", source="transcript")
    assert september["results"] and all(r["created_at"].startswith("2026-09")
                                        for r in september["results"])
    assert all(m["speaker"] == "Bea" for r in by_speaker["results"] for m in r["moments"])
    assert len(notes["results"]) == 3
    assert all(m["source"] == "notes" for r in notes["results"] for m in r["moments"])
    moment = transcript["results"][0]["moments"][0]
    assert moment["source"] == "transcript" and moment["start"].count(":") == 2
    assert moment["speaker"] == "Rob (contractor)"


async def test_get_returns_metadata_and_snippets(home: Path) -> None:
    async with connect(home) as session:
        hit = (await search(session, query="kitchen renovation"))["results"][0]
        got = await session.call_tool("plaud_get", {"file_id": hit["file_id"]})
        focused = await session.call_tool("plaud_get", {"file_id": hit["file_id"],
                                                        "query": "electrical permit"})
    data = got.structured_content
    assert data is not None and data["title"] == "Kitchen renovation with contractor"
    assert data["speakers"] == ["Me", "Rob (contractor)"] and data["notes"] == ["Summary"]
    assert data["duration"].count(":") == 2 and 0 < len(data["snippets"]) <= 3
    assert focused.structured_content is not None
    assert "permit" in focused.structured_content["snippets"][0]["snippet"]


@pytest.mark.parametrize(("tool", "arguments", "message"), [
    ("plaud_search", {"query": ""}, "query is empty"),
    ("plaud_search", {"query": "x" * 1001}, "the most is 1000"),
    ("plaud_search", {"query": "budget", "limit": 0}, "from 1 to 25"),
    ("plaud_search", {"query": "budget", "limit": 26}, "from 1 to 25"),
    ("plaud_search", {"query": "budget", "date_from": "2026-02-30"}, "YYYY-MM-DD"),
    ("plaud_search", {"query": "budget", "date_from": "2026-03-02", "date_to": "2026-03-01"},
     "is after"),
    ("plaud_search", {"query": "budget", "source": "email"}, "source must be one of"),
    ("plaud_get", {"file_id": "no-such-id"}, "use plaud_search"),
    ("plaud_get", {"file_id": " "}, "file_id must be a file_id from plaud_search"),
])
async def test_bad_input_is_a_clear_tool_error_and_the_server_keeps_serving(
        home: Path, tool: str, arguments: dict[str, Any], message: str) -> None:
    async with connect(home) as session:
        assert message in await tool_error(session, tool, **arguments)
        assert (await search(session, query="budget"))["results"]


async def test_populated_index_answers_while_another_process_holds_the_lock(home: Path) -> None:
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sys, time; from pathlib import Path; "
        "from plaud_index.sync.lock import IndexerLock; "
        "lock = IndexerLock(Path(sys.argv[1])); assert lock.try_acquire(); print('held', "
        "flush=True); time.sleep(60)"), str(home / "indexer.lock")], stdout=subprocess.PIPE,
        text=True, cwd=REPO)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        async with connect(home) as session:
            assert (await search(session, query="offline mode"))["results"]
    finally:
        holder.kill()
        holder.wait()


async def test_empty_index_with_free_lock_syncs_in_the_background(tmp_path: Path) -> None:
    fresh = tmp_path / "fresh"
    params = StdioServerParameters(command=sys.executable, args=["-m", "plaud_index"],
                                   env={"PLAUD_INDEX_HOME": str(fresh), "PLAUD_CLIENT": "mock"},
                                   cwd=REPO)
    log = tmp_path / "server.log"
    with log.open("w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), \
                ClientSession(read, write) as session:
            await session.initialize()
            first = await session.call_tool("plaud_search",
                                            {"query": "postmortem checkout outage"})
            deadline = time.monotonic() + 300
            while time.monotonic() < deadline:  # the first commit comes at once: poll until
                result = await session.call_tool(  # every recording has landed
                    "plaud_search", {"query": "postmortem checkout outage"})
                if not result.is_error and result.structured_content["index"]["complete"]:
                    break
                await anyio.sleep(0.2)
    # an index being built is an answer (clients show a tool error as a failure)
    assert not first.is_error and first.structured_content is not None
    pending = first.structured_content
    assert pending["index"]["complete"] is False
    if not pending["index"]["recordings"]:  # (else the first commit came first: a fast one)
        assert pending["results"] == []
        assert pending["note"].startswith("Plaud index not available yet")
    data = result.structured_content
    why = f"{data and data['index']}; server log: {log.read_text()[-3000:]}"
    assert data is not None and data["index"]["complete"], why
    assert data["results"][0]["title"] == "Postmortem: checkout database outage", why
    assert data["index"]["recordings"] == SAMPLE_RECORDINGS


async def test_empty_index_while_the_indexer_runs_says_so(tmp_path: Path) -> None:
    fresh = tmp_path / "fresh"
    lock = IndexerLock(fresh / "indexer.lock")
    assert lock.try_acquire()
    try:
        async with connect(fresh, PLAUD_CLIENT="mock") as session:
            answer = await tool_result(session, "plaud_search", query="budget")
            listed = await tool_result(session, "plaud_list")
            text = (await session.call_tool("plaud_search", {"query": "budget"})).content[0]
    finally:
        lock.release()
    assert answer["results"] == [] and answer["index"]["complete"] is False
    assert answer["note"].startswith("Plaud index not available yet: the first sync is "
                                     "starting") and "ask again in 15 seconds" in answer["note"]
    assert listed["recordings"] == [] and listed["note"] == answer["note"]
    assert "PARTIAL INDEX" in text.text and "ask again in 15 seconds" in text.text  # type: ignore[union-attr]


async def test_no_index_and_nobody_signed_in_answers_with_a_sign_in_link(
        tmp_path: Path) -> None:
    async with connect(tmp_path / "nothing") as session:
        answer = await tool_result(session, "plaud_search", query="budget")
    assert answer["results"] == [] and answer["index"]["complete"] is False
    link = answer["index"]["sign_in_url"]
    assert link.startswith("https://web.plaud.ai/platform/oauth?") and "code_challenge=" in link
    assert answer["note"].startswith("Not signed in to Plaud yet. Open this link") and \
        link in answer["note"]


async def test_server_reloads_the_index_after_an_indexer_commit(home: Path,
                                                                tmp_path: Path) -> None:
    sample = (REPO / "plaud_index" / "plaud" / "sample_corpus.jsonl").read_text()
    extra = {"id": "new-recording-1", "name": "Warehouse robots pilot",
             "created_at": "2026-10-01T09:00:00Z", "duration": 30, "note": "",
             "transcript": [{"speaker": "Ivy", "start": 0, "end": 9,
                             "text": "The warehouse robots pilot starts in November."}]}
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(sample + json.dumps(extra) + "\n")
    async with connect(home) as session:
        before = await search(session, query="warehouse robots pilot")
        index_once(home, PLAUD_MOCK_CORPUS=str(corpus))
        after = await search(session, query="warehouse robots pilot")
    assert "new-recording-1" not in [r["file_id"] for r in before["results"]]
    assert after["results"][0]["file_id"] == "new-recording-1"
    assert after["index"]["recordings"] == SAMPLE_RECORDINGS + 1


def test_exits_within_2s_of_stdin_closing_and_writes_only_json_rpc(home: Path) -> None:
    server = subprocess.Popen(
        [sys.executable, "-m", "plaud_index"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL, cwd=REPO, env={**os.environ, "PLAUD_INDEX_HOME": str(home)})
    assert server.stdin is not None and server.stdout is not None
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
         "params": {"name": "plaud_search", "arguments": {"query": "budget"}}},
        {"jsonrpc": "2.0", "id": 4, "method": "tools/call",
         "params": {"name": "plaud_search", "arguments": {"query": ""}}},
    ]
    lines = []
    for message in messages:
        server.stdin.write((json.dumps(message) + "\n").encode())
        server.stdin.flush()
        if "id" in message:
            lines.append(server.stdout.readline())
    server.stdin.close()
    closed = time.monotonic()
    server.wait(timeout=10)
    assert time.monotonic() - closed < 2.0
    lines += server.stdout.readlines()
    assert len(lines) == 4
    replies = [json.loads(line) for line in lines]  # every stdout line is JSON-RPC
    assert all(r["jsonrpc"] == "2.0" and "id" in r for r in replies)
    assert replies[2]["result"]["structuredContent"]["results"]
    assert replies[3]["result"]["isError"] is True


def test_initialize_does_not_wait_for_the_model(home: Path) -> None:
    started = time.monotonic()
    server = subprocess.run(
        [sys.executable, "-m", "plaud_index"], cwd=REPO, capture_output=True, timeout=60,
        input=json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}}).encode() + b"\n",
        env={**os.environ, "PLAUD_INDEX_HOME": str(home)})
    reply = json.loads(server.stdout.splitlines()[0])
    assert reply["result"]["serverInfo"]["name"] == "plaud-index-mcp"
    assert time.monotonic() - started < 10  # generous: the bench measures the real figure
    assert b"Embedding model" not in server.stderr.split(b"serving MCP")[0]


def wait_until_it_holds_its_lifeline(pid: int) -> None:
    """The server records its parent first thing; on Linux /proc shows the death-signal
    handler once it is installed, so the test never races a sleep against start-up."""
    status = Path(f"/proc/{pid}/status")
    if not status.exists():  # not Linux: give start-up generous time instead
        time.sleep(3.0)
        return
    bit = 1 << (signal.SIGUSR1 - 1)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        caught = next((line.split()[1] for line in status.read_text().splitlines()
                       if line.startswith("SigCgt:")), "0")
        if int(caught, 16) & bit:
            return
        time.sleep(0.01)
    pytest.fail("the server never installed its parent-death handler")


def test_exits_when_its_parent_dies_even_with_stdin_open(home: Path) -> None:
    read_end, write_end = os.pipe()  # the test keeps the write end: stdin never hits EOF
    parent = subprocess.Popen(
        [sys.executable, "-c", (
            "import subprocess, sys, time; child = subprocess.Popen([sys.executable, '-m', "
            "'plaud_index'], stdin=int(sys.argv[1]), stdout=subprocess.DEVNULL, "
            "stderr=subprocess.DEVNULL, pass_fds=[int(sys.argv[1])]); "
            "print(child.pid, flush=True); time.sleep(120)"), str(read_end)],
        pass_fds=[read_end], stdout=subprocess.PIPE, text=True, cwd=REPO,
        env={**os.environ, "PLAUD_INDEX_HOME": str(home)})
    os.close(read_end)
    try:
        assert parent.stdout is not None
        server_pid = int(parent.stdout.readline())
        wait_until_it_holds_its_lifeline(server_pid)
        parent.kill()
        parent.wait()
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            try:
                os.kill(server_pid, 0)
            except ProcessLookupError:
                break
            # reap it if we inherited it as a zombie (we are not its parent: just poll)
            time.sleep(0.1)
        else:
            pytest.fail("the server outlived its parent by more than 5 s")
    finally:
        os.close(write_end)


@pytest.mark.parametrize(("arguments", "message"), [
    ({"query": "budget", "limit": True}, "limit must be an integer"),
    ({"query": "budget", "limit": "8"}, "limit must be an integer"),
    ({"query": "budget", "limit": 8.0}, "limit must be an integer"),
    ({"query": "budget", "date_from": "20250101"}, "YYYY-MM-DD"),
    ({"query": "budget", "date_to": 20250101}, "YYYY-MM-DD"),
    ({"query": "\x00\x00\x00"}, "no letters or digits"),
    ({"query": "budget", "source": ["notes"]}, "source must be one of"),
])
async def test_arguments_are_taken_as_sent_never_coerced(
        home: Path, arguments: dict[str, Any], message: str) -> None:
    async with connect(home) as session:
        assert message in await tool_error(session, "plaud_search", **arguments)


async def test_schemas_publish_the_bounds_and_long_values_are_not_echoed(home: Path) -> None:
    async with connect(home) as session:
        tools = {t.name: t for t in (await session.list_tools()).tools}
        props = tools["plaud_search"].input_schema["properties"]
        assert (props["limit"]["minimum"], props["limit"]["maximum"]) == (1, 25)
        assert props["source"]["enum"] == ["any", "transcript", "notes"]
        long_id = await tool_error(session, "plaud_get", file_id="f" * 1_000_000)
        long_date = await tool_error(session, "plaud_search", query="budget",
                                     date_from="9" * 100_000)
    assert len(long_id) < 300 and len(long_date) < 300


async def test_a_truncated_segment_is_the_same_clear_error_through_the_tool(home: Path) -> None:
    segment = next((home / "vector-index").glob("seg-*.post.npy"))
    segment.write_bytes(segment.read_bytes()[:100])
    async with connect(home) as session:
        message = await tool_error(session, "plaud_search", query="budget")
    assert f"The index file {segment} is damaged" in message and "rebuilds it" in message
