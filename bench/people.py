#!/usr/bin/env python3
"""Questions about people and meetings named by their title, on a corpus in the
shared/eval format (issue 51).

    python bench/people.py --corpus ../shared/eval/dev/files.jsonl \
                           --queries ../shared/eval/dev/queries.jsonl [--home DIR] [--json]

Two measurements, both through the same search a tool call makes (hybrid, limit 10):

- **Person questions with the speaker filter.** Every query "What/Why/How did <speaker> …"
  whose named speaker is a speaker of a relevant recording is asked twice: with
  ``speaker=<that speaker>`` (as an assistant asks it) and without. For each moment
  returned with the filter, the share of its quoted words that are that speaker's own
  (a quote's turns are split on " / " and told apart by their "Name: " labels; the first
  turn is the moment's speaker), and whether it opens on someone else. Moment Hit@5 with
  and without the filter on the same questions.
- **Meetings named by their title.** For every recording of a series with at least two
  meetings in the corpus, the query "<series code> <title>" (``ES2012 project kick-off``
  for "Remote control design team ES2012: project kick-off (ES2012a)";
  ``Bro004 Robust speech recognition group meeting`` for an ICSI meeting) and the whole
  title: is that recording ranked first?

``--home`` keeps the index and reuses it on the next run (the same index serves an A/B
through ``bench/ab.py``: these are query-time figures).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
from collections import Counter, defaultdict
from dataclasses import asdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from old_layout import Reader, alias_moved_modules, make_embedder  # noqa: E402
from retrieval import moment_correct  # noqa: E402

alias_moved_modules()
from plaud_index.config import build_config  # noqa: E402
from plaud_index.plaud import PlaudSource  # noqa: E402
from plaud_index.plaud.mock import MockClient  # noqa: E402
from plaud_index.search.rank import make_request  # noqa: E402
from plaud_index.sync.indexer import Indexer  # noqa: E402

_ASKED = re.compile(r"^(?:what|why|how) did (?:the )?(?P<rest>.+)$", re.IGNORECASE)
_WORD = re.compile(r"\w+")


def person_questions(queries: list[dict[str, Any]],
                     speakers: dict[str, set[str]]) -> list[tuple[dict[str, Any], str]]:
    """(query, speaker) for each question that asks what a speaker of a relevant
    recording did, the speaker's name right after "did (the)"."""
    out = []
    for q in queries:
        match = _ASKED.match(q["query"].strip())
        if not match:
            continue
        rest = match.group("rest").casefold()
        names = set().union(*(speakers.get(f, set()) for f in q["relevant_files"]))
        named = [n for n in names if rest.startswith(n.casefold() + " ")]
        if named:
            out.append((q, max(named, key=len)))
    return out


def turns(moment: dict[str, Any], labels: set[str]) -> list[tuple[str, int]]:
    """(speaker, words) for each turn of a moment's quote."""
    out = []
    for i, part in enumerate(moment["snippet"].split(" / ")):
        who = moment["speaker"] if i == 0 else ""
        for label in labels:
            if part.startswith(f"{label}: "):
                who, part = label, part[len(label) + 2:]
                break
        if not who and out:  # a turn without a label continues the one before it
            who = out[-1][0]
        out.append((who, len(_WORD.findall(part))))
    return out


def own_share(moment: dict[str, Any], speaker: str, labels: set[str]) -> tuple[float, bool]:
    """The share of a moment's quoted words that are ``speaker``'s, and whether the quote
    opens on someone else."""
    parts = turns(moment, labels)
    total = sum(words for _, words in parts)
    own = sum(words for who, words in parts if who == speaker)
    opens_elsewhere = bool(parts) and parts[0][0] != speaker
    return (own / total if total else 1.0), opens_elsewhere


def title_queries(files: list[dict[str, Any]]) -> list[tuple[str, str, str, str]]:
    """(file id, domain, code + title query, whole title) for every meeting of a series
    with two or more meetings here."""
    series = Counter(f["meta"].get("series") for f in files)
    out = []
    for f in files:
        meta = f["meta"]
        if series[meta.get("series")] < 2:
            continue
        title = re.sub(r"\s*\([^()]*\)$", "", f["name"]).strip()  # the "(ES2012a)" tail
        if ": " in title:  # "Remote control design team ES2012: project kick-off"
            code, core = meta["series"], title.split(": ", 1)[1]
        else:  # "ICSI Robust speech recognition group meeting": the meeting's own code
            code, core = meta["meeting_id"], title
        out.append((f["id"], meta.get("domain", "all"), f"{code} {core}", f["name"]))
    return out


def share_summary(shares: list[float], opened: int, moments: int) -> dict[str, Any]:
    return {"moments": moments,
            "median_own_share": round(statistics.median(shares), 3) if shares else None,
            "moments_under_0.8": sum(s < 0.8 for s in shares),
            "opening_on_another": opened}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, required=True)
    ap.add_argument("--queries", type=Path, required=True)
    ap.add_argument("--home", type=Path, help="keep the index here and reuse it")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    home = args.home or Path(tempfile.mkdtemp(prefix="plaud-bench-"))
    config = build_config({"PLAUD_INDEX_HOME": str(home), "PLAUD_CLIENT": "mock",
                           "PLAUD_MOCK_CORPUS": str(args.corpus)}, None)
    reader = Reader(config, make_embedder(config))
    Indexer(PlaudSource(MockClient(args.corpus)), reader.embedder, home).run_cycle()
    files = [json.loads(line) for line in args.corpus.open() if line.strip()]
    speakers = {f["id"]: {t["speaker"] for t in f["transcript"]} for f in files}
    queries = [json.loads(line) for line in args.queries.open() if line.strip()]

    def search(query: str, **filters: Any) -> list[dict[str, Any]]:
        result = reader.search(make_request(query, limit=10, **filters))
        return [asdict(h) for h in result.results]

    asked = person_questions(queries, speakers)
    shares: list[float] = []
    opened = moments = 0
    hits = {"filtered": 0, "unfiltered": 0}
    worst: list[tuple[float, str, str]] = []
    for q, who in asked:
        filtered = search(q["query"], speaker=who)
        for result in filtered:
            labels = speakers.get(result["file_id"], set())
            for moment in result["moments"]:
                share, elsewhere = own_share(moment, who, labels)
                shares.append(share)
                opened += elsewhere
                moments += 1
                worst.append((share, who, moment["snippet"][:160]))
        for name, results in (("filtered", filtered), ("unfiltered", search(q["query"]))):
            hits[name] += any(moment_correct(r, q.get("relevant", [])) for r in results[:5])
    by_domain: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for file_id, domain, query, whole in title_queries(files):
        for i, text in enumerate((query, whole)):
            first = search(text)
            by_domain[domain][i] += bool(first) and first[0]["file_id"] == file_id
        by_domain[domain][2] += 1
    total = [sum(v[i] for v in by_domain.values()) for i in range(3)]
    out = {
        "person_questions": len(asked),
        "with_filter": share_summary(shares, opened, moments),
        "moment_hit@5": {k: round(v / len(asked), 3) if asked else None
                         for k, v in hits.items()},
        "title_first": {
            "meetings": total[2],
            "code_and_title": round(total[0] / total[2], 3) if total[2] else None,
            "whole_title": round(total[1] / total[2], 3) if total[2] else None,
            "by_domain": {d: {"meetings": v[2], "code_and_title": v[0], "whole_title": v[1]}
                          for d, v in sorted(by_domain.items())}},
    }
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    w = out["with_filter"]
    print(f"{out['person_questions']} person questions with the speaker filter: "
          f"{w['moments']} moments, median own share {w['median_own_share']}, "
          f"{w['moments_under_0.8']} under 0.8, {w['opening_on_another']} opening on another")
    print(f"moment Hit@5 with the filter {out['moment_hit@5']['filtered']}, "
          f"without {out['moment_hit@5']['unfiltered']}")
    t = out["title_first"]
    print(f"title queries: {t['meetings']} series meetings; first for code + title "
          f"{t['code_and_title']}, for the whole title {t['whole_title']}")
    for domain, v in t["by_domain"].items():
        print(f"  {domain:10s} {v['code_and_title']:3d} / {v['meetings']:3d} code + title, "
              f"{v['whole_title']:3d} whole title")
    for share, who, snippet in sorted(worst)[:5]:
        print(f"  lowest own share {share:.2f} ({who}): {snippet}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
