"""plaud_list, plaud_get(at=…) and the user's clock, through the SDK's stdio client."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from helpers import tool_error, tool_result, write_corpus
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

REPO = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def meeting(file_id: str, when: str, speakers: list[str], turns: int, note: str | None,
            words: str = "the budget plan") -> dict[str, Any]:
    transcript = [{"speaker": speakers[i % len(speakers)], "start": i * 10.0,
                   "end": i * 10.0 + 8, "text": f"Turn {i} on {words}."} for i in range(turns)]
    return {"id": file_id, "name": f"Meeting {file_id}", "created_at": when,
            "duration": turns * 10, "transcript": transcript, "note": note or ""}


CORPUS = [
    meeting("ny-evening", "2026-07-09T01:30:00Z", ["Marcus", "Dana"], 120,
            "## Summary\nMarcus walked through the Q3 budget."),
    meeting("utc-evening", "2026-07-08T20:00:00Z", ["Ann"], 6, None),
    meeting("tokyo-morning", "2026-07-08T23:30:00Z", ["Kenji", "Ann"], 6,
            "## Summary\nKenji's morning sync."),
    meeting("notes-only", "2026-07-07T12:00:00Z", [], 0, "## Summary\nOnly a note."),
    *[meeting(f"older-{i}", f"2026-06-{10 + i:02d}T12:00:00Z", ["Bo"], 3, None)
      for i in range(5)],
]


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("browse")
    write_corpus(root / "corpus.jsonl", CORPUS)
    subprocess.run([sys.executable, "-m", "plaud_index", "indexer", "--once"], check=True,
                   capture_output=True, cwd=REPO, timeout=300, env={**os.environ, **env(root)})
    return root


def env(home: Path, **extra: str) -> dict[str, str]:
    return {"PLAUD_INDEX_HOME": str(home / "home"), "PLAUD_CLIENT": "mock",
            "PLAUD_MOCK_CORPUS": str(home / "corpus.jsonl"), "PLAUD_EMBEDDER": "mock",
            **extra}


@asynccontextmanager
async def connect(home: Path, **extra: str) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(command=sys.executable, args=["-m", "plaud_index"],
                                   env=env(home, **extra), cwd=REPO)
    with open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), \
                ClientSession(read, write) as session:
            await session.initialize()
            yield session




async def test_five_tools_each_with_an_output_schema_and_when_to_use_it(home: Path) -> None:
    async with connect(home) as session:
        tools = {t.name: t for t in (await session.list_tools()).tools}
    reading = {"plaud_search", "plaud_list", "plaud_get", "plaud_transcript", "plaud_notes"}
    assert reading <= set(tools)
    for tool in (tools[name] for name in reading):
        assert tool.output_schema and tool.annotations and tool.annotations.read_only_hint
    assert "yesterday" in str(tools["plaud_list"].description)
    assert "at=" in str(tools["plaud_search"].description)
    assert {"at", "at_ms", "window"} <= set(tools["plaud_get"].input_schema["properties"])
    assert set(tools["plaud_list"].input_schema["properties"]) == {
        "date_from", "date_to", "limit", "speaker", "source", "cursor", "source_kind", "folder"}
    assert "whole transcript" in str(tools["plaud_transcript"].description)
    assert "action items" in str(tools["plaud_notes"].description)
    assert set(tools["plaud_notes"].input_schema["properties"]) == {
        "file_id", "date_from", "date_to", "section", "folder", "speaker", "cursor"}


async def test_a_new_york_evening_is_listed_and_shown_on_its_local_day(home: Path) -> None:
    async with connect(home, PLAUD_TIMEZONE="America/New_York") as session:
        day = await tool_result(session, "plaud_list", date_from="2026-07-08", date_to="2026-07-08")
        found = await tool_result(session, "plaud_search", query="budget", date_from="2026-07-08",
                                  date_to="2026-07-08")
    assert [r["file_id"] for r in day["recordings"]] == ["ny-evening", "tokyo-morning",
                                                         "utc-evening"]
    evening = day["recordings"][0]
    assert evening["created_at"] == "2026-07-08T21:30:00-04:00"
    assert evening["created_at_utc"] == "2026-07-09T01:30:00+00:00"
    assert evening["summary"] == "Marcus walked through the Q3 budget."
    assert day["today"]["timezone"] == "America/New_York"
    assert day["today"]["utc_offset"] in ("-04:00", "-05:00")
    assert {h["file_id"] for h in found["results"]} <= {"ny-evening", "utc-evening",
                                                       "tokyo-morning"}
    assert found["today"]["timezone"] == "America/New_York"


async def test_east_of_utc_from_the_system_zone(home: Path) -> None:
    async with connect(home, TZ="Asia/Tokyo") as session:
        day = await tool_result(session, "plaud_list", date_from="2026-07-09", date_to="2026-07-09")
    assert [r["file_id"] for r in day["recordings"]] == ["ny-evening", "tokyo-morning",
                                                         "utc-evening"]
    assert day["recordings"][1]["created_at"] == "2026-07-09T08:30:00+09:00"
    assert day["today"]["timezone"] == "Asia/Tokyo" and day["today"]["utc_offset"] == "+09:00"


async def test_recent_n_and_paging_to_the_end(home: Path) -> None:
    async with connect(home) as session:
        recent = await tool_result(session, "plaud_list", limit=2)
        pages, cursor = [], None
        for _ in range(10):
            args: dict[str, Any] = {"limit": 3} if cursor is None else {"limit": 3,
                                                                        "cursor": cursor}
            page = await tool_result(session, "plaud_list", **args)
            pages.append([r["file_id"] for r in page["recordings"]])
            cursor = page["next_cursor"]
            if cursor is None:
                break
        bad = await tool_error(session, "plaud_list", cursor="garbage!")
        too_many = await tool_error(session, "plaud_list", limit=51)
    assert [r["file_id"] for r in recent["recordings"]] == ["ny-evening", "tokyo-morning"]
    assert recent["matched"] == len(CORPUS) and recent["next_cursor"]
    flat = [f for p in pages for f in p]
    assert len(flat) == len(set(flat)) == len(CORPUS) and [len(p) for p in pages] == [3, 3, 3]
    assert "not one plaud_list returned" in bad and "from 1 to 50" in too_many


async def test_list_filters(home: Path) -> None:
    async with connect(home) as session:
        kenji = await tool_result(session, "plaud_list", speaker="kenji")
        notes = await tool_result(session, "plaud_list", source="notes")
    assert [r["file_id"] for r in kenji["recordings"]] == ["tokyo-morning"]
    assert {r["file_id"] for r in notes["recordings"]} == {"ny-evening", "tokyo-morning",
                                                          "notes-only"}


async def test_reading_around_a_moment_at_the_start_middle_and_end(home: Path) -> None:
    async with connect(home) as session:
        start = await tool_result(session, "plaud_get", file_id="ny-evening", at="00:00:00",
                                  window=20)
        middle = await tool_result(session, "plaud_get", file_id="ny-evening", at="00:10:00",
                                   window=15)
        end = await tool_result(session, "plaud_get", file_id="ny-evening", at_ms=1_195_000,
                                window=30)
        text = (await session.call_tool("plaud_get", {"file_id": "ny-evening",
                                                      "at": "10:00", "window": 5})).content
    assert [u["start"] for u in start["around"]["utterances"]] == [
        "00:00:00", "00:00:10", "00:00:20"]
    assert [u["speaker"] for u in middle["around"]["utterances"]] == [
        "Marcus", "Dana", "Marcus", "Dana"]  # 09:40 (in progress at 09:45) .. 10:10
    assert middle["around"]["utterances"][2] == {"start": "00:10:00", "start_ms": 600_000,
                                                 "speaker": "Marcus",
                                                 "text": "Turn 60 on the budget plan."}
    assert end["around"]["utterances"][-1]["start"] == "00:19:50"
    assert middle["snippets"] == [] and not middle["around"]["truncated"]
    assert "[00:10:00] Marcus: Turn 60 on the budget plan." in text[0].text  # type: ignore


async def test_windows_are_capped_and_bad_moments_are_clear_errors(home: Path) -> None:
    async with connect(home) as session:
        wide = await tool_result(session, "plaud_get", file_id="ny-evening", at="00:10:00",
                                 window=900)
        notes = await tool_error(session, "plaud_get", file_id="notes-only", at="00:00:10")
        past = await tool_error(session, "plaud_get", file_id="utc-evening", at="00:05:00")
        junk = await tool_error(session, "plaud_get", file_id="ny-evening", at="ten past")
        lonely = await tool_error(session, "plaud_get", file_id="ny-evening", window=30)
    around = wide["around"]
    assert around["truncated"] and around["max_chars"] == 4000
    assert sum(len(u["text"]) + len(u["speaker"]) + 2 for u in around["utterances"]) <= 4000
    assert "has no transcript in the index" in notes
    assert "past the end of 'Meeting utc-evening' (00:01:00 long)" in past
    assert "at must be a time in the recording" in junk
    assert "window needs at" in lonely
