"""Values a checksum cannot catch: every column of every array file of a segment set to
something finite but impossible, with the manifest's size and checksum made to match
(as if the writer had written it). Each case is the damage error naming the file from
every reader, then healed by the next indexer cycle; ``status`` is not "ok" meanwhile.
"""

from __future__ import annotations

import json
import os
import zlib
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from helpers import assert_one_cycle_heals
from helpers import run_cli as run

from plaud_index.cli import main
from plaud_index.embedding.embedder import HashEmbedder
from plaud_index.index.segment_files import POSTINGS, ROWS, SPEAKERS, TERM_OFFSETS, TERMS, VECTORS
from plaud_index.index.snapshot import NO_MS, ROW
from plaud_index.index.values import postings_problem, row_problem, terms_problem, vectors_problem

Change = Callable[[np.ndarray], None]


def _swap_first_two(column: str) -> Change:
    def change(a: np.ndarray) -> None:
        a[column][[0, 1]] = a[column][[1, 0]]
    return change


def _set(column: str | None, value: object, row: int | slice = 0) -> Change:
    def change(a: np.ndarray) -> None:
        if column is None:
            a[row] = value
        else:
            a[column][row] = value
    return change


def _scale_row(factor: float) -> Change:
    def change(a: np.ndarray) -> None:
        a[1] *= factor
    return change


def _reverse_first_list(a: np.ndarray) -> None:
    """The rows of the first term with several postings, reversed."""
    toff = np.load(_CURRENT["toff"])
    sizes = np.diff(toff)
    i = int(np.flatnonzero(sizes > 1)[0])
    lo, hi = int(toff[i]), int(toff[i + 1])
    a["row"][lo:hi] = a["row"][lo:hi][::-1].copy()


def _move_posting(a: np.ndarray) -> None:
    """One posting's row moved to another row: each list still ascends where it can."""
    a["row"][-1] = 0 if a["row"][-1] else 1


def _end_before_start(a: np.ndarray) -> None:
    row = int(np.flatnonzero((a["start_ms"] > 0) & (a["end_ms"] != NO_MS))[0])
    a["end_ms"][row] = a["start_ms"][row] - 1


def _first_bigger(a: np.ndarray) -> None:
    a[1] = a[-1] + 1


_CURRENT: dict[str, Path] = {}

# (file, case) -> what is done to that file's array
CASES: dict[tuple[str, str], Change] = {
    (ROWS, "recording -1"): _set("rec", -1),
    (ROWS, "recording past the last"): _set("rec", 10_000),
    (ROWS, "chunk positions reversed"): _swap_first_two("at"),
    (ROWS, "chunk position past the text"): _set("at", 10**9, -1),
    (ROWS, "speaker positions reversed"): _set("spk", 10**6, 1),
    (ROWS, "negative length"): _set("doclen", -3),
    (ROWS, "every length 0 beside terms"): _set("doclen", 0, slice(None)),
    (ROWS, "negative term count"): _set("nterms", -1),
    (ROWS, "negative start"): _set("start_ms", -5_000),
    (ROWS, "negative end"): _set("end_ms", -5_000, 1),
    (ROWS, "end before start"): _end_before_start,
    (ROWS, "unknown source"): _set("source", 7),
    (SPEAKERS, "speaker id -1"): _set(None, -1),
    (SPEAKERS, "speaker id past the vocabulary"): _set(None, 10_000),
    (VECTORS, "row scaled by 1e30"): _scale_row(1e30),
    (VECTORS, "row scaled by 0.5"): _scale_row(0.5),
    (VECTORS, "row scaled by -3"): _scale_row(-3.0),
    (TERMS, "terms reversed"): lambda a: a.__setitem__(slice(None), a[::-1].copy()),
    (TERMS, "two terms swapped"): lambda a: a.__setitem__([0, 1], a[[1, 0]]),
    (TERM_OFFSETS, "offsets decreasing"): _first_bigger,
    (POSTINGS, "row -1"): _set("row", -1),
    (POSTINGS, "row past the last"): _set("row", 10_000),
    (POSTINGS, "posting list reversed"): _reverse_first_list,
    (POSTINGS, "posting moved to another row"): _move_posting,
    (POSTINGS, "negative frequency"): _set("tf", -2.0),
    (POSTINGS, "zero frequency"): _set("tf", 0.0),
    (POSTINGS, "infinite frequency"): _set("tf", np.inf),
    (POSTINGS, "frequency of 3e38"): _set("tf", 3e38),
    (POSTINGS, "frequency above the row's length"): _set("tf", 10_000.0),
}


@pytest.fixture
def home(index_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PLAUD_CLIENT", "mock")
    monkeypatch.setenv("PLAUD_EMBEDDER", "mock")
    assert main(["indexer", "--once"]) == 0
    return index_home


def largest_segment(index: Path) -> str:
    segments = json.loads((index / "manifest.json").read_text())["segments"]
    return str(max(segments, key=lambda s: s["rows"])["name"])


def rewrite_as_the_writer_would(index: Path, segment: str, suffix: str,
                                change: Change) -> Path:
    """The array changed and saved as a new file (a new identity), and the manifest's size
    and CRC-32 of it updated: only the values are wrong."""
    path = index / f"{segment}{suffix}"
    array = np.load(path)
    change(array)
    spare = path.with_name(path.name + ".new")
    with spare.open("wb") as fh:
        np.save(fh, array)
    os.replace(spare, path)
    data = path.read_bytes()
    manifest_path = index / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    for entry in manifest["segments"]:
        if entry["name"] == segment:
            entry["files"][suffix] = [len(data), zlib.crc32(data)]
    manifest_path.write_text(json.dumps(manifest))
    return path


@pytest.mark.parametrize(("suffix", "case"), sorted(CASES), ids=[
    f"{s.strip('.').split('.')[0]}: {c}" for s, c in sorted(CASES)])
def test_an_impossible_value_is_damage_named_by_every_reader_then_healed(
        home: Path, capsys: pytest.CaptureFixture[str], suffix: str, case: str) -> None:
    index = home / "vector-index"
    segment = largest_segment(index)
    _CURRENT["toff"] = index / f"{segment}{TERM_OFFSETS}"
    path = rewrite_as_the_writer_would(index, segment, suffix, CASES[suffix, case])
    for command in (["search", "budget"], ["list"], ["status"]):
        code, text = run(capsys, *command)
        assert "Traceback" not in text, text
        if command[0] == "status":
            assert "Health:       ok" not in text and path.name in text, text
        else:
            assert code == 1 and path.name in text, text
    assert_one_cycle_heals(capsys)


def test_the_sweep_covers_every_array_file_and_every_row_column() -> None:
    files = {suffix for suffix, _ in CASES}
    assert files == {ROWS, SPEAKERS, VECTORS, TERMS, TERM_OFFSETS, POSTINGS}
    columns = {"rec", "at", "spk", "doclen", "nterms", "start_ms", "end_ms", "source"}
    assert columns == set(ROW.names or ())
    print(f"{len(CASES)} impossible values over {len(files)} array files")


def test_a_changed_file_keeping_its_identity_still_never_ranks_a_huge_row(
        home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Bytes changed in place with the old modification time put back (what decay looks
    like): the file is trusted at open, the score bound still stops the row; that reader
    then withdraws the trust records, so the next open names the file and the next
    indexer cycle rebuilds it."""
    index = home / "vector-index"
    path = index / f"{largest_segment(index)}{VECTORS}"
    before = path.stat()
    vectors = np.load(path, mmap_mode="r+")
    closest = int(np.argmax(vectors @ HashEmbedder().embed_query("budget")))
    vectors[closest] *= 1e30
    vectors.flush()
    del vectors
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_ino == before.st_ino
    code, text = run(capsys, "search", "budget")
    assert code == 1 and path.name in text and "Traceback" not in text, text
    code, text = run(capsys, "status")  # the reader's find is not forgotten
    assert "Health:       ok" not in text and path.name in text, text
    assert_one_cycle_heals(capsys)


GOOD_ROWS = np.zeros(3, dtype=ROW)
GOOD_ROWS["at"] = [0, 10, 20]
GOOD_ROWS["start_ms"], GOOD_ROWS["end_ms"] = [0, NO_MS, 500], [100, NO_MS, 900]


def test_the_pure_checks_accept_what_the_writer_writes() -> None:
    assert row_problem(GOOD_ROWS, 1, 0, 30) is None
    assert row_problem(np.zeros(0, dtype=ROW), 0, 0, 0) is None
    assert terms_problem(np.array(["a", "b"])) is None
    assert terms_problem(np.array(["b", "a"])) == "terms out of order"
    offsets = np.array([0, 2, 3])
    assert postings_problem(offsets, np.array([0, 2, 1], np.int32),
                            np.ones(3, np.float32), np.array([1, 1, 1])) is None
    zero_and_unit = np.zeros((2, 4), np.float32)
    zero_and_unit[1, 2] = 1.0
    assert vectors_problem(zero_and_unit) is None


def test_a_posting_list_out_of_order_is_found_across_block_edges(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import plaud_index.index.values as values
    monkeypatch.setattr(values, "BLOCK_POSTINGS", 2)
    offsets = np.array([0, 3, 4])
    ok = np.array([0, 1, 2, 0], np.int32)
    assert values.postings_problem(offsets, ok, np.ones(4, np.float32),
                                   np.array([2, 1, 1])) is None
    bad = np.array([0, 2, 1, 0], np.int32)  # 2 then 1 straddles the first block's end
    assert values.postings_problem(offsets, bad, np.ones(4, np.float32),
                                   np.array([2, 1, 1])) == "postings out of order"
