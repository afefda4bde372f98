#!/usr/bin/env python3
"""How the index behaves at 10k / 100k / 1M chunks (issue 8's measurements).

    python bench/scale.py [--sizes 10000,100000] [--json]

Builds an index of realistic synthetic meetings (a vocabulary that keeps growing,
hundreds of speakers, five years of dates; 40 chunks of ~60 words per recording,
random unit float32 vectors of the packaged model's 384 dimensions) through the
real ``IndexWriter`` in commits of 25 recordings, each size in its own process,
then measures, each in a fresh process where it matters:
- build: seconds, bytes written / final index bytes (write amplification), the
  number of merges and the segments left, peak RSS; disk size;
- open: ``open_snapshot`` seconds and RSS;
- spawn → ``initialize`` and spawn → first ``plaud_search`` through the real stdio
  server (the real model loads in between);
- query p50/p95 in-process per mode and, in hybrid, per filter (date, speaker, source),
  each of 10 queries five times, the modes taking turns;
- the floors beside them (``floors.py``): the plain numpy mat-vec over the same matrix
  (``scan_ms``), the product's query embedding (``embed_ms``) and a bare default
  onnxruntime session's (``raw_embed_ms``); the table prints each p50 and p95 with its
  ratio to the floor, scan + raw embedding (``floor_ms``), and the worst p50 ratio, also
  to the two run one after the other as a search runs them (``sequence_ms``);
- one more 25-recording commit, and, in a fresh process, a no-change open of the
  writer (what every indexer cycle pays before it lists anything).
Prints one table, or with --json one object:
{"sizes": {"<N>": {...}}, "load": <1-min load average at the start>}.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
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
from floors import median_ms, raw_query_embedder, scan_ms, sequence_ms  # noqa: E402

CHUNKS_PER_RECORDING = 40
DIM = 384
QUERIES = ["budget decision for the quarter", "hiring plan engineers", "vendor contract",
           "database outage root cause", "launch checklist owner", "customer churn",
           "pricing page review", "security audit findings", "roadmap priorities",
           "migration timeline risks"]


def _words(rng: np.random.Generator, n_recording: int, count: int) -> str:
    vocab = 2000 + n_recording * 3  # grows with the corpus, like years of meetings
    ranks = np.minimum(rng.zipf(1.2, count), vocab)
    common = ["budget", "plan", "team", "customer", "launch", "vendor", "hiring", "risk",
              "review", "decision", "roadmap", "pricing", "security", "migration", "outage"]
    return " ".join(common[r] if r < len(common) else f"w{r}" for r in ranks)


FIVE_YEARS = 5 * 365 * 86400


def _recording(index: int, rng: np.random.Generator, count: int
               ) -> tuple[Any, list[Any], np.ndarray]:
    from plaud_index.index.records import IndexedRecording
    from plaud_index.models import Chunk

    file_id = f"rec{index:07d}"
    speakers = tuple(f"Speaker{s}" for s in rng.choice(400, 3, replace=False))
    # the ``count`` recordings spread over five years at every size: the date filter
    # (2023) keeps about a fifth of the rows
    day = 1_640_000_000 + int(index * FIVE_YEARS / max(count, 1)) % FIVE_YEARS
    created = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(day))
    chunks = []
    for c in range(CHUNKS_PER_RECORDING):
        source = "notes" if c == 0 else "transcript"
        who = speakers[c % 3]
        text = f"{who}: " + _words(rng, index, 60)
        chunks.append(Chunk(chunk_id=f"{file_id}-{c}", file_id=file_id, source=source,
                            text=text, embed_text=text, start_ms=c * 30_000,
                            end_ms=c * 30_000 + 29_000, speakers=(who,),
                            line_ms=(c * 30_000,), line_speakers=(who,)))
    vectors = rng.standard_normal((CHUNKS_PER_RECORDING, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    record = IndexedRecording(file_id, f"Meeting {index}", created, 1_200_000,
                              f"hash{index}", speakers, ("Summary",), CHUNKS_PER_RECORDING)
    return record, chunks, vectors


def _model() -> Any:
    from plaud_index.embedding.files import PACKAGED_MODEL_ID, packaged
    from plaud_index.index.manifest import ModelInfo

    files = packaged()
    assert files is not None, "bash .ci/setup first: the packaged model is needed"
    return ModelInfo(PACKAGED_MODEL_ID, files.sha256, DIM)


def _written() -> int:
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("write_bytes:"):
            return int(line.split()[1])
    return 0


def build(home: Path, chunks: int) -> dict[str, Any]:
    """In this process: the whole index, 25 recordings a commit, then one more commit."""
    from plaud_index.index.writer import open_writer

    rng = np.random.default_rng(8)
    directory = home / "vector-index"
    model = _model()
    before, started = _written(), time.perf_counter()
    recordings = chunks // CHUNKS_PER_RECORDING
    writer = open_writer(directory, model)
    for i in range(recordings):
        writer.put(*_recording(i, rng, recordings))
        if (i + 1) % 25 == 0 or i + 1 == recordings:
            writer.commit()
    build_s = time.perf_counter() - started
    written = _written() - before
    disk = sum(p.stat().st_size for p in directory.iterdir() if p.is_file())
    merges, segments = writer.merges, len(writer.manifest.segments)
    t0 = time.perf_counter()
    for i in range(recordings, recordings + 25):
        writer.put(*_recording(i, rng, recordings))
    writer.commit()
    commit25 = time.perf_counter() - t0
    return {"build_s": round(build_s, 2), "write_amp": round(written / max(disk, 1), 2),
            "merges": merges, "segments": segments, "disk_mb": round(disk / 1e6, 1),
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
            "commit25_s": round(commit25, 3)}


def measure_nochange(home: Path) -> dict[str, Any]:
    """What a quiet indexer cycle pays before it lists anything, in a fresh process (as
    ``indexer --once`` runs): open the writer (checksums of anything new, the rolling
    scrub) and read every recording's hash."""
    from plaud_index.index.writer import open_writer

    model = _model()
    t0 = time.perf_counter()
    writer = open_writer(home / "vector-index", model)
    hashes = {k: r.content_hash for k, r in writer.recordings().items()}
    assert hashes
    return {"nochange_s": round(time.perf_counter() - t0, 3),
            "nochange_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}


def measure_open(home: Path) -> dict[str, Any]:
    from plaud_index.index.store import open_snapshot

    t0 = time.perf_counter()
    snap = open_snapshot(home / "vector-index")
    open_s = time.perf_counter() - t0
    assert snap is not None
    return {"open_s": round(open_s, 3),
            "open_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}


def measure_queries(home: Path) -> dict[str, Any]:
    from old_layout import Reader, make_embedder

    from plaud_index.config import build_config
    from plaud_index.search.rank import make_request

    config = build_config({"PLAUD_INDEX_HOME": str(home)}, None)
    service = Reader(config, make_embedder(config))
    snap = service.snapshot()
    assert snap is not None
    cases = {"hybrid": {}, "keyword": {"mode": "keyword"}, "vector": {"mode": "vector"},
             "date": {"date_from": "2023-01-01", "date_to": "2023-12-31"},
             "speaker": {"speaker": "Speaker17"}, "source": {"source": "notes"}}
    times: dict[str, list[float]] = {name: [] for name in cases}
    for query in QUERIES * 5:  # the modes in turn: a burst of load hits all of them alike
        for name, extra in cases.items():
            t0 = time.perf_counter()
            service.search(make_request(query, **extra))  # type: ignore[arg-type]
            times[name].append((time.perf_counter() - t0) * 1000)
    p50, p95 = {}, {}
    for name, taken in times.items():
        taken.sort()
        p50[name], p95[name] = round(statistics.median(taken), 1), \
            round(taken[int(len(taken) * 0.95)], 1)
    matrix = np.concatenate([np.asarray(s.vectors) for s in snap.segments])
    queries = QUERIES * 3
    raw = raw_query_embedder()
    return {"p50_ms": p50, "p95_ms": p95, "scan_ms": scan_ms(matrix),
            "embed_ms": median_ms(service.embedder.embed_query, queries),
            "raw_embed_ms": median_ms(raw, queries),
            "sequence_ms": sequence_ms(matrix, queries)}


def measure_spawn(home: Path) -> dict[str, Any]:
    import asyncio

    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    async def run() -> tuple[float, float]:
        params = StdioServerParameters(command=sys.executable, args=["-m", "plaud_index"],
                                       env={**os.environ, "PLAUD_INDEX_HOME": str(home)},
                                       cwd=str(REPO))
        started = time.perf_counter()
        with open(os.devnull, "w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write), \
                    ClientSession(read, write) as session:
                await session.initialize()
                initialized = time.perf_counter() - started
                result = await session.call_tool("plaud_search", {"query": QUERIES[0]})
                assert not result.is_error, result.content
                return initialized, time.perf_counter() - started

    initialize_s, first_s = asyncio.run(run())
    return {"initialize_s": round(initialize_s, 2), "first_search_s": round(first_s, 2)}


def _in_child(step: str, home: Path, chunks: int) -> dict[str, Any]:
    out = subprocess.run([sys.executable, __file__, "--step", step, "--home", str(home),
                          "--sizes", str(chunks)], capture_output=True, text=True, check=True)
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--keep", action="store_true", help="keep the built indexes (printed)")
    ap.add_argument("--step", help=argparse.SUPPRESS)
    ap.add_argument("--home", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.step:
        steps = {"build": lambda: build(args.home, int(args.sizes)),
                 "open": lambda: measure_open(args.home),
                 "nochange": lambda: measure_nochange(args.home),
                 "queries": lambda: measure_queries(args.home),
                 "spawn": lambda: measure_spawn(args.home)}
        print(json.dumps(steps[args.step]()))
        return 0
    result: dict[str, Any] = {"sizes": {}, "load": os.getloadavg()[0]}
    for size in (int(s) for s in args.sizes.split(",")):
        home = Path(tempfile.mkdtemp(prefix=f"plaud-scale-{size}-"))
        row: dict[str, Any] = {}
        for step in ("build", "nochange", "open", "spawn", "queries"):
            row.update(_in_child(step, home, size))
        result["sizes"][str(size)] = row
        if args.keep:
            print(f"kept {home}", file=sys.stderr)
        else:
            shutil.rmtree(home)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"load average at start {result['load']:.2f}")
    keys = ["build_s", "write_amp", "merges", "segments", "peak_rss_mb", "disk_mb", "open_s",
            "open_rss_mb", "initialize_s", "first_search_s", "scan_ms", "commit25_s",
            "nochange_s", "nochange_rss_mb"]
    sizes = list(result["sizes"])
    print(f"{'':18s}" + "".join(f"{s:>16s}" for s in sizes))
    for key in keys:
        print(f"{key:18s}" + "".join(f"{result['sizes'][s][key]:>16}" for s in sizes))
    for key in ("embed_ms", "raw_embed_ms", "sequence_ms"):
        print(f"{key:18s}" + "".join(f"{result['sizes'][s][key]:>16}" for s in sizes))
    print(f"{'floor_ms':18s}" + "".join(f"{floor_ms(result['sizes'][s]):>16.2f}"
                                         for s in sizes))
    for kind in ("p50_ms", "p95_ms"):
        for mode in result["sizes"][sizes[0]][kind]:
            print(f"{kind[:3] + ' ' + mode:18s}" + "".join(
                f"{_with_floor(result['sizes'][s], kind, mode):>16}" for s in sizes))
    worst = max(row["p50_ms"][mode] / floor_ms(row) for row in result["sizes"].values()
                for mode in row["p50_ms"])
    in_sequence = max(row["p50_ms"][mode] / row["sequence_ms"]
                      for row in result["sizes"].values() for mode in row["p50_ms"])
    print(f"worst p50 / floor: {worst:.2f}x; / the embedding and scan in sequence: "
          f"{in_sequence:.2f}x")
    return 0


def floor_ms(row: dict[str, Any]) -> float:
    """What no search can beat, as issue 42 defines it: the plain scan of the matrix plus
    one query embedding through a bare onnxruntime session, both measured in this run."""
    return float(row["scan_ms"] + row["raw_embed_ms"])


def _with_floor(row: dict[str, Any], kind: str, mode: str) -> str:
    """A latency and its ratio to the floor (the same floor for every mode: keyword and the
    filters could beat it, the others cannot)."""
    value = row[kind][mode]
    return f"{value} ({value / floor_ms(row):.2f}x)"

if __name__ == "__main__":
    sys.exit(main())
