"""A Markdown list of any length comes back from the index item by item, each with its
owner: 1 to 300 items of 40 to 200 characters, chunked with the estimate and with the real
model's tokenizer, and end to end through the stdio server with the real model."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from helpers import mcp_session, write_corpus
from hypothesis import given, settings
from hypothesis import strategies as st

from plaud_index.chunker import Chunker, estimate_tokens
from plaud_index.index.records import ChunkRow
from plaud_index.models import NoteSection, Recording
from plaud_index.plaud.notes import split_markdown_sections
from plaud_index.search.notes import items_of, rebuild

REPO = Path(__file__).resolve().parent.parent
WORDS = ("review", "the", "budget", "forecast", "send", "deck", "to", "finance", "by",
         "Friday", "vendor", "contract", "warehouse", "robots", "rollout", "Q3", "hiring")


def action_items(n: int, seed: int, shortest: int = 40, longest: int = 200) -> list[str]:
    """``n`` lines ``- PersonJ: …`` of ``shortest``..``longest`` characters, as Plaud
    writes them."""
    rnd = random.Random(seed)
    lines = []
    for j in range(n):
        size = rnd.randint(shortest, longest)
        line = f"- Person{j}: do task number {j}"
        while len(line) < size:
            line += " " + rnd.choice(WORDS)
        lines.append(line[:size].rstrip())
    return lines


def note(lines: list[str]) -> str:
    return ("# Summary\nThe team met about the rollout.\n\n## Action items\n" +
            "\n".join(lines) + "\n\n## Decisions\n- Keep the March date.\n")


def items_back(markdown: str, chunker: Chunker, section: str | None = "action items"
               ) -> list[tuple[str, str | None]]:
    sections = tuple(NoteSection("Summary", heading, body)
                     for heading, body in split_markdown_sections(markdown))
    recording = Recording("f" * 32, "Weekly", datetime(2026, 11, 2, tzinfo=timezone.utc),
                          None, 3_600_000, (), sections)
    rows = [ChunkRow.from_chunk(c) for c in chunker.chunk(recording) if c.source == "notes"]
    return [(item.text, item.owner) for item in items_of(rebuild(rows), section)]


def expected(lines: list[str]) -> list[tuple[str, str | None]]:
    return [(line[2:], f"Person{j}") for j, line in enumerate(lines)]


@pytest.mark.parametrize("n", [1, 2, 5, 20, 30, 75, 300])
@pytest.mark.parametrize("lengths", [(40, 80), (40, 200), (150, 200)])
def test_every_item_of_a_long_list_comes_back_with_its_owner(
        n: int, lengths: tuple[int, int]) -> None:
    lines = action_items(n, seed=n, shortest=lengths[0], longest=lengths[1])
    assert items_back(note(lines), Chunker(estimate_tokens)) == expected(lines)


@pytest.mark.parametrize("n", [20, 300])
def test_every_item_comes_back_when_the_real_tokenizer_cuts_the_windows(
        n: int, real_embedder: Any) -> None:
    lines = action_items(n, seed=7)
    chunker = Chunker(real_embedder.count_tokens, max_tokens=real_embedder.max_tokens)
    assert items_back(note(lines), chunker) == expected(lines)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 12), st.integers(40, 200)), min_size=1,
                max_size=5), st.integers(0, 10_000))
def test_every_line_of_every_section_comes_back_once_and_in_order(
        shape: list[tuple[int, int]], seed: int) -> None:
    """Sections of lists and paragraphs of any sizes, the whole note read back."""
    rnd = random.Random(seed)
    markdown, wanted = "# Minutes\n", []
    for k, (n, longest) in enumerate(shape):
        markdown += f"## Part {k}\n"
        paragraphs = []
        for _ in range(rnd.randint(1, 3)):
            lines = action_items(n, rnd.randrange(1 << 30), shortest=40, longest=longest)
            paragraphs.append("\n".join(lines))
            wanted += [line[2:] for line in lines]
        markdown += "\n\n".join(paragraphs) + "\n"
    got = [text for text, _ in items_back(markdown, Chunker(estimate_tokens), None)]
    assert got == wanted


def test_three_hundred_action_items_through_the_server_with_the_real_model(
        tmp_path: Path) -> None:
    """The index built by ``indexer --once`` with the real model, read by ``plaud_notes``
    through the SDK's stdio client, every page followed."""
    import anyio

    lines = action_items(300, seed=3)
    short = action_items(30, seed=4, shortest=40, longest=60)
    corpus = [{"id": "long", "name": "Planning", "created_at": "2026-11-02T15:00:00Z",
               "duration": 60, "transcript": [{"speaker": "Ann", "start": 0, "end": 5,
                                               "text": "Let's plan."}], "note": note(lines)},
              {"id": "short", "name": "Standup", "created_at": "2026-11-03T15:00:00Z",
               "duration": 60, "transcript": [], "note": note(short)}]
    env = {**os.environ, "PLAUD_INDEX_HOME": str(tmp_path / "home"), "PLAUD_CLIENT": "mock",
           "PLAUD_TIMEZONE": "UTC",
           "PLAUD_MOCK_CORPUS": str(write_corpus(tmp_path / "corpus.jsonl", corpus))}
    subprocess.run([sys.executable, "-m", "plaud_index", "indexer", "--once"], check=True,
                   capture_output=True, cwd=REPO, timeout=600, env=env)

    async def read_all() -> dict[str, list[tuple[str, str | None]]]:
        found: dict[str, list[tuple[str, str | None]]] = {}
        async with mcp_session(env) as session:
            cursor = None
            while True:
                result = await session.call_tool("plaud_notes", {
                    "section": "action items", "cursor": cursor})
                assert not result.is_error, result.content
                page = result.structured_content
                for rec in page["recordings"]:
                    found.setdefault(rec["file_id"], []).extend(
                        (i["text"], i["owner"]) for i in rec["items"])
                cursor = page["next_cursor"]
                if cursor is None:
                    return found

    found = anyio.run(read_all)
    assert found["long"] == expected(lines)
    assert found["short"] == expected(short)
