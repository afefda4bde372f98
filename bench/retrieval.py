#!/usr/bin/env python3
"""Retrieval quality and speed on a corpus/queries pair in the shared/eval format.

    python bench/retrieval.py --corpus ../shared/eval/dev/files.jsonl \
                              --queries ../shared/eval/dev/queries.jsonl [--json]

Indexes the corpus through the mock Plaud source and the real embedding model
(resolved as in production: PLAUD_EMBED_MODEL_PATH, cache, packaged, hub),
then scores keyword, vector and hybrid side by side:
- recording level: NDCG@5, MRR@10, Recall@5 over the ranked distinct recordings (limit 10);
- moment level: a result is correct when it is a relevant recording and one of its
  moments' time range [start_ms, end_ms] overlaps a labelled span; Hit@5 and MRR@10.
Also prints index time, raw embedder throughput on the same chunks, and query latency.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import asdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from old_layout import Reader, alias_moved_modules, heard, make_embedder  # noqa: E402

alias_moved_modules()
from plaud_index.chunker import Chunker  # noqa: E402
from plaud_index.config import build_config  # noqa: E402
from plaud_index.plaud import PlaudSource  # noqa: E402
from plaud_index.plaud.mock import MockClient  # noqa: E402
from plaud_index.search.rank import MODES, make_request, rank  # noqa: E402
from plaud_index.sync.indexer import Indexer  # noqa: E402

METRICS = ("rec_ndcg@5", "rec_mrr@10", "rec_recall@5", "moment_hit@5", "moment_mrr@10")


def ndcg5(rels: list[int], n_rel: int) -> float:
    dcg = sum(r / math.log2(i + 2) for i, r in enumerate(rels[:5]))
    idcg = sum(1 / math.log2(i + 2) for i in range(min(n_rel, 5)))
    return dcg / idcg if idcg else 0.0


def mrr10(rels: list[int]) -> float:
    return next((1 / (i + 1) for i, r in enumerate(rels[:10]) if r), 0.0)


def moment_correct(result: dict[str, Any], spans: list[dict[str, Any]]) -> int:
    for moment in result["moments"]:
        if moment["start_ms"] is None:
            continue
        start, end = moment["start_ms"] / 1000, (moment["end_ms"] or moment["start_ms"]) / 1000
        for span in spans:
            if span["file_id"] == result["file_id"] and start <= span["end"] and \
                    end >= span["start"]:
                return 1
    return 0


def score_query(query: dict[str, Any], results: list[dict[str, Any]]) -> dict[str, float]:
    relevant = set(query["relevant_files"])
    rec = [1 if r["file_id"] in relevant else 0 for r in results]
    mom = [moment_correct(r, query.get("relevant", [])) for r in results]
    return {
        "rec_ndcg@5": ndcg5(rec, len(relevant)),
        "rec_mrr@10": mrr10(rec),
        "rec_recall@5": len(relevant & {r["file_id"] for r in results[:5]}) / len(relevant),
        "moment_hit@5": float(any(mom[:5])),
        "moment_mrr@10": mrr10(mom),
    }


def aggregate(rows: list[tuple[str, dict[str, float]]]) -> dict[str, dict[str, float]]:
    groups: dict[str, list[dict[str, float]]] = defaultdict(list)
    for domain, scores in rows:
        groups["all"].append(scores)
        groups[domain].append(scores)
    return {g: {**{m: round(statistics.fmean(s[m] for s in items), 4) for m in METRICS},
                "n": len(items)} for g, items in groups.items()}


def raw_embed_seconds(service: Reader, corpus: Path) -> tuple[int, float]:
    """Embed exactly the chunks the indexer made, with nothing else around it."""
    source = PlaudSource(MockClient(corpus))
    chunker = Chunker(service.embedder.count_tokens, max_tokens=service.embedder.max_tokens)
    texts = [c.embed_text for file_id in source.list_recordings()
             for c in chunker.chunk(source.get_recording(file_id))]
    started = time.perf_counter()
    service.embedder.embed(texts)
    return len(texts), time.perf_counter() - started


OFF_TOPIC = ("banana bread recipe with walnuts", "tesla stock price forecast",
             "how to train a puppy to sit", "volcano eruption in iceland",
             "best hiking trails in patagonia", "knitting a wool scarf pattern",
             "football world cup final score", "quantum chromodynamics lattice simulation")


def floor_report(service: Reader, queries: list[dict[str, Any]]) -> dict[str, Any]:
    """How the relevance floor and the weak-match threshold treat the labelled queries:
    for each candidate floor, how many queries would lose a relevant recording from their
    top 10, and how many results a limit of 25 keeps; and the best-passage similarity of
    the real queries beside that of questions the meetings never touch."""
    snap = service.ready_snapshot()
    rows = []
    for q in [*queries, *({"query": o, "relevant_files": []} for o in OFF_TOPIC)]:
        vector = service.embedder.embed_query(q["query"])
        ranking = rank(snap, make_request(q["query"], limit=25), vector, floor=0.0)
        hits = ranking.hits
        top = hits[0].score if hits else 1.0
        rel = set(q["relevant_files"])
        rows.append({"off": not rel, "similarity": ranking.best_similarity,
                     "coverage": ranking.term_coverage,
                     "ratios": [h.score / top for h in hits],
                     "relevant": [h.score / top for h in hits[:10] if h.file_id in rel]})
    real = [r for r in rows if not r["off"]]
    floors = {}
    for floor in (0.1, 0.2, 0.3, 0.4, 0.5):
        floors[str(floor)] = {
            "queries_losing_a_relevant_top10": sum(any(x < floor for x in r["relevant"])
                                                   for r in real),
            "mean_results_kept_of_25": round(statistics.fmean(
                sum(x >= floor for x in r["ratios"]) for r in real), 1)}
    sims = sorted(float(r["similarity"] or 0) for r in real)
    weak, unmatched = service.embedder.weak_similarity, service.embedder.unmatched_similarity

    def noted(r: dict[str, Any], cut: float | None) -> bool:  # the service's weak-match rule
        sim = float(r["similarity"] or 0)
        return (weak is not None and sim < weak) or (cut is not None and (
            r["coverage"] is not None and r["coverage"] < heard()) and sim < cut)

    notes = {str(cut): {"dev_queries_noted": sum(noted(r, cut) for r in real),
                        "off_topic_noted": sum(noted(r, cut) for r in rows if r["off"])}
             for cut in (None, 0.35, 0.40, 0.45, 0.50)}
    return {"floors": floors, "real_min_similarity": round(sims[0], 3),
            "weak_note": {"weak_similarity": weak, "unmatched_similarity": unmatched,
                          "dev_min_term_coverage": min(
                              (r["coverage"] for r in real if r["coverage"] is not None),
                              default=None),
                          "by_unmatched_cut": notes,
                          "with_the_shipped_rule": {
                              "dev_queries_noted": sum(noted(r, unmatched) for r in real),
                              "off_topic_noted": sum(noted(r, unmatched) for r in rows
                                                     if r["off"])}},
            "real_p5_similarity": round(sims[len(sims) // 20], 3),
            "off_topic_similarity": [round(float(r["similarity"] or 0), 3)
                                     for r in rows if r["off"]],
            "off_topic_term_coverage": [round(r["coverage"] or 0, 2) for r in rows if r["off"]]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, required=True)
    ap.add_argument("--queries", type=Path, required=True)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--home", type=Path, help="keep the index here and reuse it next run "
                    "(a no-change cycle) instead of a fresh temp dir")
    ap.add_argument("--no-raw", action="store_true", help="skip the raw embedder timing")
    ap.add_argument("--floor-report", action="store_true",
                    help="print how the relevance floor treats the relevant recordings")
    args = ap.parse_args()
    home = args.home or Path(tempfile.mkdtemp(prefix="plaud-bench-"))
    config = build_config({"PLAUD_INDEX_HOME": str(home), "PLAUD_CLIENT": "mock",
                           "PLAUD_MOCK_CORPUS": str(args.corpus)}, None)
    service = Reader(config, make_embedder(config))
    started = time.perf_counter()
    report = Indexer(PlaudSource(MockClient(args.corpus)), service.embedder, home).run_cycle()
    index_seconds = time.perf_counter() - started
    raw_chunks, raw_seconds = (1, float("nan")) if args.no_raw else \
        raw_embed_seconds(service, args.corpus)
    queries = [json.loads(line) for line in args.queries.open() if line.strip()]
    modes: dict[str, Any] = {}
    latencies: list[float] = []
    for mode in args.modes.split(","):
        rows = []
        for q in queries:
            t0 = time.perf_counter()
            result = service.search(make_request(q["query"], limit=10, mode=mode))
            if mode == "hybrid":
                latencies.append((time.perf_counter() - t0) * 1000)
            hits = [asdict(h) for h in result.results]
            rows.append((q.get("domain", "all"), score_query(q, hits)))
        modes[mode] = aggregate(rows)
    out = {
        "modes": modes,
        "index_seconds": round(index_seconds, 2),
        "chunks": report.chunks_embedded,
        "query_ms_p50": round(statistics.median(latencies), 2) if latencies else None,
        "query_ms_p95": round(sorted(latencies)[int(len(latencies) * 0.95)], 2)
        if latencies else None,
        "index_chunks_per_s": round(report.chunks_embedded / index_seconds, 1)
        if report.chunks_embedded else float("nan"),
        "raw_embed_chunks_per_s": round(raw_chunks / raw_seconds, 1),
        "model": service.embedder.model_id,
    }
    out["index_vs_raw"] = round(out["index_chunks_per_s"] / out["raw_embed_chunks_per_s"], 3)
    if args.floor_report:
        out["floor"] = floor_report(service, queries)
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    snap = service.ready_snapshot()
    print(f"corpus {args.corpus} ({len(snap.recordings)} recordings, {snap.live_chunks} "
          f"chunks{', index reused from --home' if not report.added else ''}), "
          f"queries {args.queries} ({len(queries)}), model {out['model']}")
    domains = sorted({g for m in modes.values() for g in m}, key=lambda g: (g != "all", g))
    print(f"{'mode':8s} {'group':10s} {'n':>4s} " + " ".join(f"{m:>13s}" for m in METRICS))
    for mode, groups in modes.items():
        for g in domains:
            s = groups[g]
            print(f"{mode:8s} {g:10s} {s['n']:4d} " + " ".join(f"{s[m]:13.3f}" for m in METRICS))
    print(f"index: {out['index_seconds']}s end to end = {out['index_chunks_per_s']} chunks/s; "
          f"raw embedder {out['raw_embed_chunks_per_s']} chunks/s; ratio {out['index_vs_raw']}")
    print(f"hybrid query latency in-process: p50 {out['query_ms_p50']} ms, "
          f"p95 {out['query_ms_p95']} ms")
    if args.floor_report:
        print(f"relevance floor (share of the best score): {json.dumps(out['floor']['floors'])}")
        print(f"best-passage similarity: dev queries min {out['floor']['real_min_similarity']}"
              f", 5th percentile {out['floor']['real_p5_similarity']}; off-topic questions "
              f"{out['floor']['off_topic_similarity']} (share of their words found: "
              f"{out['floor']['off_topic_term_coverage']})")
        print(f"weak-match note: {json.dumps(out['floor']['weak_note'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
