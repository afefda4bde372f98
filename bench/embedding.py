#!/usr/bin/env python3
"""What onnxruntime's session options cost the packaged model: time and memory side by side.

    python bench/embedding.py [--queries 60] [--json] [--only NAME,...]

Each configuration runs in a fresh process (memory is per process) on the packaged int8
all-MiniLM-L6-v2 and measures:
- ``load_mb``: resident after the session is made (``VmRSS``);
- ``query_ms``: median of one short query at a time (tokenise + run + pool), each query a
  new length, as a search server sees them;
- ``scan_ms``: median of the 100k x 384 float32 scan run right after each query, as every
  search does: pool threads still spinning after a run take the cores it needs;
- ``q_rss_mb``: resident after the queries (what a serving process keeps);
- ``b128`` / ``b256``: chunks per second for batches of 8 x 128 and 4 x 256 tokens (the
  indexer's shapes under its 1024-token batch bound);
- ``peak_mb``: the process's peak (``VmHWM``).

The rows:
- ``floor``: a bare ``InferenceSession(path)`` with default options: the machine's floor;
- ``shipped-query`` / ``shipped-passage``: the ``OnnxEmbedder`` of this tree (its query
  session, then its passage session) -- what the product does, so ``bench/ab.py`` can run
  this script against another commit;
- the option grid: graph optimisation level x memory arena, pool threads spinning inside a
  run and stopped after it (as shipped); ``basic/arena/no-spin`` never spins and
  ``basic/arena/spin-on`` keeps spinning after a run (onnxruntime's default).
Ratios to the floor are printed beside every figure.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

import plaud_index  # noqa: F401  (first: it switches onnxruntime's telemetry off)

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from old_layout import alias_moved_modules  # noqa: E402

alias_moved_modules()
from floors import packaged_files, raw_query_embedder  # noqa: E402

WORDS = ["what", "did", "we", "decide", "about", "the", "budget", "for", "the", "third",
         "quarter", "and", "who", "owns", "the", "launch", "checklist", "database", "outage",
         "root", "cause", "hiring", "plan", "vendor", "contract", "pricing", "review"]
GRID = {  # name: (graph optimisation, memory arena, intra-op spinning)
    "disable/no-arena": ("ORT_DISABLE_ALL", False, "stop"),
    "disable/arena": ("ORT_DISABLE_ALL", True, "stop"),
    "basic/no-arena": ("ORT_ENABLE_BASIC", False, "stop"),
    "basic/arena": ("ORT_ENABLE_BASIC", True, "stop"),
    "basic/arena/no-spin": ("ORT_ENABLE_BASIC", True, "never"),
    "basic/arena/spin-on": ("ORT_ENABLE_BASIC", True, "keep"),
    "extended/no-arena": ("ORT_ENABLE_EXTENDED", False, "stop"),
    "all/no-arena": ("ORT_ENABLE_ALL", False, "stop"),
    "all/arena": ("ORT_ENABLE_ALL", True, "stop"),
}
ROWS = ["floor", "shipped-query", "shipped-passage", *GRID]


def rss_mb(field: str = "VmRSS") -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return 0.0


def queries(count: int) -> list[str]:
    """Short queries of 3..14 words, each one a different text (and most a new length)."""
    rng = np.random.default_rng(27)
    return [" ".join(rng.choice(WORDS, 3 + i % 12)) for i in range(count)]


def _session(name: str) -> Any:
    import onnxruntime as ort

    path = str(packaged_files().onnx_path)
    if name == "floor":
        return ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    level, arena, spin = GRID[name]
    options = ort.SessionOptions()
    options.add_session_config_entry("session.intra_op.allow_spinning",
                                     "0" if spin == "never" else "1")
    if spin == "stop":
        options.add_session_config_entry("session.force_spinning_stop", "1")
    options.add_session_config_entry("session.inter_op.allow_spinning", "0")
    options.graph_optimization_level = getattr(ort.GraphOptimizationLevel, level)
    options.enable_cpu_mem_arena = arena
    return ort.InferenceSession(path, sess_options=options, providers=["CPUExecutionProvider"])


def _raw_batch(session: Any) -> Any:
    names = {i.name for i in session.get_inputs()}
    rng = np.random.default_rng(0)

    def run(rows: int, width: int) -> None:
        ids = rng.integers(1000, 29000, (rows, width), dtype=np.int64)
        ids[:, 0], ids[:, -1] = 101, 102
        feed = {"input_ids": ids, "attention_mask": np.ones_like(ids),
                "token_type_ids": np.zeros_like(ids)}
        session.run(None, {k: v for k, v in feed.items() if k in names})
    return run


def _shipped(name: str) -> tuple[Any, Any, Any]:
    """The tree's own embedder: its query path, and its passage path for batches."""
    from plaud_index.embedding.embedder import OnnxEmbedder

    embedder = OnnxEmbedder(packaged_files())
    rng = np.random.default_rng(0)
    words = np.array(WORDS)

    def batch(rows: int, width: int) -> None:
        # ~0.8 word pieces per word here: texts that tokenise to about `width` pieces
        texts = [" ".join(rng.choice(words, int(width * 0.8))) for _ in range(rows)]
        embedder.embed(texts)
    if name == "shipped-passage":
        embedder.embed(["warm the passage session"])
    return embedder, embedder.embed_query, batch


def measure(name: str, count: int) -> dict[str, Any]:
    t0 = time.perf_counter()
    if name.startswith("shipped"):
        _, query, batch = _shipped(name)
    else:
        session = _session(name)
        query, batch = raw_query_embedder(session), _raw_batch(session)
    load_s, load_mb = time.perf_counter() - t0, rss_mb()
    texts = queries(count)
    query("warm up")
    matrix = np.random.default_rng(1).standard_normal((100_000, 384), dtype=np.float32)
    times, scans = [], []
    for text in texts:
        t = time.perf_counter()
        vector = np.asarray(query(text), dtype=np.float32).reshape(-1)
        times.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        matrix @ vector[:384]
        scans.append((time.perf_counter() - t) * 1000)
    q_rss = rss_mb()
    throughput = {}
    for rows, width in ((8, 128), (4, 256)):
        batch(rows, width)  # the first run of a shape allocates
        t = time.perf_counter()
        for _ in range(4):
            batch(rows, width)
        throughput[f"b{width}"] = round(4 * rows / (time.perf_counter() - t), 1)
    return {"load_s": round(load_s, 2), "load_mb": round(load_mb),
            "query_ms": round(statistics.median(times), 2),
            "scan_ms": round(statistics.median(scans), 2), "q_rss_mb": round(q_rss),
            **throughput, "peak_mb": round(rss_mb("VmHWM"))}


def run_child(name: str, count: int) -> dict[str, Any]:
    out = subprocess.run([sys.executable, __file__, "--child", name, "--queries", str(count)],
                         capture_output=True, text=True, check=True)
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--queries", type=int, default=60)
    ap.add_argument("--only", help="comma-separated rows (default: all)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(measure(args.child, args.queries)))
        return 0
    names = args.only.split(",") if args.only else ROWS
    if "floor" not in names:
        names = ["floor", *names]
    rows = {name: run_child(name, args.queries) for name in names}
    if args.json:
        print(json.dumps({"rows": rows}, indent=2))
        return 0
    floor = rows["floor"]
    keys = ["query_ms", "scan_ms", "load_mb", "q_rss_mb", "b128", "b256", "peak_mb"]
    print(f"{'session':18s}" + "".join(f"{k:>16s}" for k in keys))
    for name, row in rows.items():
        cells = [f"{row[k]} ({row[k] / floor[k]:.2f}x)" if floor[k] else str(row[k])
                 for k in keys]
        print(f"{name:18s}" + "".join(f"{c:>16s}" for c in cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
