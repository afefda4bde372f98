"""Merges: the tiered policy's cost, and merged indexes that answer exactly as the data says.

The reference for every check is the data itself (what was put and not deleted), read by
brute force; the index under test went through many small merges on the way.
"""

from __future__ import annotations

import math
import tempfile
from datetime import date
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plaud_index.embedding.embedder import HashEmbedder
from plaud_index.index import merge as merge_module
from plaud_index.index.analyzer import query_terms
from plaud_index.index.manifest import ModelInfo
from plaud_index.index.merge import FLOOR_ROWS, MERGE_FACTOR, plan_merge
from plaud_index.index.postings import bm25
from plaud_index.index.records import IndexedRecording
from plaud_index.index.snapshot import Snapshot
from plaud_index.index.store import open_snapshot
from plaud_index.index.writer import open_writer
from plaud_index.models import Chunk
from plaud_index.search.rank import filter_mask, make_request

EMBEDDER = HashEmbedder()
MODEL = ModelInfo(EMBEDDER.model_id, EMBEDDER.model_hash, EMBEDDER.dim)


def simulate(commits: int, rows_per_commit: int) -> tuple[int, int]:
    """Rows written (commits and merges) and the most segments seen, by the policy alone."""
    sizes: list[int] = []
    written = most = 0
    for _ in range(commits):
        sizes.append(rows_per_commit)
        written += rows_per_commit
        while positions := plan_merge(sizes, sizes):
            merged = sum(sizes[p] for p in positions)
            sizes = [s for p, s in enumerate(sizes) if p not in positions] + [merged]
            written += merged
        most = max(most, len(sizes))
    return written, most


@pytest.mark.parametrize("commits", [100, 1000, 10_000])
def test_tiered_merges_rewrite_each_row_about_log_n_times(commits: int) -> None:
    written, most = simulate(commits, 1000)
    total = commits * 1000
    tiers = math.log(total / FLOOR_ROWS, MERGE_FACTOR)
    assert written / total <= 1 + tiers + 1e-9  # once per tier, not once per commit
    assert most <= (MERGE_FACTOR - 1) * (tiers + 1) + 1


def test_a_mostly_dead_segment_is_rewritten_alone() -> None:
    assert plan_merge([5000, 1000], [5000, 600]) == [1]
    assert plan_merge([5000, 1000], [5000, 800]) == []
    assert plan_merge([1000] * MERGE_FACTOR, [1000] * MERGE_FACTOR) == list(range(MERGE_FACTOR))


NAMES = ["Ann", "ann-marie", "Bo", "Ünal", "李明", "Dana (vendor)"]
WORDS = ["budget", "plan", "Küche", "会議", "vendor", "risk", "launch", "x"]
CREATED = ["2026-03-01T23:30:00+00:00", "2026-03-02T04:59:59.999999+00:00",
           "2026-03-02T10:00:00", "2026-03-02T15:00:00-08:00", "2026-03-03T00:00:00+09:00"]
ZONES = [ZoneInfo("UTC"), ZoneInfo("America/New_York"), ZoneInfo("Asia/Tokyo")]

recording_data = st.tuples(
    st.lists(st.tuples(st.lists(st.sampled_from(NAMES), max_size=2),
                       st.sampled_from(["transcript", "notes"]),
                       st.lists(st.sampled_from(WORDS), min_size=1, max_size=6)),
             max_size=6),
    st.sampled_from(CREATED), st.booleans())
operation = st.tuples(st.sampled_from(["put", "put", "put", "delete"]),
                      st.integers(0, 11), recording_data)


def _recording(file_id: str, data: Any, version: int) -> tuple[IndexedRecording, list[Chunk]]:
    rows, created, folder = data
    file_id = f"folder:r:{file_id}" if folder else file_id
    chunks = [Chunk(chunk_id=f"{file_id}-{version}-{i}", file_id=file_id, source=source,
                    text=" ".join(words), embed_text=" ".join(words), start_ms=i * 1000,
                    end_ms=i * 1000 + 900, speakers=tuple(names))
              for i, (names, source, words) in enumerate(rows)]
    return IndexedRecording(file_id, f"R {file_id}", created, 1000, f"v{version}", (), (),
                            len(chunks)), chunks


def _apply(directory: Path, operations: list[Any]) -> dict[str, tuple[Any, list[Chunk]]]:
    """Commit ``operations`` two at a time; returns what should be live."""
    writer = open_writer(directory, MODEL)
    expected: dict[str, tuple[Any, list[Chunk]]] = {}
    for n, (kind, key, data) in enumerate(operations):
        record, chunks = _recording(f"r{key}", data, n)
        for other in (f"r{key}", f"folder:r:r{key}"):  # one id per key, either source
            writer.delete(other)
            expected.pop(other, None)
        if kind == "put":
            writer.put(record, chunks, EMBEDDER.embed([c.embed_text for c in chunks])
                       .reshape(len(chunks), EMBEDDER.dim))
            expected[record.file_id] = (record, chunks)
        if n % 2:
            writer.commit()
    writer.commit()
    return expected


def _check(snap: Snapshot, expected: dict[str, tuple[Any, list[Chunk]]], speaker: str,
           day: date, zone: ZoneInfo) -> None:
    live = [(snap.chunks[int(r)], snap.recordings[snap.row_recording[r]])
            for r in np.flatnonzero(snap.live)]
    assert sorted(c.chunk_id for c, _ in live) == sorted(
        c.chunk_id for _, chunks in expected.values() for c in chunks)
    assert {r.file_id: r for _, r in live} == {
        f: rec for f, (rec, chunks) in expected.items() if chunks}
    assert set(snap.by_id) == set(expected)
    rows = np.flatnonzero(snap.live)
    for request, wanted in [
            (make_request("x", speaker=speaker),
             lambda c, r: any(speaker.casefold() in s.casefold() for s in c.speakers)),
            (make_request("x", source="notes"), lambda c, r: c.source == "notes"),
            (make_request("x", source_kind="folder"), lambda c, r: r.source_kind == "folder"),
            (make_request("x", date_from=day.isoformat(), date_to=day.isoformat()),
             lambda c, r: r.created.astimezone(zone).date() == day),
            (make_request("x", date_from=day.isoformat()),
             lambda c, r: r.created.astimezone(zone).date() >= day)]:
        request = type(request)(**{**request.__dict__, "zone": zone})
        mask = filter_mask(snap, request)
        assert mask[rows].tolist() == [wanted(c, r) for c, r in live]
        assert not mask[~snap.live].any()


@given(st.lists(operation, min_size=1, max_size=24), st.sampled_from(["ann", "bo", "ü", "明"]),
       st.sampled_from([date(2026, 3, 1), date(2026, 3, 2), date(2026, 3, 3)]),
       st.sampled_from(ZONES))
@settings(max_examples=60, deadline=None)
def test_merged_indexes_hold_exactly_the_live_data_and_filter_like_brute_force(
        operations: list[Any], speaker: str, day: date, zone: ZoneInfo) -> None:
    with pytest.MonkeyPatch.context() as patch, tempfile.TemporaryDirectory() as tmp:
        patch.setattr(merge_module, "FLOOR_ROWS", 2)  # merge constantly: tiers of 2, 6, 18
        patch.setattr(merge_module, "MERGE_FACTOR", 3)
        expected = _apply(Path(tmp) / "merged", operations)
        merged = open_snapshot(Path(tmp) / "merged")
        if merged is None:  # nothing was ever committed
            assert not expected
            return
        _check(merged, expected, speaker, day, zone)
        fresh_writer = open_writer(Path(tmp) / "fresh", MODEL)  # the same data, one segment
        for record, chunks in expected.values():
            fresh_writer.put(record, chunks, EMBEDDER.embed([c.embed_text for c in chunks])
                             .reshape(len(chunks), EMBEDDER.dim))
        fresh_writer.commit()
        fresh = open_snapshot(Path(tmp) / "fresh")
        if fresh is None or not fresh.live.any():
            return
        for words in (["budget"], ["küche", "plan"], ["会議"], ["nothing"]):
            assert _keyword_scores(merged, words) == _keyword_scores(fresh, words)


def _keyword_scores(snap: Snapshot, terms: list[str]) -> dict[str, float]:
    """BM25 by chunk id: the merged postings must score exactly as freshly built ones."""
    scores = bm25(snap.keyword_segments(), query_terms(" ".join(terms)), len(snap.chunks),
                  snap.live, snap.doclen)
    return {snap.chunks[int(r)].chunk_id: round(float(scores[r]), 4)
            for r in np.flatnonzero(snap.live)}
