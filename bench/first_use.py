#!/usr/bin/env python3
"""A new user's first minutes, measured: the first-use timeline and memory (issue 20).

    python bench/first_use.py [--corpus ../shared/eval/dev/files.jsonl] [--json]
                              [--skip-server] [--skip-indexer]

1. **Server**: the real stdio server, started by the SDK's stdio client on an empty
   index over the corpus (``PLAUD_CLIENT=mock``: a fast source, every recording at once),
   is asked ``plaud_search`` every 2 s until its index is complete. Prints when each
   answer came, what it said (the "not available yet" text or the partial results and
   ``index.progress``), the first results, completion, the server's peak RSS (``VmHWM``)
   and that of the first sync's own process (the indexer lock's holder, which the server
   starts and which outlives it).
2. **Serving only**: a fresh server on the now complete index answers 20 searches; its
   peak RSS.
3. **indexer --once** in a fresh home on a terminal (a pty): commits (count, first,
   largest gap), how often the live line was redrawn (largest gap), peak RSS, bytes
   written by the process / final index size (write amplification), seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import pty
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
DEV = REPO.parent / "shared" / "eval" / "dev" / "files.jsonl"
QUERY = "what did they decide about the remote control buttons"


def children_of(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def peak_rss_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


async def server_timeline(env: dict[str, str], until_complete: bool,
                          searches: int) -> dict[str, Any]:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=sys.executable, args=["-m", "plaud_index"],
                                   env=env, cwd=REPO)
    from plaud_index.sync.lock import lock_holder

    lock = Path(env["PLAUD_INDEX_HOME"]) / "indexer.lock"
    events: list[dict[str, Any]] = []
    peak = sync_peak = 0.0
    started = time.monotonic()
    with open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), \
                ClientSession(read, write) as session:
            await session.initialize()
            initialized = time.monotonic() - started
            server = next(iter(children_of(os.getpid())), None)
            for _ in range(10_000 if until_complete else searches):
                asked = time.monotonic()
                result = await session.call_tool("plaud_search", {"query": QUERY})
                answered = time.monotonic()
                if server is not None:
                    peak = max(peak, peak_rss_mb(server) or 0.0)
                holder = lock_holder(lock)
                if holder and holder.get("pid"):
                    sync_peak = max(sync_peak, peak_rss_mb(int(str(holder["pid"]))) or 0.0)
                data = result.structured_content or {}
                index = data.get("index") or {}
                events.append({
                    "t": round(asked - started, 1), "answer_s": round(answered - asked, 3),
                    "error": result.content[0].text[:160] if result.is_error else None,  # type: ignore[union-attr]
                    "recordings": index.get("recordings"), "complete": index.get("complete"),
                    "progress": index.get("progress"), "results": len(data.get("results", ()))})
                if until_complete and index.get("complete"):
                    break
                if len(events) >= 10 and all(e["error"] for e in events[-10:]):
                    raise SystemExit(f"ten errors in a row, the last: {events[-1]['error']}")
                if until_complete:
                    await asyncio.sleep(max(0.0, 2.0 - (time.monotonic() - asked)))
    first = next((e for e in events if e["results"]), None)
    done = next((e for e in events if e["complete"]), None)
    return {"initialize_s": round(initialized, 2), "events": events,
            "first_results_s": first["t"] if first else None,
            "complete_s": done["t"] if done else None, "peak_rss_mb": round(peak),
            "sync_peak_rss_mb": round(sync_peak),
            "answer_s_max": max(e["answer_s"] for e in events),
            "answer_s_median": statistics.median(e["answer_s"] for e in events),
            "listing_after_listed": sum(1 for e in events[1:] if e["progress"] and
                                        "listing" in e["progress"] and e["recordings"])}


WRAPPER = """
import atexit, json, resource, runpy, sys
OUT = sys.argv[1]
def report():
    io = dict(line.split(": ") for line in open("/proc/self/io").read().splitlines())
    with open(OUT, "w") as fh:
        json.dump({"write_bytes": int(io["write_bytes"]),
                   "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}, fh)
atexit.register(report)
sys.argv = ["plaud_index", "indexer", "--once"]
runpy.run_module("plaud_index", run_name="__main__")
"""


def indexer_once(env: dict[str, str], home: Path) -> dict[str, Any]:
    """``indexer --once`` on a pty: when the live line was redrawn, when commits came."""
    out = home.parent / "indexer-once.json"
    main, child = pty.openpty()
    started = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-c", WRAPPER, str(out)], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=child, env=env, cwd=REPO)
    os.close(child)
    redraws: list[float] = []
    commits: list[float] = []
    text = b""
    while True:
        try:
            data = os.read(main, 65536)
        except OSError:
            break
        if not data:
            break
        now = time.monotonic() - started
        redraws += [now] * data.count(b"\r")
        text += data
        commits += [now] * len(re.findall(rb"committing", data))
    proc.wait()
    os.close(main)
    elapsed = time.monotonic() - started
    written = json.loads(out.read_text())
    size = sum(p.stat().st_size for p in (home / "vector-index").iterdir() if p.is_file())
    cycle = re.search(rb"Cycle done: (\{.*\})", text)
    report = json.loads(cycle.group(1)) if cycle else {}
    gaps = [b - a for a, b in zip(redraws, redraws[1:], strict=False)]
    commit_starts = [t for i, t in enumerate(commits) if not i or t - commits[i - 1] > 0.5]
    commit_gaps = [b - a for a, b in zip(commit_starts, commit_starts[1:], strict=False)]
    return {"seconds": round(elapsed, 1), "commits": report.get("commits"),
            "chunks": report.get("chunks_embedded"),
            "first_commit_s": round(commit_starts[0], 1) if commit_starts else None,
            "max_commit_gap_s": round(max(commit_gaps), 1) if commit_gaps else None,
            "redraws": len(redraws), "max_redraw_gap_s": round(max(gaps), 2) if gaps else None,
            "peak_rss_mb": round(written["peak_rss_mb"]),
            "write_amplification": round(written["write_bytes"] / size, 2) if size else None,
            "index_mb": round(size / 1e6, 1)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, default=DEV)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--skip-server", action="store_true")
    ap.add_argument("--skip-indexer", action="store_true")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="plaud-first-use-"))
    base = {**os.environ, "PLAUD_CLIENT": "mock", "PLAUD_MOCK_CORPUS": str(args.corpus)}
    base.pop("PLAUD_EMBEDDER", None)
    out: dict[str, Any] = {"corpus": str(args.corpus), "load": round(os.getloadavg()[0], 2)}
    if not args.skip_server:
        env = {**base, "PLAUD_INDEX_HOME": str(work / "server")}
        out["server"] = asyncio.run(server_timeline(env, until_complete=True, searches=0))
        out["serving"] = asyncio.run(server_timeline(env, until_complete=False, searches=20))
        print(json.dumps({"server": out["server"]}), file=sys.stderr)  # kept if a later step fails
    if not args.skip_indexer:
        home = work / "indexer"
        out["indexer_once"] = indexer_once({**base, "PLAUD_INDEX_HOME": str(home)}, home)
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    print(f"corpus {out['corpus']}, load average {out['load']}")
    if "server" in out:
        s, v = out["server"], out["serving"]
        print(f"server: initialize {s['initialize_s']} s; first results at t+"
              f"{s['first_results_s']} s; complete at t+{s['complete_s']} s; answers in "
              f"median {s['answer_s_median']:.3f} s, max {s['answer_s_max']:.3f} s; peak RSS "
              f"{s['peak_rss_mb']} MB (server), {s['sync_peak_rss_mb']} MB (the first sync's "
              "process) during the first sync; 'listing' after the listing: "
              f"{s['listing_after_listed']}")
        for e in s["events"][:12]:
            said = e["error"] or (f"{e['results']} results from {e['recordings']} "
                                  f"recordings; progress: {e['progress']}")
            print(f"  t+{e['t']:6.1f}s  {said}")
        print(f"serving only: peak RSS {v['peak_rss_mb']} MB over {len(v['events'])} searches")
    if "indexer_once" in out:
        i = out["indexer_once"]
        print(f"indexer --once: {i['seconds']} s, {i['chunks']} chunks, {i['commits']} commits "
              f"(first at {i['first_commit_s']} s, largest gap {i['max_commit_gap_s']} s); "
              f"live line redrawn {i['redraws']} times, largest gap {i['max_redraw_gap_s']} s; "
              f"peak RSS {i['peak_rss_mb']} MB; written {i['write_amplification']}x the "
              f"final index ({i['index_mb']} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
