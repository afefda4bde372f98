"""search: validation, filters before ranking, per-recording collapse, snippets, scores."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import date
from pathlib import Path

import numpy as np
import pytest
from helpers import build_snapshot, detail
from hypothesis import given, settings
from hypothesis import strategies as st

from plaud_index.embedding.embedder import HashEmbedder
from plaud_index.errors import InvalidQueryError
from plaud_index.index.analyzer import query_terms, tokenize
from plaud_index.index.manifest import ModelInfo
from plaud_index.index.records import ChunkRow
from plaud_index.index.snapshot import SOURCE_CODES, Columns, Snapshot
from plaud_index.index.store import open_snapshot
from plaud_index.index.writer import open_writer
from plaud_index.search.rank import RELEVANCE_FLOOR, filter_mask, make_request, rank, search
from plaud_index.search.snippets import make_snippet

EMBEDDER = HashEmbedder()


def seg(start: int, text: str, speaker: str) -> dict[str, object]:
    return {"start_time": start, "end_time": start + 5000, "content": text, "speaker": speaker}


RECORDINGS = [
    detail("jan", name="January planning", created_at="2026-01-10T09:00:00", segments=[
        seg(0, "We set the annual budget for marketing and engineering.", "Ann"),
        seg(6000, "The budget for travel stays flat this year.", "Bo"),
    ], note="## Summary\nAnnual budget agreed."),
    detail("feb", name="February sync", created_at="2026-02-14T09:00:00", segments=[
        seg(0, "The hiring plan needs two backend engineers.", "Cy"),
        seg(6000, "We also touched on the budget briefly.", "Ann"),
    ]),
    detail("mar", name="March review", created_at="2026-03-20T09:00:00", segments=[
        seg(0, "Database outage postmortem: the connection pool was too large.", "Dee"),
        seg(6000, "Action item: add a connection alert.", "Bo"),
    ]),
]


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory: pytest.TempPathFactory) -> Snapshot:
    return build_snapshot(tmp_path_factory.mktemp("index"), RECORDINGS, segment_each=True)


def run(snapshot: Snapshot, query: str, **kw: object) -> list[str]:
    request = make_request(query, **kw)  # type: ignore[arg-type]
    return [h.file_id for h in search(snapshot, request, EMBEDDER.embed([query])[0])]


@pytest.mark.parametrize("kwargs", [
    {"query": ""}, {"query": "   "}, {"query": "x" * 1001},
    {"query": "q", "limit": 0}, {"query": "q", "limit": 26}, {"query": "q", "limit": "5"},
    {"query": "q", "limit": True},
    {"query": "q", "date_from": "2026-13-01"}, {"query": "q", "date_to": "March"},
    {"query": "q", "date_from": "2026-03-02", "date_to": "2026-03-01"},
    {"query": "q", "source": "audio"}, {"query": "q", "mode": "magic"},
])
def test_bad_arguments_raise_a_clear_error(kwargs: dict[str, object]) -> None:
    with pytest.raises(InvalidQueryError):
        make_request(**kwargs)  # type: ignore[arg-type]


def test_request_defaults() -> None:
    request = make_request(" budget ")
    assert (request.query, request.limit, request.source, request.mode) == \
        ("budget", 8, "any", "hybrid")


def test_one_result_per_recording_best_first(snapshot: Snapshot) -> None:
    ids = run(snapshot, "budget")
    assert ids[0] == "jan" and len(ids) == len(set(ids))


def test_each_mode_finds_the_obvious_recording(snapshot: Snapshot) -> None:
    for mode in ("hybrid", "vector", "keyword"):
        assert run(snapshot, "database outage connection pool", mode=mode)[0] == "mar"


def test_date_filter_applies_before_ranking(snapshot: Snapshot) -> None:
    # feb is a weak budget match, but the only one in February: it must be returned.
    assert run(snapshot, "budget", date_from="2026-02-01", date_to="2026-02-28") == ["feb"]
    assert run(snapshot, "budget", date_to=date(2026, 1, 10)) == ["jan"]
    assert run(snapshot, "budget", date_from="2026-04-01") == []


def test_speaker_filter(snapshot: Snapshot) -> None:
    assert run(snapshot, "budget", speaker="cy") == ["feb"]
    assert run(snapshot, "budget", speaker="nobody") == []


def test_source_filter(snapshot: Snapshot) -> None:
    assert run(snapshot, "annual budget agreed", source="notes") == ["jan"]
    hits = search(snapshot, make_request("budget", source="transcript"),
                  EMBEDDER.embed(["budget"])[0])
    assert all(m.source == "transcript" for h in hits for m in h.moments)


def test_limit_caps_recordings(snapshot: Snapshot) -> None:
    assert len(run(snapshot, "the", limit=1, mode="vector")) == 1


def test_hits_carry_moments_with_times_speakers_and_scores(snapshot: Snapshot) -> None:
    hit = search(snapshot, make_request("connection alert", source="transcript"),
                 EMBEDDER.embed(["connection alert"])[0])[0]
    assert hit.file_id == "mar" and hit.title == "March review"
    assert hit.created_at.startswith("2026-03-20")
    assert 0 < hit.score <= 1
    moment = hit.moments[0]
    assert moment.start_ms == 6000 and moment.speaker == "Bo"  # the matching utterance
    assert "connection alert" in moment.snippet


def test_scores_are_in_range_and_sorted(snapshot: Snapshot) -> None:
    for mode in ("hybrid", "vector", "keyword"):
        hits = search(snapshot, make_request("budget engineers", mode=mode),
                      EMBEDDER.embed(["budget engineers"])[0])
        scores = [h.score for h in hits]
        assert scores == sorted(scores, reverse=True)
        assert all(0 <= s <= 1 for s in scores)


def test_hybrid_without_a_query_vector_falls_back_to_keywords(snapshot: Snapshot) -> None:
    hits = search(snapshot, make_request("outage"), None)
    assert [h.file_id for h in hits] == ["mar"]


def test_snippet_is_centred_on_the_match() -> None:
    text = " ".join(["filler"] * 200) + " the quarterly budget decision " + \
        " ".join(["padding"] * 200)
    snippet, centre = make_snippet(text, set(query_terms("budget decision")))
    assert "budget decision" in snippet
    assert snippet.startswith("…") and snippet.endswith("…")
    assert len(snippet) <= 245
    assert abs(centre - text.index("budget")) < 40


def test_a_match_by_meaning_only_quotes_the_line_its_moment_names() -> None:
    """No query word in the passage (a Japanese question matched by its vector): the
    moment is the passage's first line, and the quote opens with that line's speaker."""
    lines = ["佐藤: " + "来期の予算について話しましょう。" * 6,
             "田中: " + "はい、まず人件費から確認します。" * 6,
             "佐藤: " + "広告費は前年並みでお願いします。" * 6]
    text = "\n".join(lines)
    snippet, match = make_snippet(text, set(query_terms("budget")))
    assert text.count("\n", 0, match) == 0 and snippet.startswith("佐藤:")


def test_short_text_snippet_is_the_text() -> None:
    assert make_snippet("Short  text.", {"short"})[0] == "Short text."


def test_tokenize_stems_and_drops_stopwords() -> None:
    assert tokenize("The budgets were discussed and planning continues") == \
        ["budget", "discuss", "plann", "continue"]
    assert query_terms("What did we discuss about the budget?") == ["budget"]
    assert query_terms("discussion") == ["discussion"]  # never an empty query


def test_cosine_spans_all_segments(snapshot: Snapshot) -> None:
    scores = snapshot.cosine(EMBEDDER.embed(["budget"])[0])
    assert scores.shape == (len(snapshot.chunks),) and np.all(np.abs(scores) <= 1.0001)


def test_deleting_an_unknown_recording_commits_nothing(tmp_path: Path) -> None:
    writer = open_writer(tmp_path, ModelInfo(EMBEDDER.model_id, EMBEDDER.model_hash,
                                             EMBEDDER.dim))
    writer.delete("nothing")
    assert not writer.commit()
    assert open_snapshot(tmp_path) is None


def test_recordings_far_below_the_best_are_dropped(snapshot: Snapshot) -> None:
    query = "annual budget marketing engineering travel flat year"
    vector = EMBEDDER.embed([query])[0]
    everything = search(snapshot, make_request(query), vector, floor=0.0)
    floored = search(snapshot, make_request(query), vector)
    assert [h.file_id for h in everything] == ["jan", "feb"]  # feb: one passing "budget"
    assert [h.file_id for h in floored] == ["jan"]
    assert all(h.score >= RELEVANCE_FLOOR * floored[0].score for h in floored)
    assert all(h.score < RELEVANCE_FLOOR * floored[0].score
               for h in everything[len(floored):])


def test_ranking_says_how_close_the_nearest_passage_came(snapshot: Snapshot) -> None:
    vector = EMBEDDER.embed(["connection alert"])[0]
    ranking = rank(snapshot, make_request("connection alert"), vector)
    closest = max(h.similarity or 0 for h in ranking.hits)
    assert ranking.best_similarity == pytest.approx(closest, abs=1e-4)
    assert ranking.best_similarity > 0
    assert rank(snapshot, make_request("connection alert", mode="keyword"),
                vector).best_similarity is None


TURNS = [detail("turns", name="Turns", segments=[
    seg(0, "So the main question is whether we keep the vendor. " + "Some context. " * 12,
        "Me"),
    seg(9000, "Okay, the contract renewal for the vendor is due in March.", "Dana"),
    seg(18000, "Fine by me.", "Rob"),
], note="## Summary\nThe team agreed to renew the vendor contract in March.")]


@pytest.fixture(scope="module")
def turns(tmp_path_factory: pytest.TempPathFactory) -> Snapshot:
    return build_snapshot(tmp_path_factory.mktemp("turns"), TURNS)


def test_a_moment_quotes_from_the_matched_speakers_line_without_repeating_the_name(
        turns: Snapshot) -> None:
    hit = search(turns, make_request("contract renewal", source="transcript"), None)[0]
    moment = hit.moments[0]
    assert moment.speaker == "Dana" and moment.start_ms == 9000
    assert moment.snippet.startswith("Okay, the contract renewal")  # not Me's line, no "Dana:"
    assert "Rob: Fine by me." in moment.snippet  # the next turn keeps its own label


def test_a_note_snippet_keeps_its_heading_apart_from_the_text(turns: Snapshot) -> None:
    hit = search(turns, make_request("renew vendor contract", source="notes"), None)[0]
    assert " / The team agreed to renew" in hit.moments[0].snippet


NAMES = ["Ann", "ann-marie", "Bo", "Ünal", "李明", "Dana (vendor)", ""]


@given(st.lists(st.tuples(st.lists(st.sampled_from(NAMES), max_size=3),
                          st.sampled_from(["transcript", "notes"])), max_size=40),
       st.sampled_from(["ann", "AN", "bo", "ü", "明", "vendor", "x", "a"]))
@settings(max_examples=200, deadline=None)
def test_array_filters_equal_the_per_row_reference(rows: list[tuple[list[str], str]],
                                                   wanted: str) -> None:
    chunks = [ChunkRow(f"c{i}", "f", source, "text", None, None, tuple(speakers), "")
              for i, (speakers, source) in enumerate(rows)]
    columns = Columns.of(chunks)
    expected = [any(wanted.casefold() in s.casefold() for s in c.speakers) for c in chunks]
    assert columns.rows_with_speaker(wanted).tolist() == expected
    for source, code in SOURCE_CODES.items():
        assert (columns.source == code).tolist() == [c.source == source for c in chunks]


def test_filters_on_the_index_match_a_brute_force_reading(snapshot: Snapshot) -> None:
    for speaker in ("ann", "BO", "cy", "dee", "e", "nobody"):
        request = make_request("budget", speaker=speaker)
        expected = [bool(snapshot.live[r]) and any(speaker.casefold() in s.casefold()
                                                   for s in c.speakers)
                    for r, c in enumerate(snapshot.chunks)]
        assert filter_mask(snapshot, request).tolist() == expected
    notes = filter_mask(snapshot, make_request("budget", source="notes")).tolist()
    assert notes == [bool(snapshot.live[r]) and c.source == "notes"
                     for r, c in enumerate(snapshot.chunks)]


IDLE_AFTER_A_SCAN = """
import time
import plaud_index  # what every process of ours imports first
import numpy as np
matrix = np.ones((50_000, 384), dtype=np.float32)
query = np.ones(384, dtype=np.float32)
for _ in range(5):
    matrix @ query  # the vector scan of five searches
before = time.process_time()
time.sleep(0.3)  # the client reads the answer and thinks
print(time.process_time() - before)
"""


def test_a_search_process_burns_no_cpu_between_scans() -> None:
    """numpy's BLAS threads would spin after each scan (a whole core for 0.3 s here),
    taking the cores the next query's model run needs: a server's latency doubled."""
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_THREAD_TIMEOUT"}
    run = subprocess.run([sys.executable, "-c", IDLE_AFTER_A_SCAN], capture_output=True,
                         text=True, env=env, timeout=120, check=True)
    assert float(run.stdout) < 0.05, run.stdout
