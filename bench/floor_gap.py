#!/usr/bin/env python3
"""What no search can shave off: the gap between the floor and a search that does nothing
but embed and scan, and what running the keyword side beside the model would save.

    python bench/floor_gap.py --home DIR [--rounds 10] [--json]   # an index (scale.py --keep)

Issue 42 asks every mode's p50 to be at most 1.5x the floor: a bare session's query
embedding plus the numpy scan, each measured on its own. In one process, the measurements
taking turns (each over the ten queries of ``scale.py``, ``--rounds`` times, with a pause between
two for the threads a session leaves spinning), this prints the medians of:
- ``raw_embed_ms``: the bare default session (``floors.raw_query_embedder``);
- ``scan_ms``: the scan again and again (a matrix that fits the last cache is read from
  it), and ``floor_ms``, the two summed: issue 42's floor;
- ``embed_ms``: the product's own query embedding alone;
- ``minimal_ms``: the product's own query embedding followed at once by the scan with
  its vector: a "search" with no ranking, no BM25, no quotes (the scan reads the matrix
  from memory: the model's weights passed through the cache in between);
- ``keyword_ms``: a whole keyword search (BM25, top-k, the moments quoted, the answer):
  the Python side of a hybrid search;
- ``one_thread_embed_ms`` and ``beside_ms``: a one-thread session's query embedding
  alone, and its embedding run in a second thread while the first runs the keyword
  search (the wall time of both): what overlapping the two would cost at best.
Each figure's ratio to ``floor_ms`` is printed beside it.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from old_layout import Reader, alias_moved_modules, make_embedder  # noqa: E402

alias_moved_modules()
from floors import median_ms, packaged_files, raw_query_embedder  # noqa: E402
from profile_search import QUERIES  # noqa: E402

# between two measurements: a default session's pool threads spin on for a while after a
# run and would take the cores from the next (the scan after it twice as slow)
SETTLE_S = 0.1


def beside(embed: Callable[[str], object], search: Callable[[str], object],
           query: str) -> None:
    """``embed`` in a second thread while this one runs ``search``."""
    worker = threading.Thread(target=embed, args=(query,))
    worker.start()
    search(query)
    worker.join()


def measure(home: Path, rounds: int) -> dict[str, Any]:
    from plaud_index.config import build_config
    from plaud_index.embedding.embedder import OnnxEmbedder
    from plaud_index.search.rank import make_request

    config = build_config({"PLAUD_INDEX_HOME": str(home)}, None)
    reader = Reader(config, make_embedder(config))
    matrix = np.concatenate([np.asarray(s.vectors) for s in reader.snapshot().segments])
    ours, raw = reader.embedder, raw_query_embedder()
    single = OnnxEmbedder(packaged_files(), threads=1)

    def keyword(query: str) -> object:
        return reader.search(make_request(query, mode="keyword"))

    turns: dict[str, Callable[[str], object]] = {
        "raw_embed_ms": raw, "scan_ms": lambda _: matrix @ matrix[0],
        "embed_ms": ours.embed_query,
        "minimal_ms": lambda query: matrix @ ours.embed_query(query),
        "keyword_ms": keyword, "one_thread_embed_ms": single.embed_query,
        "beside_ms": lambda query: beside(single.embed_query, keyword, query)}
    times: dict[str, list[float]] = defaultdict(list)
    for _ in range(rounds):  # each measurement in turn, a block of queries at a time
        for name, fn in turns.items():
            time.sleep(SETTLE_S)
            times[name].append(median_ms(fn, QUERIES))
    result: dict[str, Any] = {k: round(statistics.median(v), 2) for k, v in times.items()}
    result["floor_ms"] = round(result["raw_embed_ms"] + result["scan_ms"], 2)
    result["chunks"] = int(len(matrix))
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--home", type=Path, required=True, help="an index built before")
    ap.add_argument("--rounds", type=int, default=9, help="turns of each measurement")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    result = measure(args.home, args.rounds)
    if args.json:
        print(json.dumps(result))
        return 0
    floor = result["floor_ms"]
    print(f"{result['chunks']} chunks; median ms, and the ratio to the floor ({floor} ms)")
    for name, value in result.items():
        if name != "chunks":
            print(f"{name:22s}{value:>8}{value / floor:>8.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
