"""plaud_transcript and plaud_notes through the SDK's stdio client, and their CLI commands:
a whole 120-utterance meeting page by page, action items across a month by what their
headings mean, a recording's notes whole."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import mcp_session, tool_result, write_corpus

from plaud_index.results import NoteItem
from plaud_index.search.notes import Section, items_of, matches, paginate

REPO = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.anyio
TALK = ("we went through the rollout plan for the warehouse robots, the budget for the "
        "second site and who talks to the vendor about the maintenance contract")


def meeting(file_id: str, day: str, note: str, utterances: int = 6) -> dict[str, Any]:
    return {"id": file_id, "name": f"Meeting {file_id}", "created_at": f"{day}T15:00:00Z",
            "duration": utterances * 10,
            "transcript": [{"speaker": f"Speaker {k % 3 + 1}", "start": k * 10.0,
                            "end": k * 10.0 + 9, "text": f"Utterance {k}: {TALK}."}
                           for k in range(utterances)],
            "note": note}


CORPUS = [
    meeting("kickoff", "2026-11-02", "# Summary\nKickoff of the robots pilot.\n"
            "## Action items\n- Ann: send the deck\n- Book the room (Bo)\n"
            "## Decisions\n- Ship in March", utterances=120),
    meeting("vendor", "2026-11-10", "## To-dos\n- @carla review the contract\n"
            "## Risks\n- The vendor may slip"),
    meeting("retro", "2026-11-20", "## Next steps\n- **Dev Team**: migrate the queue\n"
            "## Summary\nThe retro went well."),
    meeting("client", "2026-11-25", "## Follow-ups\n- Call the client (owner: Erin)\n"
            "## Notes\n- Coffee was bad"),
    meeting("october", "2026-10-01", "## Action items\n- An item from October"),
    {**meeting("memo", "2026-11-12", "## Summary\nA voice memo about hiring."),
     "transcript": []},
]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("reading")
    values = {"PLAUD_INDEX_HOME": str(root / "home"), "PLAUD_CLIENT": "mock",
              "PLAUD_EMBEDDER": "mock", "PLAUD_TIMEZONE": "UTC",
              "PLAUD_MOCK_CORPUS": str(write_corpus(root / "corpus.jsonl", CORPUS))}
    subprocess.run([sys.executable, "-m", "plaud_index", "indexer", "--once"], check=True,
                   capture_output=True, cwd=REPO, timeout=300, env={**os.environ, **values})
    return values


async def test_a_whole_transcript_comes_in_pages_of_whole_utterances(
        env: dict[str, str]) -> None:
    pages, texts = [], []
    async with mcp_session({**os.environ, **env}) as session:
        cursor = None
        while True:
            result = await session.call_tool("plaud_transcript",
                                             {"file_id": "kickoff", "cursor": cursor})
            assert not result.is_error, result.content
            pages.append(result.structured_content)
            texts.append(result.content[0].text)  # type: ignore[union-attr]
            cursor = pages[-1]["next_cursor"]
            if cursor is None:
                break
        memo = await tool_result(session, "plaud_transcript", file_id="memo")
    spoken = [u for page in pages for u in page["utterances"]]
    assert [u["text"] for u in spoken] == [f"Utterance {k}: {TALK}." for k in range(120)]
    assert [u["speaker"] for u in spoken[:3]] == ["Speaker 1", "Speaker 2", "Speaker 3"]
    assert spoken[119]["start"] == "00:19:50"
    assert len(pages) >= 2 and all(len(text) <= 12_000 for text in texts)
    assert [p["first"] for p in pages] == [sum(len(q["utterances"]) for q in pages[:i])
                                           for i in range(len(pages))]
    assert all(p["total"] == 120 for p in pages)
    assert memo["utterances"] == [] and "only notes" in memo["note"]


async def test_action_items_across_a_month_by_what_their_headings_mean(
        env: dict[str, str]) -> None:
    async with mcp_session({**os.environ, **env}) as session:
        month = await tool_result(session, "plaud_notes", section="action items",
                                  date_from="2026-11-01", date_to="2026-11-30")
        whole = await tool_result(session, "plaud_notes", file_id="kickoff")
        risks = await tool_result(session, "plaud_notes", section="risks")
    found = {(r["file_id"], i["text"], i["owner"]) for r in month["recordings"]
             for i in r["items"]}
    assert found == {("kickoff", "Ann: send the deck", "Ann"),
                     ("kickoff", "Book the room (Bo)", "Bo"),
                     ("vendor", "@carla review the contract", "carla"),
                     ("retro", "**Dev Team**: migrate the queue", "Dev Team"),
                     ("client", "Call the client (owner: Erin)", "Erin")}
    assert [r["file_id"] for r in month["recordings"]] == ["client", "retro", "vendor",
                                                           "kickoff"]  # newest first
    assert month["recordings"][0]["title"] == "Meeting client"
    assert month["recordings"][0]["created_at"].startswith("2026-11-25T15:00:00")
    assert [(i["heading"], i["text"]) for i in whole["recordings"][0]["items"]] == [
        ("Summary", "Kickoff of the robots pilot."),
        ("Summary > Action items", "Ann: send the deck"),
        ("Summary > Action items", "Book the room (Bo)"),
        ("Summary > Decisions", "Ship in March")]
    assert [i["text"] for r in risks["recordings"] for i in r["items"]] == [
        "The vendor may slip"]


def test_the_cli_reads_transcripts_and_notes_too(env: dict[str, str]) -> None:
    def cli(*args: str) -> str:
        done = subprocess.run([sys.executable, "-m", "plaud_index", *args], cwd=REPO,
                              capture_output=True, text=True, timeout=120,
                              env={**os.environ, **env})
        assert done.returncode == 0, done.stderr
        return done.stdout

    first = json.loads(cli("transcript", "kickoff", "--json"))
    second = json.loads(cli("transcript", "kickoff", "--cursor", first["next_cursor"],
                            "--json"))
    assert second["first"] == len(first["utterances"])
    assert "[00:00:00] Speaker 1: Utterance 0:" in cli("transcript", "kickoff")
    text = cli("notes", "--section", "next steps", "--from", "2026-11-01")
    assert "Meeting retro" in text and "migrate the queue  [owner: Dev Team]" in text
    assert "Meeting kickoff" in text  # "Action items" means next steps too
    assert "Coffee" not in text and "October" not in text


@pytest.mark.parametrize(("heading", "wanted", "expected"), [
    ("Summary > Action items", "action items", True),
    ("Zusammenfassung > Nächste Schritte", "action items", True),
    ("会议纪要 > 待办事项", "action items", True),
    ("Resumen > Próximos pasos", "action items", True),
    ("Summary > Next steps for Q3", "action items", True),
    ("Summary > Transactions", "action items", False),  # "actions" only as a whole word
    ("Summary > Key decisions", "decisions", True),
    ("Summary > Decisions", "action items", False),
    ("Meeting report > Budget", "budget", True),  # any other words: in the heading
])
def test_a_section_is_found_by_what_its_heading_means(heading: str, wanted: str,
                                                      expected: bool) -> None:
    assert matches(Section("Summary", heading, "note", (("x", None),)), wanted) is expected


def test_pages_hold_at_least_one_item_and_end_inside_a_long_recording() -> None:
    items = {i: [NoteItem(f"item {i}.{k} " + "x" * 50, "S", "S", "note")
                 for k in range(5)] for i in range(3)}
    page = paginate([0, 1, 2], items.__getitem__, None, max_chars=400)
    assert [(i, len(got), more) for i, got, more in page.recordings] == [(0, 4, True)]
    rest = paginate([0, 1, 2], items.__getitem__, page.next_at, max_chars=400)
    assert rest.recordings[0][1][0].text.startswith("item 0.4")
    assert items_of([], None) == []
