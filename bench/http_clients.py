#!/usr/bin/env python3
"""What N clients cost: one ``serve --http`` for all of them, N stdio servers (one per
client, as today), and N stdio entries that forward to the shared server.

    python bench/http_clients.py [--clients 1,5,20] [--queries 20] [--json]

The bundled sample is indexed once with the real model. For each N, N MCP sessions run at
the same time, each asking ``--queries`` searches one after another (each session warmed
up by one search first); every search is timed from the client, and searches per second
are all of them over the time from the first start to the last answer. Memory is each
server process's peak RSS (VmHWM), summed over the processes that serve the N clients:
the one HTTP server, the N stdio servers, or the shared server plus the N forwarders.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio

REPO = Path(__file__).resolve().parent.parent
QUERIES = ("what did we decide about the Q3 budget?", "database outage root cause",
           "who is responsible for the launch checklist", "kitchen renovation quote",
           "hiring plan for the data team", "Lagerkosten für die Kartons")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def peak_kb(pid: int) -> int:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    return int(status.split("VmHWM:")[1].split()[0])


def children(name: bytes) -> list[int]:
    """This process's children whose command line holds ``name`` (the shared HTTP server
    aside: it is counted on its own)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "status").read_text().split("PPid:")[1].split()[0])
            cmdline = (entry / "cmdline").read_bytes()
        except (OSError, IndexError, ValueError):
            continue
        if ppid == os.getpid() and name in cmdline and b"--http" not in cmdline:
            found.append(int(entry.name))
    return found


async def one_client(session: Any, queries: int, times: list[float]) -> None:
    for k in range(queries):
        started = time.perf_counter()
        result = await session.call_tool("plaud_search", {"query": QUERIES[k % len(QUERIES)]})
        times.append((time.perf_counter() - started) * 1000)
        assert not result.is_error, result.content


async def run_clients(n: int, queries: int, connect: Any) -> list[float]:
    from mcp import ClientSession

    times: list[float] = []
    async with AsyncExitStack() as stack:
        sessions = []
        for _ in range(n):
            read, write = await stack.enter_async_context(connect())
            session = await stack.enter_async_context(ClientSession(read, write))
            await session.initialize()
            await session.call_tool("plaud_search", {"query": "warm-up"})
            sessions.append(session)
        started = time.perf_counter()
        async with anyio.create_task_group() as tasks:
            for session in sessions:
                tasks.start_soon(one_client, session, queries, times)
        run_clients.wall_s = time.perf_counter() - started  # type: ignore[attr-defined]
        # while the sessions are open: the processes that serve them (not the shared one)
        run_clients.memory_kb = sum(peak_kb(pid) for pid in children(b"plaud_index"))  # type: ignore[attr-defined]
    return times


def stdio_connect(env: dict[str, str]) -> Any:
    from mcp import StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=sys.executable, args=["-m", "plaud_index"],
                                   env=env, cwd=str(REPO))
    return lambda: stdio_client(params, errlog=open(os.devnull, "w"))  # noqa: SIM115


def http_connect(url: str, token: str) -> Any:
    from contextlib import asynccontextmanager

    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    @asynccontextmanager
    async def connect() -> Any:
        async with create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) \
                as http, streamable_http_client(url, http_client=http) as streams:
            yield streams[0], streams[1]

    return connect


def wait_for_server(record: Path, server: subprocess.Popen[bytes]) -> None:
    """Until ``server`` itself says it listens (a record of the one before may linger)."""
    while True:
        assert server.poll() is None, "serve --http exited"
        try:
            if json.loads(record.read_text()).get("pid") == server.pid:
                return
        except (OSError, ValueError):
            pass
        time.sleep(0.1)


def summary(times: list[float], memory_kb: int) -> dict[str, float]:
    """The searches' p50 and p95 (each timed from its client), searches per second over
    the time all the clients searched together (warm-ups aside), and the peak memory."""
    ordered = sorted(times)
    wall = run_clients.wall_s  # type: ignore[attr-defined]
    assert wall > 0
    return {"p50_ms": round(statistics.median(ordered), 2),
            "p95_ms": round(ordered[int(len(ordered) * 0.95) - 1], 2),
            "per_s": round(len(times) / wall, 1),
            "memory_mb": round(memory_kb / 1024, 1), "searches": len(times)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clients", default="1,5,20")
    ap.add_argument("--queries", type=int, default=20)
    ap.add_argument("--setups", default="stdio,http,forwarded",
                    help="which of stdio, http, forwarded to run")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    setups = set(args.setups.split(","))
    home = Path(tempfile.mkdtemp(prefix="plaud-http-bench-")) / "home"
    env = {**os.environ, "PLAUD_INDEX_HOME": str(home), "PLAUD_CLIENT": "mock"}
    env.pop("PLAUD_EMBEDDER", None)
    subprocess.run([sys.executable, "-m", "plaud_index", "indexer", "--once"], check=True,
                   capture_output=True, cwd=REPO, env=env, timeout=600)
    out: dict[str, Any] = {"machine": {"cores": os.cpu_count(),
                                       "load_before": round(os.getloadavg()[0], 2)}}
    for n in (int(x) for x in args.clients.split(",")):
        if "stdio" in setups:
            times = anyio.run(run_clients, n, args.queries,
                              stdio_connect({**env, "PLAUD_INDEX_NO_FORWARD": "1"}))
            out[f"stdio_{n}"] = summary(times, run_clients.memory_kb)  # type: ignore[attr-defined]
        if not setups & {"http", "forwarded"}:
            continue
        port = free_port()
        server = subprocess.Popen([sys.executable, "-m", "plaud_index", "serve", "--http",
                                   "--port", str(port)], cwd=REPO, env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:  # a failure must not leave the server running
            wait_for_server(home / "http-server.json", server)
            token = (home / "http-token").read_text().strip()
            if "http" in setups:
                times = anyio.run(run_clients, n, args.queries,
                                  http_connect(f"http://127.0.0.1:{port}/mcp", token))
                out[f"http_{n}"] = summary(times, peak_kb(server.pid))
            if "forwarded" in setups:
                times = anyio.run(run_clients, n, args.queries, stdio_connect(env))
                forwarders = run_clients.memory_kb  # type: ignore[attr-defined]
                out[f"forwarded_{n}"] = summary(times, forwarders + peak_kb(server.pid))
        finally:
            server.terminate()
            server.wait(30)
    out["machine"]["load_after"] = round(os.getloadavg()[0], 2)
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        machine = out.pop("machine")
        print(f"{machine['cores']} cores, load {machine['load_before']} before, "
              f"{machine['load_after']} after")
        print(f"{'setup':14s} {'p50 ms':>8s} {'p95 ms':>8s} {'per s':>8s} {'memory MB':>10s}")
        for name, row in out.items():
            print(f"{name:14s} {row['p50_ms']:8.2f} {row['p95_ms']:8.2f} {row['per_s']:8.1f} "
                  f"{row['memory_mb']:10.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
