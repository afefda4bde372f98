"""Hostile recordings through the real indexer and the real model.

Every case a hostile tester found (and a few more) sits in one listing beside good
recordings: each good one must be indexed and searchable, each bad one repaired or
skipped with its reason, and the cycle must finish. Sizes that once were quadratic run
with the fast embedder (the real model costs ~40 ms a chunk, which no fix can change).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers import FakeSource, detail

from plaud_index.embedding.embedder import HashEmbedder, OnnxEmbedder
from plaud_index.index.store import open_snapshot
from plaud_index.plaud import PlaudSource
from plaud_index.search.rank import make_request, search
from plaud_index.sync.indexer import Indexer
from plaud_index.sync.state import SyncStateStore


def seg(text: object, start: object = 0, end: object = 4000, speaker: object = "Ann"
        ) -> dict[str, object]:
    return {"start_time": start, "end_time": end, "content": text, "speaker": speaker}


GOOD = [detail(f"good-{i}", name=f"Planning {i}", segments=[
    seg(f"The warehouse robots pilot number {i} starts in March."),
    seg("Budget approved for the forklift upgrade.", 5000, 9000, "Bo")]) for i in range(3)]

# file_id → (raw detail, whether it must end up indexed)
HOSTILE: dict[str, tuple[dict[str, Any], bool]] = {
    "surrogate-text": (detail("surrogate-text", segments=[seg("budget \ud800 lunar plan")]),
                       True),
    "surrogate-title": (detail("surrogate-title", name="Weekly \udfff sync"), True),
    "surrogate-speaker": (detail("surrogate-speaker", segments=[
        seg("lunar speaker check", speaker="An\ud83dn")]), True),
    "nul-and-escapes": (detail("nul-and-escapes", name="Evil\x1b[2J\x07 title",
                               segments=[seg("nul\x00 inside\x00 text lunar")]), True),
    "microseconds": (detail("microseconds", created_at=1_700_000_000_000_000), True),  # type: ignore[arg-type]
    "milliseconds": (detail("milliseconds", created_at=1_700_000_000_000), True),  # type: ignore[arg-type]
    "nan-times": (detail("nan-times", segments=[seg("nan times lunar", float("nan"),
                                                    float("inf"))], duration=float("nan")),
                  True),
    "huge-times": (detail("huge-times", segments=[seg("huge times lunar", 10**30, -5)],
                          duration=-7), True),
    "string-times": (detail("string-times", segments=[seg("string times", "inf", "12x")],
                            duration="1e400"), True),
    "year-9999": (detail("year-9999", created_at="9999-12-31T23:00:00-05:00"), False),
    "year-55840": (detail("year-55840", created_at=1.7e18), False),  # type: ignore[arg-type]
    "data-id-dict": (detail("data-id-dict", note="## Summary\nLunar notes.",
                            note_list=[{"data_id": {"x": 1}, "data_type": "auto_sum_note",
                                        "data_content": "## Summary\nlunar dict id"}]), True),
    "deep-json": (detail("deep-json", source_list=[{"data_type": "transaction",
                                                    "data_content": "[" * 100_000}]), True),
    "link-number": (detail("link-number", source_list=[{"data_type": "transaction",
                                                        "data_link": 123,
                                                        "data_content": ""}]), True),
    "source-list-int": (detail("source-list-int", source_list=5, note_list="x"), True),
    "wrong-types": (detail("wrong-types", name=["not", "a", "title"], segments=[
        seg(12345), seg({"text": 1}), seg("typed lunar words", speaker={"n": 1})]), True),
    "title-2000-words": (detail("title-2000-words", name="word " * 2000), True),
    "id-surrogate": (detail("id-\ud800"), False),
    "id-dict": ({**detail("x"), "id": {"a": 1}}, False),
    "not-an-object": (["a", "list"], False),  # type: ignore[dict-item]
}


class Listing(FakeSource):
    """Serves the hostile details by the listing's ids (some ids are not valid keys)."""

    def __init__(self, details: Sequence[tuple[str, Any]]) -> None:
        super().__init__([])
        self.by_id = dict(details)

    def list_files(self, tail_hint: str | None = None) -> list[dict[str, Any]]:
        return [{"id": fid, "name": ""} for fid in self.by_id]

    def get_file(self, file_id: str) -> Any:
        self.detail_calls.append(file_id)
        return self.by_id[file_id]


@pytest.fixture(scope="module")
def indexed(real_embedder: OnnxEmbedder, tmp_path_factory: pytest.TempPathFactory
            ) -> tuple[Path, Listing, Any]:
    home = tmp_path_factory.mktemp("hostile")
    details = [(d["id"], d) for d in GOOD] + [(k, raw) for k, (raw, _) in HOSTILE.items()]
    source = Listing(details)
    report = Indexer(source, real_embedder, home, commit_every=5).run_cycle()
    return home, source, report


def test_every_good_recording_is_indexed_and_searchable(indexed: tuple[Path, Listing, Any],
                                                        real_embedder: OnnxEmbedder) -> None:
    home, _, _ = indexed
    snap = open_snapshot(home / "vector-index")
    assert snap is not None
    for good in GOOD:
        assert good["id"] in snap.by_id
    hits = search(snap, make_request("warehouse robots pilot"),
                  real_embedder.embed_query("warehouse robots pilot"))
    assert {h.file_id for h in hits[:3]} == {g["id"] for g in GOOD}


@pytest.mark.parametrize("file_id", sorted(HOSTILE))
def test_each_hostile_recording_is_repaired_or_skipped_with_its_reason(
        indexed: tuple[Path, Listing, Any], file_id: str) -> None:
    home, _, report = indexed
    snap = open_snapshot(home / "vector-index")
    assert snap is not None
    if HOSTILE[file_id][1]:
        assert file_id in snap.by_id
        rec = snap.recordings[snap.by_id[file_id]]
        assert "\x1b" not in rec.title and "\ud800" not in rec.title
        assert 2000 <= rec.created.year < 2100
    else:
        assert file_id not in snap.by_id
        assert any(e.startswith(f"{file_id}: ") for e in report.errors)
        assert file_id in SyncStateStore(home).read().skipped


def test_repaired_text_is_clean_in_the_index(indexed: tuple[Path, Listing, Any]) -> None:
    home, _, _ = indexed
    snap = open_snapshot(home / "vector-index")
    assert snap is not None
    texts = " ".join(c.text for c in snap.chunks)
    assert "\x00" not in texts and "\ud800" not in texts and "\ufffd" in texts
    micro = snap.recordings[snap.by_id["microseconds"]]
    assert micro.created.year == 2023  # 1.7e15 µs, not the year 55840


def test_a_skipped_recording_is_not_retried_every_cycle(indexed: tuple[Path, Listing, Any],
                                                        real_embedder: OnnxEmbedder) -> None:
    home, source, _ = indexed
    source.detail_calls.clear()
    report = Indexer(source, real_embedder, home).run_cycle()
    assert not {"year-9999", "id-surrogate", "not-an-object"} & set(source.detail_calls)
    assert report.added == 0 and report.skipped == 0


class FailsOn(HashEmbedder):
    """An embedder that breaks on one text, as a tokenizer may on input it cannot take."""

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if any("poison" in t for t in texts):
            raise TypeError("TextEncodeInput must be Union[TextInputSequence, ...]")
        return super().embed(texts)


def test_an_embedder_failure_skips_only_the_recording_that_caused_it(tmp_path: Path) -> None:
    recordings = [detail(f"r{i}", segments=[seg(f"ordinary words {i}")]) for i in range(4)]
    recordings.insert(2, detail("bad", segments=[seg("poison pill")]))
    report = Indexer(FakeSource(recordings), FailsOn(), tmp_path, commit_every=10).run_cycle()
    assert report.added == 4 and report.skipped == 1
    assert report.errors[0].startswith("bad: TypeError")
    assert "bad" in SyncStateStore(tmp_path).read().skipped


@pytest.mark.parametrize("make", [
    lambda: [seg("ok " * 5 + "same words again", i * 10, i * 10 + 5) for i in range(8000)],
    lambda: [seg("word " * 2_000_000)],  # one 10 MB utterance
    lambda: [seg("会議" * 2_500_000)],  # 10 MB of text without a space
])
def test_pathological_sizes_index_in_seconds_per_megabyte(tmp_path: Path, make: Any) -> None:
    raw = detail("big", segments=make())
    megabytes = len(json.dumps(raw)) / 1e6
    started = time.perf_counter()
    report = Indexer(FakeSource([raw]), HashEmbedder(), tmp_path).run_cycle()
    elapsed = time.perf_counter() - started
    assert report.added == 1
    snap = open_snapshot(tmp_path / "vector-index")
    assert snap is not None and max(len(c.text) for c in snap.chunks) <= 1600
    assert elapsed < 20 * max(megabytes, 1), f"{elapsed:.1f}s for {megabytes:.1f} MB"


CORPUS_RECORD = {"id": "good-1", "name": "Budget review", "created_at": "2026-03-02T10:00:00Z",
        "duration": 60, "transcript": [{"speaker": "Ann", "start": 0, "end": 5,
                                        "text": "We reviewed the budget."}]}
MALFORMED_LINES = {
    "duration null": json.dumps({**CORPUS_RECORD, "id": "d-null", "duration": None}),
    "duration text": json.dumps({**CORPUS_RECORD, "id": "d-abc", "duration": "abc"}),
    "duration NaN": json.dumps({**CORPUS_RECORD, "id": "d-nan"}).replace('"duration": 60',
                                                                 '"duration": NaN'),
    "duration infinity": json.dumps({**CORPUS_RECORD, "id": "d-inf"}).replace('"duration": 60',
                                                                      '"duration": Infinity'),
    "duration list": json.dumps({**CORPUS_RECORD, "id": "d-list", "duration": [1, 2]}),
    "id list": json.dumps({**CORPUS_RECORD, "id": ["x"]}),
    "id dict": json.dumps({**CORPUS_RECORD, "id": {"a": 1}}),
    "no id": json.dumps({k: v for k, v in CORPUS_RECORD.items() if k != "id"}),
    "not json": "{this is not json",
    "not an object": "[1, 2, 3]",
    "deep nesting": json.dumps({**CORPUS_RECORD, "id": "deep"})[:-1] + ', "meta": ' + "[" * 100_000
    + "]" * 100_000 + "}",
    "segment start text": json.dumps({**CORPUS_RECORD, "id": "seg-bad", "transcript": [
        {"speaker": "A", "start": "soon", "end": None, "text": 5}]}),
    "created_at seconds": json.dumps({**CORPUS_RECORD, "id": "t-s", "created_at": 1_772_445_600}),
    "created_at ms": json.dumps({**CORPUS_RECORD, "id": "t-ms", "created_at": 1_772_445_600_000}),
    "created_at µs": json.dumps({**CORPUS_RECORD, "id": "t-us",
                                 "created_at": 1_772_445_600_000_000}),
    "created_at with offset": json.dumps({**CORPUS_RECORD, "id": "t-off",
                                          "created_at": "2026-03-02T15:30:00+05:30"}),
}


@pytest.mark.parametrize("case", sorted(MALFORMED_LINES))
def test_the_mock_corpus_skips_a_bad_record_with_its_reason_and_indexes_the_rest(
        tmp_path: Path, case: str) -> None:
    from plaud_index.plaud.mock import MockClient
    from plaud_index.sync.state import SyncStateStore

    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(json.dumps(CORPUS_RECORD) + "\n" + MALFORMED_LINES[case] + "\n")
    report = Indexer(PlaudSource(MockClient(corpus)), HashEmbedder(), tmp_path).run_cycle()
    snap = open_snapshot(tmp_path / "vector-index")
    assert snap is not None and "good-1" in snap.by_id  # the rest is indexed
    indexed = set(snap.by_id) - {"good-1"}
    skipped = SyncStateStore(tmp_path).read().skipped
    # the bad record is indexed (repaired: the real parser read it) or skipped with a reason
    assert len(indexed) + len(skipped) + report.skipped >= 1, (indexed, skipped)
    if case.startswith("created_at"):  # every unit and offset reaches the real parser
        rec = snap.recordings[snap.by_id[json.loads(MALFORMED_LINES[case])["id"]]]
        assert rec.created.isoformat() == "2026-03-02T10:00:00+00:00"
