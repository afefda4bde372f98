"""Private and contained: our processes in a fresh HOME write nothing outside the product's
home, connect nowhere but Plaud (the fake, on loopback), and keep every file 0600.

Every Python process of the run (the CLI, the indexer, the stdio server, anything they
start) loads a ``sitecustomize`` that records each ``socket.connect`` and name look-up
through an audit hook (PEP 578): what a process does, not what a test fakes."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from fake_plaud import FakePlaud
from helpers import mcp_session, tool_result

REPO = Path(__file__).resolve().parent.parent
LOOPBACK = {"127.0.0.1", "::1", "localhost"}
AUDIT = textwrap.dedent("""
    import os, sys
    _log = os.environ.get("PLAUD_TEST_AUDIT_LOG")
    def _hook(event, args):
        if event in ("socket.connect", "socket.getaddrinfo"):
            where = args[1] if event == "socket.connect" else args[0]
            with open(_log, "a") as fh:
                fh.write(f"{os.getpid()} {event} {where!r}\\n")
    if _log:
        sys.addaudithook(_hook)
""")


@pytest.fixture
def user(tmp_path: Path) -> Path:
    return tmp_path / "user"


@pytest.fixture
def index_home(user: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The product's default home inside a fresh HOME (overrides conftest's own place)."""
    from plaud_index.config import ENV_VARS

    for var in ENV_VARS:
        monkeypatch.delenv(var, raising=False)
    home = user / ".plaud-index-mcp"
    monkeypatch.setenv("PLAUD_INDEX_HOME", str(home))  # the sign-in below writes here
    return home


def fresh_env(tmp_path: Path, user: Path, plaud_env: dict[str, str]) -> dict[str, str]:
    audit = tmp_path / "audit"
    audit.mkdir()
    (audit / "sitecustomize.py").write_text(AUDIT)
    (tmp_path / "tmp").mkdir()
    keep = {k: v for k, v in os.environ.items()
            if not k.startswith(("PLAUD", "HF_", "XDG_", "ORT_")) and k not in ("HOME", "TMPDIR")}
    plaud = {k: v for k, v in plaud_env.items() if k != "PLAUD_INDEX_HOME"}
    return {**keep, **plaud, "HOME": str(user), "TMPDIR": str(tmp_path / "tmp"),
            "PYTHONPATH": str(audit), "PLAUD_TEST_AUDIT_LOG": str(tmp_path / "connects.log"),
            "PLAUD_INDEX_FOLDERS": str(tmp_path / "meetings")}


def files_under(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if not p.is_dir()) if root.exists() else []


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_a_sync_a_server_session_and_cli_searches_stay_in_their_place(
        fake: FakePlaud, plaud_env: dict[str, str], user: Path, index_home: Path,
        tmp_path: Path) -> None:
    fake.seed(4)
    meetings = tmp_path / "meetings"
    meetings.mkdir()
    (meetings / "vendor call.txt").write_text("Ann: the storage vendor raised prices.\n"
                                              "Bo: then we renegotiate in March.\n")
    before = set(files_under(user))  # the sign-in's token file and account, in the home
    env = fresh_env(tmp_path, user, plaud_env)

    def cli(*args: str) -> str:
        done = subprocess.run([sys.executable, "-m", "plaud_index", *args], env=env, cwd=REPO,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        return done.stdout

    cli("indexer", "--once")  # the real model, from the package: no hub
    assert "renegotiate" in cli("search", "storage vendor prices")
    cli("status")
    cli("doctor")
    async with mcp_session(env) as session:
        found = await tool_result(session, "plaud_search", query="milestone review")
        await tool_result(session, "plaud_list")
        await tool_result(session, "plaud_get", file_id=found["results"][0]["file_id"])

    outside = [p for p in files_under(user) if not p.is_relative_to(index_home)]
    assert outside == [], outside  # no ~/.cache/Microsoft, no ~/.cache/huggingface, nothing
    assert files_under(tmp_path / "tmp") == []
    assert [p.name for p in files_under(meetings)] == ["vendor call.txt"]
    loose = [(p, oct(p.stat().st_mode & 0o777)) for p in files_under(index_home)
             if stat.S_IMODE(p.stat().st_mode) & 0o077]
    assert loose == [], loose
    assert stat.S_IMODE(index_home.stat().st_mode) == 0o700
    assert set(files_under(user)) > before
    log = (tmp_path / "connects.log").read_text().splitlines()
    connects = [line for line in log if " socket.connect " in line]
    assert connects, "the audit hook saw no connection at all: it is not installed"
    for line in log:
        where = line.split(" ", 2)[2]
        assert any(host in where for host in LOOPBACK) or where.startswith(("'/", "None")), \
            line
