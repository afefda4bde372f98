"""Hundreds of hostile arguments to ``plaud_transcript`` and ``plaud_notes`` through one
stdio session: every call answers within its time, a failure is one line of ours (never an
empty "Error executing tool"), the server logs no traceback and still ends with its
client. Forged cursors in particular: every cursor we did not issue says to start again."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from helpers import write_corpus
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from plaud_index.search import cursors

REPO = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.anyio
CALL_S = 30.0


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def b64(raw: str | bytes) -> str:
    data = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


VALUES: list[Any] = [
    None, "", " ", "\n", "\x00", "\x1b[31m", "\u202e", "\ufffd", "💥", "ǅ", "²", "٣",
    "a" * 5000, 0, -1, 10**30, 1.5, float("nan"), True, [], [1], {}, {"a": 1},
    "'; DROP TABLE x; --", "../../etc/passwd", "%00", "\\u0000", "null", "NaN",
]


def forged_cursors(file_id: str) -> list[str]:
    """What a model (or anyone) might send as a cursor: our shape with bad parts, other
    shapes, broken encodings."""
    instant = "2026-11-02T15:00:00+00:00"
    parts = ["²", "-1", "-1000000", "1e3", "0x10", "٣", " 1", "1 ", "+1", "99999999999",
             "", "1.0", "१२"]
    found = [b64(f"{p}|{file_id}") for p in parts]  # transcript: offset|id
    found += [b64(f"{p}|{instant}|{file_id}") for p in parts]  # notes: offset|instant|id
    found += [b64(f"0|{t}|{file_id}") for t in ("2026-11-02T15:00:00", "not a time",
                                                "2026-13-40T99:00:00+00:00", "", "0",
                                                "9999-12-31T23:59:59+14:00")]
    found += [b64(x) for x in ("", "|", "||", "|||", "0", "0|", "|x", "0|other-id",
                               b"\xff\xfe", "\ud800|x", "0|\x00")]
    found += ["!!!", "====", "a", "a" * 1001, "%%", "\u00e9", "0|kickoff", " "]
    return found


def hostile_calls(file_id: str) -> list[tuple[str, dict[str, Any]]]:
    calls: list[tuple[str, dict[str, Any]]] = []
    for value in VALUES:
        calls.append(("plaud_transcript", {"file_id": value}))
        calls.append(("plaud_transcript", {"file_id": file_id, "cursor": value}))
        for name in ("file_id", "date_from", "date_to", "section", "folder", "speaker",
                     "cursor"):
            calls.append(("plaud_notes", {name: value}))
    for cursor in forged_cursors(file_id):
        calls.append(("plaud_transcript", {"file_id": file_id, "cursor": cursor}))
        calls.append(("plaud_notes", {"cursor": cursor}))
        calls.append(("plaud_notes", {"file_id": file_id, "cursor": cursor}))
    calls += [("plaud_notes", {"date_from": "2026-12-01", "date_to": "2026-01-01"}),
              ("plaud_notes", {"file_id": file_id, "date_from": "2026-01-01"}),
              ("plaud_notes", {"unknown_argument": 1}),
              ("plaud_transcript", {}),
              ("plaud_transcript", {"file_id": file_id, "cursor": None, "extra": []})]
    return calls


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("hostile")
    meeting = {"id": "kickoff", "name": "Kickoff", "created_at": "2026-11-02T15:00:00Z",
               "duration": 600, "note": "# Summary\nKickoff.\n## Action items\n- Ann: deck",
               "transcript": [{"speaker": "Ann", "start": k * 10.0, "end": k * 10.0 + 9,
                               "text": f"Utterance {k} about the warehouse robots."}
                              for k in range(60)]}
    env = {"PLAUD_INDEX_HOME": str(root / "home"), "PLAUD_CLIENT": "mock",
           "PLAUD_EMBEDDER": "mock", "PLAUD_TIMEZONE": "UTC",
           "PLAUD_MOCK_CORPUS": str(write_corpus(root / "corpus.jsonl", [meeting]))}
    subprocess.run([sys.executable, "-m", "plaud_index", "indexer", "--once"], check=True,
                   capture_output=True, cwd=REPO, timeout=300, env={**os.environ, **env})
    return {**env, "LOG": str(root / "server.log")}


async def test_hostile_arguments_get_one_line_each_and_no_traceback(
        served: dict[str, str]) -> None:
    calls = hostile_calls("kickoff")
    assert len(calls) >= 200
    env = {**os.environ, **{k: v for k, v in served.items() if k != "LOG"}}
    params = StdioServerParameters(command=sys.executable, args=["-m", "plaud_index"],
                                   env=env, cwd=REPO)
    failures, answered = [], 0
    with open(served["LOG"], "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), \
                ClientSession(read, write) as session:
            await session.initialize()
            for tool, arguments in calls:
                with anyio.fail_after(CALL_S):  # a hang fails the test here
                    result = await session.call_tool(tool, arguments)
                text = result.content[0].text if result.content else ""  # type: ignore[union-attr]
                if not result.is_error:
                    answered += 1
                    continue
                detail = text.removeprefix(f"Error executing tool {tool}").lstrip(": ")
                if "\n" in text or not detail or "failed inside the server" in text:
                    failures.append((tool, json.dumps(arguments)[:80], text[:200]))
            # the server still serves, and the session then ends as a client ends it
            still = await session.call_tool("plaud_transcript", {"file_id": "kickoff"})
            assert not still.is_error
    log = Path(served["LOG"]).read_text()
    assert not failures, failures[:10]
    assert "Traceback" not in log, log[-3000:]
    assert answered > 10  # (the harmless ones answer: empty filters, our own cursors)


@pytest.mark.parametrize("forged", [b64("²|kickoff"), b64("-5|kickoff"),
                                    b64("1\u0663|kickoff"), b64("1e3|kickoff")])
def test_a_forged_transcript_cursor_says_to_start_again(forged: str) -> None:
    from plaud_index.errors import InvalidQueryError
    from plaud_index.search.transcript import decode_offset

    with pytest.raises(InvalidQueryError, match="leave it out to start at the beginning"):
        decode_offset(forged, "kickoff")


def test_a_notes_cursor_with_a_naive_time_or_a_negative_offset_is_refused() -> None:
    from plaud_index.errors import InvalidQueryError
    from plaud_index.search.notes import decode_position

    for forged in (cursors.encode(0, "2026-11-02T15:00:00", "kickoff"),
                   cursors.encode(-1, "2026-11-02T15:00:00+00:00", "kickoff"),
                   cursors.encode(-1000000, "2026-11-02T15:00:00+00:00", "kickoff")):
        with pytest.raises(InvalidQueryError, match="leave it out to start from the newest"):
            decode_position(forged)
    assert decode_position(cursors.encode(3, "2026-11-02T15:00:00+00:00", "kickoff")) == (
        "2026-11-02T15:00:00+00:00", "kickoff", 3)
