#!/usr/bin/env python3
"""What the assistant receives: the size and quality of plaud_search answers on real meetings.

    python bench/answer_size.py [--meetings 20] [--queries 40] [--home DIR] [--json] [--dev DIR]

Indexes the first ``--meetings`` real-length dev meetings (shared/eval/dev) through the mock
Plaud source and the real model, then asks the first ``--queries`` dev queries whose
relevant recordings are among them, at the default limit, and measures the text the MCP
server sends (``render_search`` of the result, exactly the tool's text content):
- its characters: median, p90, max, and about how many tokens (characters / 4);
- moments that repeat or overlap another moment of the same recording;
- quotes that open with another speaker's label than the moment's speaker (``@00:03:27
  Ann: "Bo: …"``), or inside a label (``"…Manager: so"``);
- moments whose quote is filler only ("Yeah. / Yeah. / So.");
- quotes that open with a filler-only utterance and go on in another speaker's words
  (``@00:10:47 Bo: "Mm-hmm. / Ann: we decided …"``): the moment names the wrong person;
- quotes that open inside a sentence without saying so ("…"): a lower-case first word;
- notes moments of one recording quoting the same note line twice;
- queries with a correct moment (a moment of a relevant recording overlapping a labelled
  span, as ``bench/retrieval.py`` scores it).
Run it against another commit with ``bench/ab.py BASE -- bench/answer_size.py --json``.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from old_layout import Reader, alias_moved_modules, make_embedder  # noqa: E402

alias_moved_modules()
from plaud_index.config import build_config  # noqa: E402
from plaud_index.plaud import PlaudSource  # noqa: E402
from plaud_index.plaud.mock import MockClient  # noqa: E402
from plaud_index.render.answers import render_search  # noqa: E402
from plaud_index.search.rank import make_request  # noqa: E402
from plaud_index.sync.indexer import Indexer  # noqa: E402

DEV = Path(__file__).resolve().parent.parent.parent / "shared" / "eval" / "dev"
FILLER = {"yeah", "yes", "yep", "no", "so", "okay", "ok", "um", "uh", "mm", "hmm", "mm-hmm",
          "uh-huh", "right", "well", "oh", "ah", "alright", "sure", "and", "but", "the", "a",
          "i", "mean", "like", "you", "know", "huh", "mmm", "hm", "erm", "er"}
LABEL = re.compile(r"^…?([^:/…]{1,60}?): ")  # a speaker's label at the quote's start


def corpus(meetings: int, queries: int, folder: Path, dev: Path = DEV
           ) -> tuple[Path, list[dict[str, Any]]]:
    with (dev / "files.jsonl").open() as fh:
        records = [json.loads(line) for line, _ in zip(fh, range(meetings), strict=False)]
    ids = {r["id"] for r in records}
    path = folder / "corpus.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    with (dev / "queries.jsonl").open() as fh:
        asked = [q for q in map(json.loads, fh) if set(q["relevant_files"]) <= ids]
    return path, asked[:queries]


def overlapping(moments: list[dict[str, Any]]) -> int:
    """Moments of one recording that repeat or overlap an earlier one of it."""
    spans: list[tuple[int, int]] = []
    bad = 0
    for m in moments:
        if m["start_ms"] is None:
            continue
        span = (m["start_ms"], m["end_ms"] if m["end_ms"] is not None else m["start_ms"])
        if any(span[0] <= e and s <= span[1] for s, e in spans):
            bad += 1
        spans.append(span)
    return bad


def wrong_label(moment: dict[str, Any], speakers: set[str]) -> bool:
    """The quote opens with a label that is not the moment's speaker's: another speaker's,
    or a label cut in two ("…Manager: so" for "Project Manager")."""
    label = LABEL.match(moment["snippet"])
    if label is None:
        return False
    name = label.group(1).strip()
    is_label = name in speakers or any(s.endswith(name) for s in speakers)
    return is_label and name != moment["speaker"]


def filler_only(moment: dict[str, Any]) -> bool:
    words = re.findall(r"[\w'-]+", re.sub(r"\b[A-Z][\w .'-]{0,40}?: ", " ", moment["snippet"]))
    return bool(words) and all(w.casefold() in FILLER for w in words)


def filler_opening(moment: dict[str, Any], speakers: set[str]) -> bool:
    """The quote's first turn is filler only and a later turn is another speaker's."""
    turns = moment["snippet"].split(" / ")
    if len(turns) < 2 or not filler_only({"snippet": turns[0]}):
        return False
    return any((label := LABEL.match(t)) is not None and label.group(1) in speakers
               and label.group(1) != moment["speaker"] for t in turns[1:])


def mid_sentence(moment: dict[str, Any]) -> bool:
    """The quote opens inside a sentence (a lower-case word) and does not say so."""
    text = moment["snippet"]
    body = text.split(" / ", 1)[-1] if moment["source"] == "notes" else text
    first = re.match(r"[^\w…]*(\w)", body)
    return not body.startswith("…") and first is not None and first.group(1).islower()


def notes_repeating(moments: list[dict[str, Any]]) -> int:
    """Notes moments whose quoted line an earlier notes moment of the recording quoted."""
    seen: set[str] = set()
    bad = 0
    for m in moments:
        if m["source"] != "notes":
            continue
        line = m["snippet"].split(" / ")[-1].strip("… ")[:80]
        bad += any(line in s or s in line for s in seen)
        seen.add(line)
    return bad


def correct(hit: dict[str, Any], spans: list[dict[str, Any]]) -> bool:
    for m in hit["moments"]:
        if m["start_ms"] is None:
            continue
        start, end = m["start_ms"] / 1000, (m["end_ms"] or m["start_ms"]) / 1000
        if any(s["file_id"] == hit["file_id"] and start <= s["end"] and end >= s["start"]
               for s in spans):
            return True
    return False


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--meetings", type=int, default=20)
    ap.add_argument("--queries", type=int, default=40)
    ap.add_argument("--home", type=Path, help="keep the index here and reuse it")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--dev", type=Path, default=DEV,
                    help="the dev set's folder (default: shared/eval/dev beside the repo)")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="plaud-answers-"))
    path, queries = corpus(args.meetings, args.queries, work, args.dev.resolve())
    names = {s["speaker"] for line in path.open() for s in json.loads(line)["transcript"]}
    home = args.home or work / "home"
    config = build_config({"PLAUD_INDEX_HOME": str(home), "PLAUD_CLIENT": "mock",
                           "PLAUD_MOCK_CORPUS": str(path)}, None)
    service = Reader(config, make_embedder(config))
    Indexer(PlaudSource(MockClient(path)), service.embedder, home).run_cycle()
    sizes, repeats, labels, fillers, moments, right = [], 0, 0, 0, 0, 0
    openings = mids = note_repeats = 0
    for q in queries:
        result = service.search(make_request(q["query"]))
        sizes.append(len(render_search(result)))
        hits = [asdict(h) for h in result.results]
        right += any(correct(h, q["relevant"]) for h in hits)
        for hit in hits:
            repeats += overlapping(hit["moments"])
            labels += sum(wrong_label(m, names) for m in hit["moments"])
            fillers += sum(filler_only(m) for m in hit["moments"])
            openings += sum(filler_opening(m, names) for m in hit["moments"])
            mids += sum(mid_sentence(m) for m in hit["moments"])
            note_repeats += notes_repeating(hit["moments"])
            moments += len(hit["moments"])
    ordered = sorted(sizes)
    out = {"queries": len(queries), "meetings": args.meetings,
           "chars_median": statistics.median(sizes),
           "chars_p90": ordered[int(len(ordered) * 0.9)], "chars_max": ordered[-1],
           "tokens_median_approx": round(statistics.median(sizes) / 4),
           "moments": moments, "moments_repeating": repeats,
           "quotes_with_another_label": labels, "filler_only_moments": fillers,
           "filler_openings_then_another_speaker": openings,
           "mid_sentence_without_ellipsis": mids, "notes_lines_repeating": note_repeats,
           "queries_with_a_correct_moment": right}
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        for key, value in out.items():
            print(f"{key:30s} {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
