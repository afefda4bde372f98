"""Test helpers: raw Plaud payloads and an in-memory recording source."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import zlib
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

from plaud_index.plaud import PlaudSource
from plaud_index.plaud.mock import load_corpus

SAMPLE_RECORDINGS = len(load_corpus())  # the bundled sample corpus
REPO = Path(__file__).resolve().parent.parent
DEV_MEETINGS = Path("shared") / "eval" / "dev" / "files.jsonl"  # real-length meetings (1-2 h)


def dev_corpus() -> Path:
    """The dev meetings: ``shared/`` beside this checkout, or beside the local repository
    it was cloned from (a fresh clone in a temporary folder, as CI and a reviewer make)."""
    beside = [REPO.parent]
    origin = subprocess.run(["git", "config", "--get", "remote.origin.url"], cwd=REPO,
                            capture_output=True, text=True).stdout.strip()
    if origin and Path(origin).is_dir():
        beside.append(Path(origin).resolve().parent)
    for folder in beside:
        if (folder / DEV_MEETINGS).is_file():
            return folder / DEV_MEETINGS
    raise AssertionError(f"{DEV_MEETINGS} (the shared evaluation data) is needed beside "
                         f"{' or '.join(str(f) for f in beside)}")


def dev_meetings(n: int) -> list[dict[str, Any]]:
    """The first ``n`` real-length dev meetings (about 75 chunks each), as the mock reads."""
    with dev_corpus().open() as fh:
        return [json.loads(line) for line, _ in zip(fh, range(n), strict=False)]


def write_corpus(path: Path, meetings: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(m) + "\n" for m in meetings))
    return path


@contextmanager
def cpu_hogs(n: int = 8) -> Iterator[None]:
    """A loaded machine: ``n`` processes spinning beside the code under test."""
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]
    try:
        yield
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()


def detail(file_id: str = "f" * 32, *, name: str = "Weekly sync",
           created_at: str = "2026-03-02T10:00:00", segments: list[dict[str, Any]] | None = None,
           note: str | None = None, **extra: Any) -> dict[str, Any]:
    """A raw developer-API detail payload (API.md §3.2) with inline blocks."""
    segments = segments if segments is not None else [
        {"start_time": 0, "end_time": 4000, "content": "Let's review the budget.",
         "speaker": "Ann", "original_speaker": "Speaker 1"},
        {"start_time": 4500, "end_time": 9000, "content": "Marketing is under plan.",
         "speaker": "Bo", "original_speaker": "Speaker 2"},
    ]
    payload: dict[str, Any] = {
        "id": file_id, "name": name, "created_at": created_at, "start_at": created_at,
        "duration": 9000, "serial_number": None,
        "source_list": [{"data_id": "t", "data_type": "transaction", "data_title": "",
                         "data_content": json.dumps(segments), "data_link": ""}],
        "note_list": [] if note is None else [{
            "data_id": "n", "data_type": "auto_sum_note", "data_title": "Summary",
            "data_tab_name": "Summary", "data_content": note, "data_link": ""}],
    }
    payload.update(extra)
    return payload


class FakeSource(PlaudSource):
    """An in-memory Plaud (raw detail JSON) behind the real adapter, with a call log
    (a fake, not a mock). It is its own raw client."""

    def __init__(self, details: list[dict[str, Any]]) -> None:
        super().__init__(self)
        self.details = {d["id"]: d for d in details}
        self.detail_calls: list[str] = []
        self.listing_override: list[dict[str, Any]] | None = None

    def list_files(self, tail_hint: str | None = None) -> list[dict[str, Any]]:
        if self.listing_override is not None:
            return self.listing_override
        return [{k: d.get(k) for k in ("id", "name", "created_at", "start_at", "duration")}
                for d in self.details.values()]

    def get_file(self, file_id: str) -> dict[str, Any]:
        self.detail_calls.append(file_id)
        return self.details[file_id]


def make_chunks(file_id: str, n: int, words: str = "budget plan") -> list[Any]:
    """``n`` chunks for ``file_id`` with distinct text (for store tests)."""
    from plaud_index.models import Chunk

    return [Chunk(chunk_id=f"{file_id}-{i}-{zlib.crc32(words.encode())}", file_id=file_id,
                  source="transcript", text=f"{words} {file_id} part {i}",
                  embed_text=f"{words} {file_id} part {i}", start_ms=i * 1000,
                  end_ms=i * 1000 + 900, speakers=("Ann",), line_ms=(i * 1000,),
                  line_speakers=("Ann",)) for i in range(n)]


def indexed(file_id: str, chunks: int, *, title: str = "Rec", digest: str = "h1",
            created_at: str = "2026-03-02T10:00:00+00:00") -> Any:
    from plaud_index.index.records import IndexedRecording

    return IndexedRecording(file_id, title, created_at, 1000, digest, ("Ann",), (), chunks)


@asynccontextmanager
async def mcp_session(env: dict[str, str]) -> AsyncIterator[Any]:
    """The real server (``python -m plaud_index`` with exactly ``env``) through the SDK's
    stdio client, initialized; its stderr discarded."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=sys.executable, args=["-m", "plaud_index"],
                                   env=env, cwd=REPO)
    with open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), \
                ClientSession(read, write) as session:
            await session.initialize()
            yield session


async def tool_result(session: Any, tool: str, **arguments: Any) -> dict[str, Any]:
    """A tool call through an MCP ``ClientSession`` that must succeed: its structured result."""
    result = await session.call_tool(tool, arguments)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return dict(result.structured_content)


async def tool_error(session: Any, tool: str, **arguments: Any) -> str:
    """A tool call that must fail: the error text the model sees."""
    result = await session.call_tool(tool, arguments)
    assert result.is_error
    return str(result.content[0].text)


def build_snapshot(directory: Any, raws: list[dict[str, Any]], *,
                   segment_each: bool = False) -> Any:
    """Raw detail payloads → a committed index in ``directory`` (hash embedder, the real
    chunker and writer) → its snapshot. ``segment_each``: one commit per recording, so
    readers must span segments."""
    from plaud_index.chunker import Chunker
    from plaud_index.embedding.embedder import HashEmbedder
    from plaud_index.index.manifest import ModelInfo
    from plaud_index.index.store import open_snapshot
    from plaud_index.index.writer import open_writer
    from plaud_index.plaud.documents import normalize_recording
    from plaud_index.sync.indexer import content_hash, indexed_record

    embedder = HashEmbedder()
    writer = open_writer(directory, ModelInfo(embedder.model_id, embedder.model_hash,
                                              embedder.dim))
    chunker = Chunker(embedder.count_tokens)
    for raw in raws:
        rec = normalize_recording(raw)
        chunks = chunker.chunk(rec)
        writer.put(indexed_record(rec, content_hash(rec), len(chunks)), chunks,
                   embedder.embed([c.embed_text for c in chunks]))
        if segment_each:
            writer.commit()
    writer.commit()
    snap = open_snapshot(directory)
    assert snap is not None
    return snap


def run_cli(capsys: Any, *argv: str) -> tuple[int, str]:
    """``cli.main`` in-process (an uncaught exception fails the test): its exit code and
    everything it printed, stdout then stderr."""
    from plaud_index.cli import main

    capsys.readouterr()
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out + out.err


def wait_for_the_running_cycle(deadline_s: float = 120) -> None:
    """Until nobody holds the indexer lock: a ``search`` on an emptied index started the
    CLI's first sync in a process of its own, and an ``indexer --once`` beside it would
    only skip (the lock is the condition waited for, not a guessed time)."""
    from plaud_index.sync.lock import lock_holder

    lock = Path(os.environ["PLAUD_INDEX_HOME"]) / "indexer.lock"
    deadline = time.monotonic() + deadline_s
    while lock_holder(lock) is not None:
        assert time.monotonic() < deadline, f"a cycle still holds {lock}: {lock_holder(lock)}"
        time.sleep(0.05)


def assert_one_cycle_heals(capsys: Any) -> None:
    """After damage: one cycle (``indexer --once``, or the one a search started in the
    background) and every sample recording is searchable again, with ``status`` back to
    ok."""
    wait_for_the_running_cycle()
    code, text = run_cli(capsys, "indexer", "--once")
    assert code == 0, text
    code, text = run_cli(capsys, "search", "Q3 budget", "--json")
    assert code == 0, text
    assert json.loads(text[text.index("{"):])["index"]["recordings"] == SAMPLE_RECORDINGS
    code, text = run_cli(capsys, "status")
    assert code == 0 and "Health:       ok" in text, text


@contextmanager
def http_server(root: Path, port: int, *options: str) -> Iterator[dict[str, Any]]:
    """``serve --http --port PORT [options]`` on the bundled sample (indexed first, with the
    hash embedder) in ``root/home``, waited for on the record it writes once it listens;
    stopped on exit. Yields its ``env``, ``home``, ``log`` and ``token``."""
    home = root / "home"
    env = {**os.environ, "PLAUD_INDEX_HOME": str(home), "PLAUD_CLIENT": "mock",
           "PLAUD_EMBEDDER": "mock"}
    subprocess.run([sys.executable, "-m", "plaud_index", "indexer", "--once"], check=True,
                   capture_output=True, cwd=REPO, timeout=300, env=env)
    log = root / "serve.log"
    with log.open("w") as err:
        server = subprocess.Popen([sys.executable, "-m", "plaud_index", "serve", "--http",
                                   "--port", str(port), *options], cwd=REPO, env=env,
                                  stderr=err, stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while not (home / "http-server.json").exists():
            assert server.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        yield {"env": env, "home": home, "log": log,
               "token": (home / "http-token").read_text().strip()}
    finally:
        server.terminate()
        server.wait(30)


def answers_of(config: Any, embedder: Any = None, sync: Any = None) -> Any:
    """``Answers`` as the server and the CLI wire them: with a keeper (``sync``: the
    detached sync it starts; ``None``: a first sync of an empty index in the caller)."""
    from plaud_index.answers import Answers
    from plaud_index.sync.keeper import Keeper

    return Answers.of(config, embedder, keeper=Keeper(config, sync))
