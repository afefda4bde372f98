"""The on-disk index: crash safety, readers during commits, incrementality, model change."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from helpers import answers_of, indexed, make_chunks

from plaud_index.config import build_config
from plaud_index.embedding.embedder import HashEmbedder
from plaud_index.errors import IndexCorruptError, IndexSchemaError
from plaud_index.index import files as files_module
from plaud_index.index import trust as trust_module
from plaud_index.index.manifest import MANIFEST, SCHEMA_VERSION, STAGED, ModelInfo
from plaud_index.index.merge import MERGE_FACTOR
from plaud_index.index.records import ChunkRow
from plaud_index.index.segment_files import SUFFIXES
from plaud_index.index.snapshot import Snapshot
from plaud_index.index.store import manifest_key, open_snapshot
from plaud_index.index.writer import IndexWriter, open_writer
from plaud_index.search.rank import make_request, search

EMBEDDER = HashEmbedder()
MODEL = ModelInfo(EMBEDDER.model_id, EMBEDDER.model_hash, EMBEDDER.dim)
OTHER_MODEL = ModelInfo("other/model", "0" * 64, EMBEDDER.dim)


def put(writer: IndexWriter, file_id: str, n: int = 3, words: str = "budget plan",
        digest: str = "h1") -> None:
    chunks = make_chunks(file_id, n, words)
    writer.put(indexed(file_id, n, digest=digest), chunks,
               EMBEDDER.embed([c.embed_text for c in chunks]))


def segment_files(directory: Path) -> dict[str, tuple[int, int]]:
    return {p.name: (p.stat().st_ino, p.stat().st_mtime_ns)
            for p in directory.iterdir() if p.name.startswith("seg-")}


def test_no_index_opens_as_none(tmp_path: Path) -> None:
    assert open_snapshot(tmp_path / "missing") is None
    assert manifest_key(tmp_path / "missing") is None


def test_commit_then_read_back(tmp_path: Path) -> None:
    writer = open_writer(tmp_path, MODEL)
    put(writer, "a")
    put(writer, "b", 2)
    assert writer.commit()
    snap = open_snapshot(tmp_path)
    assert snap is not None
    assert sorted(snap.by_id) == ["a", "b"] and snap.live_chunks == 5
    manifest = json.loads((tmp_path / MANIFEST).read_text())
    assert manifest["schema"] == SCHEMA_VERSION == 3 and manifest["model"]["id"] == MODEL.model_id
    assert manifest["analyzer"] == "unicode-1"
    assert manifest["model"]["dim"] == MODEL.dim and manifest["model"]["dtype"] == "float32"
    assert manifest["counts"] == {"recordings": 2, "chunks": 5}
    assert manifest["created_at"] and manifest["updated_at"]
    row = snap.chunks.index(next(c for c in snap.chunks if c.file_id == "a"))
    np.testing.assert_allclose(np.linalg.norm(snap.vector_of(row)), 1.0, rtol=1e-5)


def test_nothing_pending_commits_nothing(tmp_path: Path) -> None:
    writer = open_writer(tmp_path, MODEL)
    assert not writer.commit()
    assert not (tmp_path / MANIFEST).exists()


def test_adding_k_chunks_writes_only_a_new_segment(tmp_path: Path) -> None:
    writer = open_writer(tmp_path, MODEL)
    for i in range(5):
        put(writer, f"big{i}", 50)
        writer.commit()
    before = segment_files(tmp_path)
    manifest_size = (tmp_path / MANIFEST).stat().st_size
    put(writer, "small", 2)
    writer.commit()
    after = segment_files(tmp_path)
    assert {k: v for k, v in after.items() if k in before} == before  # untouched
    new = sorted(set(after) - set(before))
    assert len(new) == len(SUFFIXES)  # one new segment's files
    vec = next(n for n in new if n.endswith(".vec.npy"))
    assert np.load(tmp_path / vec).shape == (2, MODEL.dim)
    assert (tmp_path / MANIFEST).stat().st_size < manifest_size + 500  # one segment entry


def test_replacing_a_recording_tombstones_its_old_rows(tmp_path: Path) -> None:
    writer = open_writer(tmp_path, MODEL)
    put(writer, "a", 3)
    put(writer, "b", 3)
    writer.commit()
    put(writer, "a", 1, words="revised", digest="h2")
    writer.commit()
    snap = open_snapshot(tmp_path)
    assert snap is not None
    live_a = [c for i, c in enumerate(snap.chunks) if snap.live[i] and c.file_id == "a"]
    assert [c.text for c in live_a] == ["revised a part 0"]
    assert snap.recordings[snap.by_id["a"]].content_hash == "h2"
    assert snap.live_chunks == 4


def test_delete_removes_a_recording(tmp_path: Path) -> None:
    writer = open_writer(tmp_path, MODEL)
    put(writer, "a")
    put(writer, "b")
    writer.commit()
    writer.delete("a")
    writer.commit()
    snap = open_snapshot(tmp_path)
    assert snap is not None and list(snap.by_id) == ["b"]
    assert all(c.file_id == "b" for i, c in enumerate(snap.chunks) if snap.live[i])


def test_deleted_then_re_added_recording_is_live(tmp_path: Path) -> None:
    writer = open_writer(tmp_path, MODEL)
    put(writer, "a")
    writer.commit()
    writer.delete("a")
    writer.commit()
    put(writer, "a", 2)
    writer.commit()
    snap = open_snapshot(tmp_path)
    assert snap is not None and snap.live_chunks == 2 and "a" in snap.by_id


def test_merges_bound_segments_and_keep_data(tmp_path: Path) -> None:
    writer = open_writer(tmp_path, MODEL)
    for i in range(MERGE_FACTOR * 2 + 3):
        put(writer, f"r{i}", 2)
        writer.commit()
    manifest = json.loads((tmp_path / MANIFEST).read_text())
    assert len(manifest["segments"]) < MERGE_FACTOR and writer.merges >= 2
    snap = open_snapshot(tmp_path)
    assert snap is not None and len(snap.recordings) == MERGE_FACTOR * 2 + 3
    assert snap.live_chunks == 2 * len(snap.recordings)
    names = {s["name"] for s in manifest["segments"]}
    on_disk = {p.name.split(".")[0] for p in tmp_path.iterdir() if p.name.startswith("seg-")}
    assert on_disk == names  # superseded segments were removed


def test_many_replacements_trigger_compaction_that_drops_tombstones(tmp_path: Path) -> None:
    writer = open_writer(tmp_path, MODEL)
    put(writer, "a", 10)
    writer.commit()
    for v in range(3):
        put(writer, "a", 10, words=f"v{v}", digest=f"h{v}")
        writer.commit()
    manifest = json.loads((tmp_path / MANIFEST).read_text())
    assert manifest["dead"] == {}  # compaction ran
    snap = open_snapshot(tmp_path)
    assert snap is not None and len(snap.chunks) == 10 and snap.live_chunks == 10


def test_known_vector_reuses_committed_embeddings(tmp_path: Path) -> None:
    writer = open_writer(tmp_path, MODEL)
    put(writer, "a", 2)
    writer.commit()
    chunk = make_chunks("a", 2)[1]
    np.testing.assert_allclose(writer.known_vector(chunk),
                               EMBEDDER.embed([chunk.embed_text])[0], rtol=1e-6)
    assert writer.known_vector(make_chunks("a", 3, words="other")[2]) is None
    assert writer.known_vector(make_chunks("z", 2)[1]) is None


def test_newer_schema_is_a_clear_error(tmp_path: Path) -> None:
    writer = open_writer(tmp_path, MODEL)
    put(writer, "a")
    writer.commit()
    manifest = json.loads((tmp_path / MANIFEST).read_text())
    (tmp_path / MANIFEST).write_text(json.dumps({**manifest, "schema": 99}))
    with pytest.raises(IndexSchemaError, match="newer plaud-index-mcp"):
        open_snapshot(tmp_path)


def test_garbage_manifest_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / MANIFEST).write_text("{torn")
    with pytest.raises(IndexCorruptError, match="Delete"):
        open_snapshot(tmp_path)


def test_model_change_rebuilds_beside_the_live_index(tmp_path: Path) -> None:
    writer = open_writer(tmp_path, MODEL)
    put(writer, "a")
    put(writer, "b")
    writer.commit()
    rebuild = open_writer(tmp_path, OTHER_MODEL)
    assert rebuild.rebuilding and rebuild.recordings() == {}
    put(rebuild, "a")
    rebuild.commit()
    live = open_snapshot(tmp_path)
    assert live is not None and live.model == MODEL and len(live.recordings) == 2
    # a restart resumes the staged re-index instead of starting over
    resumed = open_writer(tmp_path, OTHER_MODEL)
    assert resumed.rebuilding and list(resumed.recordings()) == ["a"]
    put(resumed, "b")
    resumed.commit()
    resumed.promote()
    live = open_snapshot(tmp_path)
    assert live is not None and live.model == OTHER_MODEL and len(live.recordings) == 2
    assert not (tmp_path / STAGED).exists()
    names = {s.name for s in live.manifest.segments}
    assert {p.name.split(".")[0] for p in tmp_path.glob("seg-*")} == names


def test_readers_never_see_a_torn_state_during_commits(tmp_path: Path) -> None:
    writer = open_writer(tmp_path, MODEL)
    put(writer, "seed", 5)
    writer.commit()
    errors: list[BaseException] = []
    seen: list[int] = []
    stop = threading.Event()
    first = open_snapshot(tmp_path)  # held across every merge below

    def read() -> None:
        while not stop.is_set():
            try:
                snap = open_snapshot(tmp_path)
                assert snap is not None
                assert snap.manifest.counts["chunks"] == snap.live_chunks
                assert snap.live_chunks == 5 * len(snap.recordings)
                query = EMBEDDER.embed(["budget"])[0]
                assert len(snap.cosine(query)) == len(snap.chunks)
                hits = search(snap, make_request("budget plan"), query)
                assert hits and all(m.snippet for h in hits for m in h.moments)
                seen.append(snap.generation)
            except BaseException as exc:  # noqa: BLE001 - collected for the assert below
                errors.append(exc)

    readers = [threading.Thread(target=read) for _ in range(3)]
    for t in readers:
        t.start()
    for i in range(40):
        put(writer, f"r{i}", 5)
        if i % 5 == 0:
            put(writer, "seed", 5, words=f"again{i}", digest=f"x{i}")
        writer.commit()
    stop.set()
    for t in readers:
        t.join()
    assert not errors, errors[:3]
    assert len(set(seen)) > 5  # readers really did observe many generations
    assert writer.merges >= 3  # and merges retired segments under them
    assert first is not None and [c.text for c in first.chunks] == [
        f"budget plan seed part {i}" for i in range(5)]  # its files are gone; its maps live
    assert not any(p.name.startswith(first.segments[0].name) for p in tmp_path.iterdir())


def commit_each(directory: Path, recordings: int, chunks: int) -> IndexWriter:
    """A writer that committed ``recordings`` recordings one at a time."""
    writer = open_writer(directory, MODEL)
    for i in range(recordings):
        put(writer, f"r{i}", chunks)
        writer.commit()
    return writer


def test_opening_an_index_parses_no_chunk(tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    commit_each(tmp_path, 30, 20)
    parsed: list[object] = []
    original = ChunkRow.from_json
    monkeypatch.setattr(ChunkRow, "from_json",
                        classmethod(lambda cls, d: parsed.append(d) or original(d)))
    snap = open_snapshot(tmp_path)
    again = open_writer(tmp_path, MODEL)  # what a quiet indexer cycle does
    assert snap is not None and len(again.recordings()) == 30 and snap.live_chunks == 600
    assert parsed == []  # per-row data is arrays; chunk lines wait for a result to show them
    hits = search(snap, make_request("budget", limit=2), None)
    assert len(hits) == 2 and 0 < len(parsed) <= 2 * 3 + 2


def test_checksums_are_trusted_across_processes_and_decay_is_scrubbed_out(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    commit_each(tmp_path, 4, 30)
    reads: list[Path] = []
    original = files_module.crc32_of
    monkeypatch.setattr(files_module, "crc32_of", lambda p: reads.append(p) or original(p))
    open_writer(tmp_path, MODEL)
    assert reads == []  # every file was checked by the writer that wrote it
    vectors = next(tmp_path.glob("seg-*.vec.npy"))
    stat = vectors.stat()
    data = bytearray(vectors.read_bytes())
    data[-7] ^= 0x10  # decay: one bit, same size, same mtime, same inode
    with vectors.open("r+b") as fh:
        fh.write(data)
    os.utime(vectors, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    monkeypatch.setattr(trust_module, "SCRUB_BYTES", 20_000)  # a few files per open
    for _ in range(40):
        with caplog.at_level("ERROR"):
            again = open_writer(tmp_path, MODEL)
        if again.rebuilding:
            break
    assert again.rebuilding and f"{vectors.name} is damaged" in caplog.text


def _crash_writer(directory: Path, start: int, *flags: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(Path(__file__).parent), str(Path(__file__).parent.parent)])}
    return subprocess.Popen(
        [sys.executable, str(Path(__file__).parent / "crash_writer.py"), str(directory),
         str(start), *flags], stdout=subprocess.PIPE, text=True, env=env)


def _check_after_kill(directory: Path, committed: set[str]) -> int:
    """The index opens whatever instant the kill hit, holds every committed recording
    whole, and reads; returns the next recording number to write."""
    snap = open_snapshot(directory)
    if snap is None:
        assert not committed
        return 0
    assert committed <= set(snap.by_id), sorted(committed - set(snap.by_id))[:5]
    assert snap.live_chunks == sum(r.chunk_count for r in snap.recordings)
    for r in np.flatnonzero(snap.live):
        assert snap.chunks[int(r)].file_id == snap.recordings[snap.row_recording[r]].file_id
    assert search(snap, make_request("budget rec"), EMBEDDER.embed_query("budget"))
    return max(int(f[3:]) for f in snap.by_id) + 1


def test_kill_9_at_random_points_never_loses_a_committed_recording(tmp_path: Path) -> None:
    directory = tmp_path / "index"
    rng = random.Random(1234)
    committed: set[str] = set()
    next_id = 0
    for _ in range(12):
        child = _crash_writer(directory, next_id)
        assert child.stdout is not None
        first = child.stdout.readline()  # wait until it is committing, however slow the box
        time.sleep(rng.random() * 0.4)  # then kill at a random instant of its commit loop
        child.kill()
        out, _ = child.communicate()
        committed.update(line.split()[1] for line in (first + out).splitlines()
                         if line.startswith("committed"))
        next_id = _check_after_kill(directory, committed)
    assert len(committed) >= 12


def test_kill_9_inside_merges_never_loses_a_committed_recording(tmp_path: Path) -> None:
    directory = tmp_path / "index"
    rng = random.Random(99)
    committed: set[str] = set()
    next_id = kills = 0
    while kills < 8:
        child = _crash_writer(directory, next_id, "--announce-merges")
        assert child.stdout is not None
        lines = []
        for line in child.stdout:  # commits until a merge starts (every ten or so)
            lines.append(line)
            if line.startswith("merging"):
                time.sleep(rng.random() * 0.03)  # somewhere inside that merge
                break
        child.kill()
        out, _ = child.communicate()
        kills += any(line.startswith("merging") for line in lines)
        committed.update(line.split()[1] for line in ["".join(lines) + out][0].splitlines()
                         if line.startswith("committed"))
        next_id = _check_after_kill(directory, committed)
    writer = open_writer(directory, MODEL)  # the next cycle: trusted, merged, tidy
    put(writer, "after", 3)
    writer.commit()
    snap = open_snapshot(directory)
    assert snap is not None and committed | {"after"} <= set(snap.by_id)
    named = {f"{s.name}{suffix}" for s in snap.manifest.segments for suffix in SUFFIXES}
    assert {p.name for p in directory.glob("seg-*")} == named


FIXTURE_V1 = Path(__file__).parent / "fixtures" / "index-v1"  # tests/fixtures/make_index_v1.sh


def test_an_index_of_the_previous_version_is_upgraded_without_re_embedding(
        tmp_path: Path) -> None:
    directory = tmp_path / "vector-index"
    shutil.copytree(FIXTURE_V1, directory)
    old = open_snapshot(directory)
    assert old is not None and (old.manifest.schema, old.manifest.analyzer) == (1, "ascii-1")
    with np.load(next(directory.glob("seg-*.kw.npz"))) as kw:  # the old cut
        assert "kündigungsfrist" not in kw["terms"] and "k" in kw["terms"]
    vectors = np.concatenate([np.asarray(s.vectors) for s in old.segments])
    hash_model = ModelInfo("mock/hash-embedder", "mock-hash-v1", 128)
    open_writer(directory, hash_model)  # what the indexer does first, every cycle
    new = open_snapshot(directory)
    assert new is not None and (new.manifest.schema, new.manifest.analyzer) == (
        SCHEMA_VERSION, "unicode-1")
    assert sorted(new.by_id) == sorted(old.by_id) and new.live_chunks == old.live_chunks
    np.testing.assert_array_equal(
        np.concatenate([np.asarray(s.vectors) for s in new.segments]), vectors)
    for query in ("Kündigungsfrist", "Küche", "Munchen"):
        hits = search(new, make_request(query, mode="keyword"), None)
        assert hits and hits[0].file_id == "v1-german", query
    assert search(new, make_request("budget", mode="keyword"), None)[0].file_id == "v1-english"
    assert {p.name.split(".")[0] for p in directory.glob("seg-*")} == {
        s.name for s in new.manifest.segments}  # the old segment files are gone


FIXTURE_V2 = Path(__file__).parent / "fixtures" / "index-v2"  # tests/fixtures/make_index_v2.sh
V2_QUERIES = ["Kündigungsfrist", "budget offsite", "予算会議", "release train", "deleted"]


def _answers(snap: Snapshot) -> list[list[tuple[str, float, str]]]:
    answers = []
    for query in V2_QUERIES:
        for mode in ("keyword", "hybrid"):
            hits = search(snap, make_request(query, mode=mode),
                          EMBEDDER.embed_query(query) if mode == "hybrid" else None)
            answers.append([(h.file_id, h.score, h.snippet) for h in hits])
    return answers


def test_a_schema_2_index_is_read_then_converted_without_losing_anything(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    directory = tmp_path / "vector-index"
    shutil.copytree(FIXTURE_V2, directory)
    old = open_snapshot(directory)  # a reader before the indexer's next cycle
    assert old is not None and old.manifest.schema == 2 and len(old.segments) == 3
    assert "v2-gone" not in old.by_id and old.manifest.dead  # a deletion and a replacement
    before = _answers(old)
    vectors = {old.chunks[r].chunk_id: old.vector_of(r) for r in np.flatnonzero(old.live)}
    with caplog.at_level("WARNING"):
        open_writer(directory, MODEL)  # what the indexer does first, every cycle
    assert "converting its 3 segments" in caplog.text and "nothing is embedded" in caplog.text
    new = open_snapshot(directory)
    assert new is not None and new.manifest.schema == SCHEMA_VERSION
    assert new.manifest.dead == old.manifest.dead
    assert new.recordings == old.recordings and new.live_chunks == old.live_chunks
    assert {new.chunks[r].chunk_id: new.chunks[r] for r in np.flatnonzero(new.live)} == {
        old.chunks[r].chunk_id: old.chunks[r] for r in np.flatnonzero(old.live)}
    for r in np.flatnonzero(new.live):
        np.testing.assert_array_equal(new.vector_of(r), vectors[new.chunks[r].chunk_id])
    assert _answers(new) == before and before[0][0][0] == "v2-german"
    assert not list(directory.glob("*.meta.json")) and not list(directory.glob("*.kw.npz"))


def test_the_search_service_upgrades_an_old_index_when_no_indexer_runs(
        tmp_path: Path) -> None:
    home = tmp_path / "home"
    shutil.copytree(FIXTURE_V1, home / "vector-index")
    config = build_config({"PLAUD_INDEX_HOME": str(home), "PLAUD_EMBEDDER": "mock"}, None)
    result = answers_of(config).search.search(make_request("Kündigungsfrist", mode="keyword"))
    assert [h.file_id for h in result.results][:1] == ["v1-german"]
    snap = open_snapshot(home / "vector-index")
    assert snap is not None and snap.manifest.analyzer == "unicode-1"


def test_an_index_of_many_segments_opens_under_a_low_open_file_limit(
        index_home: Path) -> None:
    """Every mapped file holds a descriptor; macOS starts processes at 256, and an index of
    a few dozen segments maps a few hundred files."""
    import resource

    directory = index_home / "vector-index"
    writer = commit_each(directory, MERGE_FACTOR - 1, 3)  # a segment each, below a merge
    assert len(writer.manifest.segments) == MERGE_FACTOR - 1
    low = 40  # fewer than the files the index maps

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE,
                           (low, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))

    env = {**os.environ, "PLAUD_EMBEDDER": "mock", "PLAUD_CLIENT": "mock"}
    done = subprocess.run([sys.executable, "-m", "plaud_index", "search", "budget", "--json"],
                          env=env, capture_output=True, text=True, preexec_fn=limit,
                          cwd=Path(__file__).parent.parent, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout)["index"]["recordings"] == MERGE_FACTOR - 1
