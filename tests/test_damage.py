"""Every file we read may be damaged: a clear message naming it, never a traceback, and
the indexer rebuilds what it cannot trust from the source while nothing is lost.

The commands run in-process (``cli.main``), so any uncaught exception fails the test;
one case runs through the real MCP server too.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
from conftest import fill_disk
from helpers import SAMPLE_RECORDINGS, assert_one_cycle_heals
from helpers import run_cli as run

from plaud_index.cli import main
from plaud_index.index.segment_files import SUFFIXES

INDEX_FILES = ["manifest.json", "verified.json", *SUFFIXES]


def target(home: Path, name: str) -> Path:
    index = home / "vector-index"
    if name.startswith("."):
        return next(index.glob(f"seg-*{name}"))
    return index / name


def _garble(path: Path) -> None:
    data = bytearray(path.read_bytes())
    middle = max(len(data) // 2, 0)
    data[middle:middle + 64] = b"\xff" * min(64, len(data) - middle)
    path.write_bytes(bytes(data))


def _wrong_shape(path: Path) -> None:
    if path.suffix in (".json", ".jsonl"):
        path.write_text(json.dumps({"segments": 5, "chunks": "no"}) if "seg" in path.name
                        else "[]")
    elif path.name.endswith(".vec.npy"):
        np.save(path, np.zeros((3, 7)))
    else:
        np.save(path, np.arange(3) - 1 if "spk" in path.name or "rows" in path.name
                else np.zeros(3))


def _folder(path: Path) -> None:
    path.unlink()
    path.mkdir()


DAMAGE: dict[str, Callable[[Path], None]] = {
    "empty": lambda p: p.write_bytes(b""),
    "truncated": lambda p: p.write_bytes(p.read_bytes()[: p.stat().st_size // 2]),
    "garbled": _garble,
    "wrong_shape": _wrong_shape,
    "missing": lambda p: p.unlink(),
    "folder": _folder,
}


@pytest.fixture
def mock_source(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PLAUD_CLIENT", "mock")
    monkeypatch.setenv("PLAUD_EMBEDDER", "mock")


@pytest.fixture
def home(index_home: Path, mock_source: None) -> Path:
    assert main(["indexer", "--once"]) == 0
    return index_home


@pytest.mark.parametrize("damage", sorted(DAMAGE))
@pytest.mark.parametrize("name", INDEX_FILES)
def test_a_damaged_index_file_is_named_then_rebuilt(
        home: Path, capsys: pytest.CaptureFixture[str], name: str, damage: str) -> None:
    path = target(home, name)
    DAMAGE[damage](path)
    for command in (["status"], ["search", "budget"]):
        code, text = run(capsys, *command)
        assert "Traceback" not in text
        if code:  # an error names the file it found damaged
            assert path.name in text or str(path.parent) in text, text
    assert_one_cycle_heals(capsys)


def test_damaged_vectors_never_reach_a_score(home: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    _garble(target(home, ".vec.npy"))  # 64 bytes of 0xFF: NaN in some rows
    code, text = run(capsys, "search", "budget")
    assert code == 1 and "vec.npy" in text and "NaN" not in text.replace("not numbers", "")


@pytest.mark.parametrize("content", [b"\xff\xfe not utf-8", b"[]", b'{"indexInterval": {}}',
                                     b"[" * 100_000, None])
def test_a_damaged_config_file_falls_back_to_defaults(
        home: Path, capsys: pytest.CaptureFixture[str], content: bytes | None) -> None:
    config = home / "config.json"
    if content is None:
        config.mkdir()
    else:
        config.write_bytes(content)
    for command in (["status"], ["search", "budget"], ["indexer", "--once"]):
        code, text = run(capsys, *command)
        assert code == 0 and "Traceback" not in text, text


@pytest.mark.parametrize("content", [b"", b"{torn", b"[1, 2]", b'{"checked": 5, "daemon": "x",'
                                     b' "last_success": "yesterday", "skipped": []}', None])
def test_a_damaged_sync_state_is_ignored_and_rewritten(
        home: Path, capsys: pytest.CaptureFixture[str], content: bytes | None) -> None:
    state = home / "sync-state.json"
    state.unlink()
    if content is None:
        state.mkdir()
    else:
        state.write_bytes(content)
    for command in (["status"], ["search", "budget"]):
        code, text = run(capsys, *command)
        assert code == 0 and "Traceback" not in text, text
    if content is None:
        state.rmdir()
    code, text = run(capsys, "indexer", "--once")
    assert code == 0, text
    assert json.loads(state.read_text())["version"] == 1


def test_the_index_folder_as_a_file_is_a_clear_error(
        index_home: Path, capsys: pytest.CaptureFixture[str], mock_source: None) -> None:
    index_home.mkdir(parents=True)
    (index_home / "vector-index").write_text("not a folder")
    for command in (["status"], ["search", "budget"], ["indexer", "--once"]):
        code, text = run(capsys, *command)
        assert code == 1 and "is a file, not the index folder" in text, text


@pytest.fixture
def disk_home(small_disk: Path, mock_source: None, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An index built on the small disk."""
    home = small_disk / "home"
    monkeypatch.setenv("PLAUD_INDEX_HOME", str(home))
    assert main(["indexer", "--once"]) == 0
    return home


def test_a_full_disk_keeps_the_index_and_status_says_what_to_free(
        small_disk: Path, disk_home: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    more = corpus_of(small_disk.parent / "more.jsonl", 4)  # off the small disk
    monkeypatch.setenv("PLAUD_MOCK_CORPUS", str(more))
    filler = small_disk / "filler"
    fill_disk(filler)
    code, text = run(capsys, "indexer", "--once")
    assert code == 1 and "is full" in text and "Traceback" not in text, text
    code, text = run(capsys, "search", "Q3 budget", "--json")
    served = json.loads(text[text.index("{"):])["index"]["recordings"]
    # the committed index is intact and serving, with what the full disk let commit
    assert code == 0 and SAMPLE_RECORDINGS <= served < 5 * SAMPLE_RECORDINGS
    filler.unlink()
    code, text = run(capsys, "status")
    assert "is full" in text and "Health:       ok" not in text, text
    assert main(["indexer", "--once"]) == 0
    code, text = run(capsys, "status")
    assert "Health:       ok" in text, text


def corpus_of(path: Path, copies: int) -> Path:
    """The sample corpus plus ``copies`` renamed copies of it, off the small disk."""
    sample = (Path(__file__).parent.parent / "plaud_index" / "plaud" / "sample_corpus.jsonl")
    lines = sample.read_text().splitlines()
    path.write_text("\n".join(lines + [json.dumps({**json.loads(line), "id": f"x{i}-{n}"})
                                       for n in range(copies) for i, line in enumerate(lines)]))
    return path


def test_a_disk_that_fills_again_after_recovering_is_still_reported(
        small_disk: Path, disk_home: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The reserve that lets a full disk's failure be recorded is made again once the
    disk has room, so the second time is recorded as the first was."""
    reserve = disk_home / ".disk-reserve"
    filler = small_disk / "filler"
    assert reserve.exists()
    for copies in (2, 4):
        monkeypatch.setenv("PLAUD_MOCK_CORPUS", str(corpus_of(small_disk.parent / f"c{copies}",
                                                              copies)))
        fill_disk(filler)
        code, text = run(capsys, "indexer", "--once")
        assert code == 1 and "is full" in text and "Traceback" not in text, text
        code, text = run(capsys, "status")
        assert "is full" in text and "Health:       ok" not in text, text
        filler.unlink()
        assert main(["indexer", "--once"]) == 0
        assert reserve.exists() and reserve.stat().st_size == 256 * 1024
        code, text = run(capsys, "status")
        assert "Health:       ok" in text, text


@pytest.mark.parametrize("command", [["indexer", "--once"], ["search", "budget"]])
def test_a_full_disk_on_a_fresh_home_is_the_disk_full_message(
        small_disk: Path, mock_source: None, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch, command: list[str]) -> None:
    """Nothing written yet, not even the lock's holder record, when the disk is full."""
    monkeypatch.setenv("PLAUD_INDEX_HOME", str(small_disk / "home"))
    fill_disk(small_disk / "filler")
    code, text = run(capsys, *command)
    assert code == 1 and "is full" in text and "Traceback" not in text, text
    assert "Errno" not in text, text


def test_a_read_only_disk_is_reported_by_status(
        small_disk: Path, disk_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    home = disk_home
    (home / "vector-index" / "manifest.json").unlink()  # so the next cycle must write
    subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], check=True)
    code, text = run(capsys, "indexer", "--once")
    assert code == 1 and "cannot be written" in text and "Traceback" not in text, text
    code, text = run(capsys, "status")
    assert code == 0 and "cannot be written" in text, text
    subprocess.run(["mount", "-o", "remount,rw", str(small_disk)], check=True)
    assert main(["indexer", "--once"]) == 0
    assert os.access(home, os.W_OK)
    shutil.rmtree(home)


NPY_SUFFIXES = [s for s in SUFFIXES if s.endswith(".npy")]


def test_every_single_byte_flip_in_every_array_header_is_damage_or_harmless(
        home: Path) -> None:
    """Every byte of the header of every .npy file of a segment, flipped one at a time:
    opening and searching either works or is the damage error naming the file (numpy
    parses headers with tokenize and ast: their errors must not escape)."""
    from plaud_index.embedding.embedder import HashEmbedder
    from plaud_index.errors import IndexCorruptError
    from plaud_index.index.store import open_snapshot
    from plaud_index.search.rank import make_request, rank

    index = home / "vector-index"
    query = HashEmbedder().embed_query("budget")
    cases = damaged = 0
    for suffix in NPY_SUFFIXES:
        path = target(home, suffix)
        original = path.read_bytes()
        header = 10 + int.from_bytes(original[8:10], "little")  # magic, version, length
        for at in range(min(header, len(original))):
            flipped = bytearray(original)
            flipped[at] ^= 0xFF
            path.write_bytes(bytes(flipped))
            cases += 1
            try:
                snap = open_snapshot(index)
                assert snap is not None
                rank(snap, make_request("budget"), query)
            except IndexCorruptError as exc:
                damaged += 1
                assert path.name in str(exc), str(exc)
        path.write_bytes(original)
    print(f"{cases} header byte flips over {len(NPY_SUFFIXES)} array files: {damaged} named "
          f"as damage, {cases - damaged} harmless")
    assert cases >= 6 * 64 and damaged >= cases // 2


@pytest.mark.parametrize("suffix", NPY_SUFFIXES)
def test_a_flipped_header_byte_is_healed_by_the_next_indexer_cycle(
        home: Path, capsys: pytest.CaptureFixture[str], suffix: str) -> None:
    path = target(home, suffix)
    data = bytearray(path.read_bytes())
    data[20] ^= 0xFF  # inside the header's dict text: numpy's parser fails on it
    path.write_bytes(bytes(data))
    code, text = run(capsys, "search", "budget")
    assert code == 1 and path.name in text and "Traceback" not in text, text
    code, text = run(capsys, "indexer", "--once")
    assert code == 0, text
    code, text = run(capsys, "search", "Q3 budget", "--json")
    assert code == 0 and json.loads(text[text.index("{"):])["index"]["recordings"] == \
        SAMPLE_RECORDINGS, text


def _fifo(path: Path) -> None:
    path.unlink(missing_ok=True)
    os.mkfifo(path)


def _dev_zero(path: Path) -> None:
    path.unlink(missing_ok=True)
    path.symlink_to("/dev/zero")


def _directory(path: Path) -> None:
    path.unlink(missing_ok=True)
    path.mkdir()


NOT_A_FILE = {"fifo": _fifo, "dev_zero_symlink": _dev_zero, "directory": _directory}
STATE_FILES = ["vector-index/manifest.json", "vector-index/verified.json", "sync-state.json",
               "config.json", "indexer.lock", "account.json"]


@pytest.fixture
def watchdog() -> Iterator[None]:
    """A hang (a FIFO read) kills the run with a traceback instead of stalling CI."""
    import faulthandler

    faulthandler.dump_traceback_later(120, exit=True, file=sys.__stderr__)
    yield
    faulthandler.cancel_dump_traceback_later()


@pytest.mark.parametrize("kind", sorted(NOT_A_FILE))
@pytest.mark.parametrize("name", STATE_FILES)
def test_a_state_or_index_file_that_is_not_a_regular_file_never_hangs_or_traces_back(
        home: Path, capsys: pytest.CaptureFixture[str], watchdog: None, name: str,
        kind: str) -> None:
    path = home / name
    NOT_A_FILE[kind](path)
    for command in (["status"], ["search", "budget"], ["list"]):
        code, text = run(capsys, *command)
        assert "Traceback" not in text and code in (0, 1), text
        if code:
            assert str(path) in text or path.name in text, text
    if name.startswith("vector-index") or kind != "directory":
        code, text = run(capsys, "indexer", "--once")
        assert "Traceback" not in text, text
    if name == "vector-index/manifest.json" or kind == "directory":
        return  # the user is told to move it away; the indexer does not delete folders
    code, text = run(capsys, "search", "Q3 budget", "--json")
    assert code == 0, text


def test_a_manifest_naming_one_segment_twice_is_damage_and_healed(
        home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    manifest = home / "vector-index" / "manifest.json"
    data = json.loads(manifest.read_text())
    data["segments"].append(data["segments"][0])  # every size and checksum still valid
    manifest.write_text(json.dumps(data))
    code, text = run(capsys, "list", "--json")
    assert code == 1 and "twice" in text and "Traceback" not in text, text
    assert main(["indexer", "--once"]) == 0
    code, text = run(capsys, "list", "--json", "--limit", "50")
    listing = json.loads(text[text.index("{"):])
    assert code == 0 and listing["matched"] == SAMPLE_RECORDINGS
    assert len({r["file_id"] for r in listing["recordings"]}) == SAMPLE_RECORDINGS


def test_damage_a_search_meets_is_named_by_status_until_a_cycle_heals_it(
        home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Text whose checksum was made to match but that is not UTF-8: readers refuse it (the
    deep check of a new file identity decodes it), ``status`` names it instead of ok, and
    one cycle rebuilds it."""
    path = target(home, ".chunks.jsonl")
    data = bytes(b if b == ord("\n") else 0xFF for b in path.read_bytes())
    path.write_bytes(data)
    manifest_path = home / "vector-index" / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    for entry in manifest["segments"]:
        if path.name.startswith(entry["name"]):
            entry["files"][".chunks.jsonl"] = [len(data), zlib.crc32(data)]
    manifest_path.write_text(json.dumps(manifest))
    code, text = run(capsys, "search", "budget")
    assert code == 1 and path.name in text and "Traceback" not in text, text
    code, text = run(capsys, "status")
    assert "Health:       ok" not in text and path.name in text, text
    assert_one_cycle_heals(capsys)


def test_a_row_only_a_search_can_find_damaged_is_named_by_status_after_the_search(
        home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Valid UTF-8 that is no longer JSON, checksum matched: the open checks pass (rows are
    parsed only when shown), so status is ok until a search meets the row; from then on
    status names the file (read-damage.json) until one cycle rebuilds it."""
    manifest_path = home / "vector-index" / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    for entry in manifest["segments"]:  # every segment: whichever one a search shows
        path = home / "vector-index" / f"{entry['name']}.chunks.jsonl"
        data = path.read_bytes().replace(b'{"', b'x"')
        path.write_bytes(data)
        entry["files"][".chunks.jsonl"] = [len(data), zlib.crc32(data)]
    manifest_path.write_text(json.dumps(manifest))
    code, text = run(capsys, "status")
    assert "Health:       ok" in text, "the open checks were meant to pass: " + text
    code, text = run(capsys, "search", "budget")
    assert code == 1 and ".chunks.jsonl is damaged" in text and "Traceback" not in text, text
    named = text[text.index("seg-"):text.index(".chunks.jsonl")]
    code, text = run(capsys, "status")
    assert "Health:       ok" not in text and named in text, text
    assert_one_cycle_heals(capsys)
