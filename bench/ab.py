#!/usr/bin/env python3
"""Run a bench script against another commit and this tree in the same run, alternating.

    python bench/ab.py BASE [--runs 3] [--base-script] -- bench/scale.py --sizes 100000 --json

BASE (any commit-ish) is checked out as a git worktree under ``~/.cache/plaud-index-bench/``
with its own venv (``pip install -e '.[test]'``, made once and reused). Then the script runs
base, head, base, head, ... ``--runs`` times each, every run a fresh process in its own tree
with its own interpreter. By default both sides run *this tree's* ``bench/`` (the
measurement stays the same, only the code under test differs); ``--base-script`` runs the
base's own copy instead (for a script whose imports the base does not have). The scripts
import today's module names; against a commit from before the house moves (issue 30)
``bench/old_layout.py`` registers the base's old modules under them.

A script that prints JSON (``--json``) gets a table: every numeric figure, the medians of
base and head and the median of the per-pair ratios head/base (a pair ran back to back, so a
ratio holds while the machine's speed drifts). Other output is printed as it came.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
CACHE = Path(os.environ.get("PLAUD_BENCH_CACHE", Path.home() / ".cache" / "plaud-index-bench"))


def git(*args: str, cwd: Path = REPO) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout.strip()


def interpreter(tree: Path) -> Path:
    venv = tree / ".venv" / "bin" / "python"
    return venv if venv.exists() else Path(sys.executable)


def base_tree(commit: str) -> Path:
    """The base commit's worktree and venv, made on first use (a minute or two: pip's cache
    serves the wheels)."""
    sha = git("rev-parse", "--verify", commit + "^{commit}")
    tree = CACHE / sha[:12]
    ready = tree / ".venv" / ".plaud-bench-ready"
    if ready.exists():
        return tree
    if tree.exists():
        subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=REPO,
                       capture_output=True)
        shutil.rmtree(tree, ignore_errors=True)
    CACHE.mkdir(parents=True, exist_ok=True)
    git("worktree", "add", "--detach", str(tree), sha)
    print(f"base {sha[:12]}: making its venv in {tree}/.venv", file=sys.stderr)
    subprocess.run([sys.executable, "-m", "venv", str(tree / ".venv")], check=True)
    subprocess.run([str(tree / ".venv/bin/python"), "-m", "pip", "install", "-q", "-e",
                    ".[test]"], cwd=tree, check=True, stdout=subprocess.DEVNULL)
    ready.write_text(sha + "\n")
    return tree


def prepare_script(tree: Path, script: str, own: bool) -> Path:
    """The script as the base runs it: this tree's bench/ copied over the base's (a script
    and the helpers it imports, such as floors.py), unless --base-script restores the
    base's own. The worktree is a cache, so overwriting its bench/ is fine."""
    git("checkout", "--", "bench", cwd=tree)
    git("clean", "-fdq", "bench", cwd=tree)
    if not own:
        for path in (REPO / "bench").glob("*.py"):
            shutil.copyfile(path, tree / "bench" / path.name)
    return tree / script


def run(tree: Path, script: Path, args: list[str]) -> str:
    proc = subprocess.run([str(interpreter(tree)), str(script), *args], cwd=tree,
                          capture_output=True, text=True)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr[-4000:])
        raise SystemExit(f"{script} failed in {tree} (exit {proc.returncode})")
    return proc.stdout


def figures(output: str) -> dict[str, float] | None:
    """Every numeric leaf of the JSON object the script printed, by dotted path."""
    start = output.find("{")
    try:
        data = json.loads(output[start:]) if start >= 0 else None
    except json.JSONDecodeError:
        return None
    if not isinstance(data, dict):
        return None
    flat: dict[str, float] = {}

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, dict):
            for key, inner in value.items():
                walk(f"{prefix}.{key}" if prefix else str(key), inner)
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            flat[prefix] = float(value)
    walk("", data)
    return flat


def table(base: list[dict[str, float]], head: list[dict[str, float]]) -> list[str]:
    keys = [k for k in base[0] if all(k in run_ for run_ in base + head)]
    width = max(len(k) for k in keys) if keys else 10
    lines = [f"{'figure':{width}s}  {'base':>10s}  {'head':>10s}  {'head/base':>9s}"]
    for key in keys:
        b = statistics.median(r[key] for r in base)
        h = statistics.median(r[key] for r in head)
        ratios = [hr[key] / br[key] for br, hr in zip(base, head, strict=True) if br[key]]
        ratio = f"{statistics.median(ratios):9.2f}" if ratios else f"{'-':>9s}"
        lines.append(f"{key:{width}s}  {b:10.4g}  {h:10.4g}  {ratio}")
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("base", help="the commit to compare against (e.g. origin/main, 69e9cfb)")
    ap.add_argument("--runs", type=int, default=3, help="runs of each side (default 3)")
    ap.add_argument("--base-script", action="store_true",
                    help="run the base's own copy of the script, not this tree's")
    argv = sys.argv[1:]
    split = argv.index("--") if "--" in argv else len(argv)
    # what follows -- is the script's own, options included
    args, command = ap.parse_args(argv[:split]), argv[split + 1:]
    if not command:
        ap.error("give the script to run after --: -- bench/scale.py --json")
    script, script_args = command[0], command[1:]
    tree = base_tree(args.base)
    sides = {"base": (tree, prepare_script(tree, script, args.base_script)),
             "head": (REPO, REPO / script)}
    outputs: dict[str, list[str]] = {"base": [], "head": []}
    head_sha = git("rev-parse", "--short", "HEAD")
    dirty = " (+ uncommitted changes)" if git("status", "--porcelain", "--untracked-files=no") \
        else ""
    print(f"A/B {script} {' '.join(script_args)}: base {git('rev-parse', '--short', args.base)}"
          f", head {head_sha}{dirty}, {args.runs} runs each, alternating, load "
          f"{os.getloadavg()[0]:.2f}")
    for i in range(args.runs):
        for side, (where, path) in sides.items():
            print(f"  run {i + 1}/{args.runs} {side}", file=sys.stderr, flush=True)
            outputs[side].append(run(where, path, script_args))
    parsed = {side: [figures(o) for o in outs] for side, outs in outputs.items()}
    if all(p is not None for p in parsed["base"] + parsed["head"]):
        print("\n".join(table(parsed["base"], parsed["head"])))  # type: ignore[arg-type]
    else:
        for side, outs in outputs.items():
            for i, out in enumerate(outs):
                print(f"--- {side} run {i + 1}\n{out.rstrip()}")
    print(f"load at the end {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
