"""The one rendering: readable, and safe for a terminal whatever the recording says."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from plaud_index.render.answers import printable, render_search
from plaud_index.results import Hit, IndexInfo, Moment, SearchResult

REPO = Path(__file__).resolve().parent.parent


def test_control_characters_never_reach_the_terminal() -> None:
    moment = Moment("00:00:01", 1000, 2000, "A\x07nn", "transcript", "bell\x07 and \x1b[2J")
    hit = Hit("f1", "Evil\x1b]0;owned\x07 title", "2026-03-02T10:00:00+00:00", 0.5,
              "s", (moment,), "fetch")
    text = render_search(SearchResult("q\x00", (hit,), IndexInfo(1, 1, None, None)))
    assert "\x1b" not in text and "\x07" not in text and "\x00" not in text
    assert "Evil]0;owned title" in text and "\n" in text
    assert printable("a\tb\nc\x9bd") == "a\tb\ncd"


def test_the_cli_prints_clean_titles_from_a_hostile_corpus(tmp_path: Path) -> None:
    record = {"id": "evil", "name": "Evil\x1b[31m red\x07", "created_at": "2026-03-02T10:00:00Z",
              "duration": 10, "transcript": [{"speaker": "A", "start": 0, "end": 5,
                                              "text": "zebra crossing budget"}], "note": ""}
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(json.dumps(record) + "\n")
    env = {"PLAUD_INDEX_HOME": str(tmp_path / "home"), "PLAUD_CLIENT": "mock",
           "PLAUD_EMBEDDER": "mock", "PLAUD_MOCK_CORPUS": str(corpus), "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-m", "plaud_index", "search", "zebra"], cwd=REPO,
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "Evil[31m red" in done.stdout and "\x1b" not in done.stdout
