#!/usr/bin/env python3
"""Cold start and steady latency of the MCP server through stdio, from process start.

    python bench/server_latency.py [--chunks 10000] [--spawns 10] [--queries 50] [--json]

Builds an index of about --chunks chunks: real chunk texts (the bundled sample, repeated
under new ids until the count is reached) with random unit vectors stamped with the real
model's id and hash, so the server does real hybrid search over a realistic amount of data
without an hour of embedding (vector values do not change search cost). Then, for each of
--spawns fresh server processes, measures time to the initialize result and to the first
plaud_search result, and finally steady query latency p50/p95 over --queries calls.
``--chunks 0`` serves the bundled sample alone (one copy of each recording).

Beside the steady latency, in the same run: one query embedding by the product's embedder
(``embed_ms``) and by a bare default onnxruntime session (``raw_embed_ms``, the machine's
floor, ``floors.py``), both in this process over the same queries, and the server's
resident memory after the queries (``server_rss_mb``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from old_layout import alias_moved_modules  # noqa: E402

alias_moved_modules()
from floors import median_ms, raw_query_embedder  # noqa: E402

from plaud_index.chunker import Chunker  # noqa: E402
from plaud_index.config import build_config  # noqa: E402
from plaud_index.embedding.files import resolve_model  # noqa: E402
from plaud_index.index.manifest import ModelInfo  # noqa: E402
from plaud_index.index.writer import open_writer  # noqa: E402
from plaud_index.plaud import PlaudSource  # noqa: E402
from plaud_index.plaud.mock import MockClient  # noqa: E402
from plaud_index.sync.indexer import content_hash, indexed_record  # noqa: E402

QUERIES = ["what did we decide about the Q3 budget", "database outage root cause",
           "offline mode conflict resolution", "who owns the launch checklist",
           "cloud savings plan", "promotion timeline", "kitchen countertops quartz"]


def build_index(home: Path, target: int) -> int:
    files = resolve_model(build_config({"PLAUD_INDEX_HOME": str(home)}, None))
    model = ModelInfo(files.model_id, files.sha256, 384)
    writer = open_writer(home / "vector-index", model)
    source = PlaudSource(MockClient())
    recordings = [source.get_recording(file_id) for file_id in source.list_recordings()]
    chunker = Chunker()
    rng = np.random.default_rng(0)
    total, copy = 0, 0
    while total < max(target, 1):
        for rec in recordings:
            clone = rec.__class__(**{**rec.__dict__, "file_id": f"{rec.file_id}-{copy}"})
            chunks = chunker.chunk(clone)
            vectors = rng.standard_normal((len(chunks), 384)).astype(np.float32)
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            writer.put(indexed_record(clone, content_hash(clone), len(chunks)), chunks, vectors)
            total += len(chunks)
        copy += 1
        if copy % 25 == 0:
            writer.commit()
    writer.commit()
    return total


class Server:
    def __init__(self, home: Path) -> None:
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "plaud_index"], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=REPO,
            env={**os.environ, "PLAUD_INDEX_HOME": str(home)})
        self.next_id = 0

    def request(self, method: str, params: dict[str, object]) -> dict[str, object]:
        assert self.proc.stdin and self.proc.stdout
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        self.proc.stdin.write((json.dumps(message) + "\n").encode())
        self.proc.stdin.flush()
        reply: dict[str, object] = json.loads(self.proc.stdout.readline())
        return reply

    def notify(self, method: str) -> None:
        assert self.proc.stdin
        self.proc.stdin.write((json.dumps({"jsonrpc": "2.0", "method": method}) + "\n").encode())
        self.proc.stdin.flush()

    def search(self, query: str) -> dict[str, object]:
        reply = self.request("tools/call", {"name": "plaud_search",
                                            "arguments": {"query": query}})
        assert not reply["result"]["isError"], reply  # type: ignore[index]
        return reply

    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return 0.0

    def close(self) -> None:
        assert self.proc.stdin
        self.proc.stdin.close()
        self.proc.wait(timeout=10)


def initialize(server: Server) -> None:
    server.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                  "clientInfo": {"name": "bench", "version": "1"}})
    server.notify("notifications/initialized")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--chunks", type=int, default=10_000)
    ap.add_argument("--spawns", type=int, default=10)
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    home = Path(tempfile.mkdtemp(prefix="plaud-server-bench-"))
    chunks = build_index(home, args.chunks)
    init_s, first_s = [], []
    for i in range(args.spawns):
        server = Server(home)
        initialize(server)
        init_s.append(time.perf_counter() - server.started)
        server.search(QUERIES[i % len(QUERIES)])
        first_s.append(time.perf_counter() - server.started)
        server.close()
    server = Server(home)
    initialize(server)
    server.search("warm up")
    texts = [QUERIES[i % len(QUERIES)] + f" {i}" for i in range(args.queries)]
    steady = []
    for text in texts:
        t0 = time.perf_counter()
        server.search(text)
        steady.append((time.perf_counter() - t0) * 1000)
    server_rss = server.rss_mb()
    server.close()
    steady.sort()
    floors = {"embed_ms": median_ms(_embedder(home).embed_query, texts),
              "raw_embed_ms": median_ms(raw_query_embedder(), texts)}
    p50, p95 = statistics.median(steady), steady[int(len(steady) * 0.95) - 1]
    if args.json:
        print(json.dumps({"chunks": chunks, "initialize_s": statistics.median(init_s),
                          "first_search_s": statistics.median(first_s),
                          "p50_ms": round(p50, 2), "p95_ms": round(p95, 2),
                          "server_rss_mb": round(server_rss), **floors,
                          "p50_over_raw_embed": round(p50 / floors["raw_embed_ms"], 2)},
                         indent=2))
        return 0
    print(f"index: {chunks} chunks in {home}")
    print(f"initialize result: median {statistics.median(init_s):.3f}s "
          f"(min {min(init_s):.3f}, max {max(init_s):.3f}) over {args.spawns} spawns")
    print(f"first plaud_search result: median {statistics.median(first_s):.3f}s "
          f"(min {min(first_s):.3f}, max {max(first_s):.3f})")
    print(f"steady plaud_search through stdio: p50 {p50:.1f} ms, p95 {p95:.1f} ms over "
          f"{args.queries} queries; server resident {server_rss:.0f} MB after them")
    print(f"one query embedding in this process: {floors['embed_ms']:.1f} ms (the product's), "
          f"{floors['raw_embed_ms']:.1f} ms (a bare default session); the steady p50 is "
          f"{p50 / floors['raw_embed_ms']:.1f}x the bare one")
    return 0


def _embedder(home: Path) -> Any:
    from old_layout import make_embedder

    return make_embedder(build_config({"PLAUD_INDEX_HOME": str(home)}, None))


if __name__ == "__main__":
    sys.exit(main())
