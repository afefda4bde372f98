#!/usr/bin/env python3
"""Where one search's time goes, stage by stage, beside the floor (issue 42's profile).

    python bench/profile_search.py --size 10000 [--modes hybrid,speaker] [--json]
    python bench/profile_search.py --home DIR          # an index built before (scale.py --keep)

Runs the product's own search (``Answers``, or the ``SearchService`` of older commits, so
``bench/ab.py BASE -- bench/profile_search.py --home DIR --json`` profiles both sides) on
an index of ``scale.py``'s synthetic meetings, with each stage's function wrapped in a
timer. No sampling profiler: its overhead per call would swamp stages of microseconds.
Per search, the median of each stage's milliseconds:
- ``embed``: the query embedding (the product's session);
- ``filter``: the mask of rows the filters allow;
- ``scan``: the cosine of every allowed row (the matrix scan);
- ``keyword``: BM25 over the postings and the fusion with the scan;
- ``topk``: the best candidates, ``coverage``: which query words occur at all;
- ``read``: chunks read from the sidecar for the moments (JSON lines parsed);
- ``snippets``: quotes built around the matched words;
- ``moments``: the rest of choosing moments (merging, filler, labels);
- ``answer``: everything else (readiness, freshness, times in the user's zone, the result).
Beside them: ``total`` and the floor (``floors.py``: the plain scan of the same matrix plus
one bare-session query embedding), each total's ratio to it, and the two run in sequence
(``sequence_ms``: the scan after an embedding reads the matrix from memory, not cache).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from old_layout import Reader, alias_moved_modules, make_embedder  # noqa: E402

alias_moved_modules()
from floors import median_ms, raw_query_embedder, scan_ms, sequence_ms  # noqa: E402

QUERIES = ["budget decision for the quarter", "hiring plan engineers", "vendor contract",
           "database outage root cause", "launch checklist owner", "customer churn",
           "pricing page review", "security audit findings", "roadmap priorities",
           "migration timeline risks"]
MODES = {"hybrid": {}, "keyword": {"mode": "keyword"}, "vector": {"mode": "vector"},
         "date": {"date_from": "2023-01-01", "date_to": "2023-12-31"},
         "speaker": {"speaker": "Speaker17"}, "source": {"source": "notes"}}
STAGES = ["embed", "filter", "scan", "keyword", "topk", "coverage", "read", "snippets",
          "moments", "answer"]


class Stopwatch:
    """Milliseconds spent inside wrapped functions, per stage, for the current search."""

    def __init__(self) -> None:
        self.spent: dict[str, float] = defaultdict(float)

    def wrap(self, owner: Any, name: str, stage: str) -> None:
        original = getattr(owner, name, None)
        if original is None:
            return  # a commit without this function: the stage reads 0

        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                self.spent[stage] += (time.perf_counter() - started) * 1000
        setattr(owner, name, timed)


def instrument(watch: Stopwatch, reader: Reader) -> None:
    from plaud_index.index import snapshot
    from plaud_index.search import moments
    from plaud_index.search import rank as rank_module

    for name, stage in (("filter_mask", "filter"), ("similarities", "scan"),
                        ("chunk_scores", "keyword"), ("top_k", "topk"),
                        ("present_terms", "coverage"), ("pick_moments", "picking")):
        watch.wrap(rank_module, name, stage)
    watch.wrap(moments, "make_snippet", "snippets")
    watch.wrap(snapshot.ChunkTable, "_read", "read")
    watch.wrap(reader.embedder, "embed_query", "embed")


def profile(home: Path, modes: list[str], rounds: int) -> dict[str, Any]:
    from plaud_index.config import build_config
    from plaud_index.search.rank import make_request

    config = build_config({"PLAUD_INDEX_HOME": str(home)}, None)
    reader = Reader(config, make_embedder(config))
    for query in QUERIES:  # warm: the index opened, the model loaded, pages mapped
        reader.search(make_request(query))
    watch = Stopwatch()
    instrument(watch, reader)
    snap = reader.snapshot()
    matrix = np.concatenate([np.asarray(s.vectors) for s in snap.segments])
    raw = raw_query_embedder()
    floor = scan_ms(matrix) + median_ms(raw, QUERIES * 2)
    result: dict[str, Any] = {"floor_ms": round(floor, 2), "chunks": int(len(matrix)),
                              "sequence_ms": sequence_ms(matrix, QUERIES * 2)}
    for mode in modes:
        per_search: dict[str, list[float]] = defaultdict(list)
        for query in QUERIES * rounds:
            watch.spent.clear()
            started = time.perf_counter()
            reader.search(make_request(query, **MODES[mode]))
            total = (time.perf_counter() - started) * 1000
            spent = dict(watch.spent)
            picking = spent.pop("picking", 0.0)
            spent["moments"] = picking - spent.get("read", 0.0) - spent.get("snippets", 0.0)
            spent["answer"] = total - sum(spent.values())
            spent["total"] = total
            for stage, ms in spent.items():
                per_search[stage].append(ms)
        row = {stage: round(statistics.median(per_search.get(stage, [0.0])), 3)
               for stage in [*STAGES, "total"]}
        row["ratio"] = round(row["total"] / floor, 2)
        result[mode] = row
    return result


def built_home(size: int) -> Path:
    home = Path(tempfile.mkdtemp(prefix=f"plaud-profile-{size}-"))
    subprocess.run([sys.executable, str(REPO / "bench" / "scale.py"), "--step", "build",
                    "--home", str(home), "--sizes", str(size)], check=True,
                   stdout=subprocess.DEVNULL)
    return home


def print_table(result: dict[str, Any], modes: list[str]) -> None:
    print(f"{result['chunks']} chunks; floor (scan + raw embedding) {result['floor_ms']} ms, "
          f"the two in sequence {result['sequence_ms']} ms; median ms per search")
    print(f"{'stage':10s}" + "".join(f"{m:>10s}" for m in modes))
    for stage in [*STAGES, "total", "ratio"]:
        print(f"{stage:10s}" + "".join(f"{result[m][stage]:>10}" for m in modes))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    where = ap.add_mutually_exclusive_group(required=True)
    where.add_argument("--home", type=Path, help="an index built before")
    where.add_argument("--size", type=int, help="build one of this many chunks first")
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--rounds", type=int, default=5, help="times each query runs")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    modes = args.modes.split(",")
    home = args.home or built_home(args.size)
    try:
        result = profile(home, modes, args.rounds)
    finally:
        if args.home is None:
            shutil.rmtree(home)
    if args.json:
        print(json.dumps(result))
    else:
        print_table(result, modes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
