"""How this installation was started, as a command a client can run, and proof it runs.

From an ephemeral ``uvx`` environment (one inside uv's cache, wherever that cache
is): ``uvx --from SPEC plaud-index-mcp``, where SPEC is what the installed
distribution records of where it came from (PEP 610 ``direct_url.json``: a local
wheel or folder, a VCS URL) with the extras that are installed (``[offline]``), or
the bare name from the package index; never a path inside uv's cache, which ``uv
cache clean`` deletes. From a virtual environment or a ``uv tool install``: the
absolute path of its console script. ``check_launch`` starts a command as a client
would and completes MCP ``initialize`` before anything is written.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import Distribution, PackageNotFoundError, distribution
from pathlib import Path

from .errors import ConfigError

SCRIPT = "plaud-index-mcp"


@dataclass(frozen=True)
class Launch:
    command: str
    args: tuple[str, ...] = ()


DIST = "plaud-index-mcp"
DEV_EXTRAS = {"test", "dev"}  # installed for working on this package, not for running it
# uv's cache keeps ephemeral environments in archive-v*/ (and builds-v*/) folders
_UV_CACHE_ENV = re.compile(r"[/\\](archive|builds)-v\d+[/\\]")


def this_launch(prefix: str | None = None, executable: str | None = None,
                dist: Distribution | None = None) -> Launch:
    """How a client should start the installation that is running now."""
    prefix, executable = prefix or sys.prefix, executable or sys.executable
    if in_uv_cache(Path(prefix)):
        return Launch("uvx", ("--from", uvx_spec(dist or distribution(DIST)), SCRIPT))
    script = Path(prefix) / ("Scripts" if os.name == "nt" else "bin") / SCRIPT
    if script.is_file():
        return Launch(str(script))
    return Launch(executable, ("-m", "plaud_index"))


def in_uv_cache(prefix: Path) -> bool:
    """An environment ``uvx`` made in its cache (not a ``uv tool install``, which lasts)."""
    try:
        made_by_uv = "\nuv = " in "\n" + (prefix / "pyvenv.cfg").read_text(errors="replace")
    except OSError:
        made_by_uv = False
    return made_by_uv and bool(_UV_CACHE_ENV.search(str(prefix) + os.sep))


def uvx_spec(dist: Distribution, installed: Callable[[str], bool] | None = None) -> str:
    """The requirement ``uvx --from`` needs to build this same environment again: the
    name with the installed runtime extras, and the direct URL it came from, if any."""
    installed = installed or _installed
    extras = sorted(extra for extra in dist.metadata.get_all("Provides-Extra") or ()
                    if extra not in DEV_EXTRAS and _extra_installed(dist, extra, installed))
    name = DIST + (f"[{','.join(extras)}]" if extras else "")
    url = _direct_url(dist)
    return f"{name} @ {url}" if url else name


def _direct_url(dist: Distribution) -> str | None:
    try:
        info = json.loads(dist.read_text("direct_url.json") or "null")
    except ValueError:
        return None
    if not isinstance(info, dict) or not isinstance(info.get("url"), str):
        return None
    vcs = info.get("vcs_info")
    if isinstance(vcs, dict):  # git+https://…@commit: the very revision that runs
        return f"{vcs.get('vcs', 'git')}+{info['url']}@{vcs.get('commit_id', '')}".rstrip("@")
    return str(info["url"])


def _extra_installed(dist: Distribution, extra: str,
                     installed: Callable[[str], bool]) -> bool:
    marker = re.compile(rf"""extra\s*==\s*['"]{re.escape(extra)}['"]""")
    needs = [r for r in dist.requires or () if marker.search(r)]
    return bool(needs) and all(installed(re.split(r"[\s\[<>=!~;(]", r, maxsplit=1)[0])
                               for r in needs)


def _installed(name: str) -> bool:
    try:
        distribution(name)
    except PackageNotFoundError:
        return False
    return True


STARTUP_TIMEOUT_S = 120.0  # a first uvx start downloads and installs the environment


def check_launch(launch: Launch, timeout_s: float = STARTUP_TIMEOUT_S) -> float:
    """Start ``launch`` as a client would and complete MCP ``initialize``; the seconds it
    took. ``ConfigError`` (nothing is written) when it cannot start or does not answer."""
    argv = [launch.command, *launch.args]
    shown = " ".join(shell_word(a) for a in argv)
    hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "plaud-index-mcp config", "version": "check"}}}
    started = time.monotonic()
    with tempfile.TemporaryFile() as errors:
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=errors)
        except OSError as exc:
            raise ConfigError(f"`{shown}` cannot be started ({exc}); nothing was "
                              "written") from exc
        answers: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=_forward, args=(proc.stdout, answers), daemon=True).start()
        try:
            assert proc.stdin is not None
            proc.stdin.write(json.dumps(hello).encode() + b"\n")
            proc.stdin.flush()
            while True:
                line = answers.get(timeout=max(0.0, started + timeout_s - time.monotonic()))
                if not line:
                    raise EOFError
                if _answers_initialize(line):
                    return time.monotonic() - started
        except (queue.Empty, EOFError, OSError) as exc:
            if not isinstance(exc, queue.Empty):  # its output or stdin closed: it is ending
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=10)
            exited = proc.poll() is not None
            if not exited:
                proc.kill()
            proc.wait()
            errors.seek(0)
            tail = errors.read().decode(errors="replace").strip().splitlines()[-3:]
            said = f"; it said: {' / '.join(tail)[-400:]}" if tail else ""
            failed = f"exited with code {proc.returncode} before answering" if exited \
                else f"did not answer within {timeout_s:.0f} s:"
            raise ConfigError(f"`{shown}` {failed} MCP initialize{said}; nothing was "
                              "written") from None
        finally:
            if proc.poll() is None:  # it answered: end it as a client does, stdin closed
                with contextlib.suppress(OSError):
                    proc.stdin.close()  # type: ignore[union-attr]
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()


def _forward(stream: object, lines: queue.Queue[bytes]) -> None:
    for line in stream or ():  # type: ignore[attr-defined]
        lines.put(line)
    lines.put(b"")  # end of output: the process closed stdout (it exited)


def _answers_initialize(line: bytes) -> bool:
    try:
        message = json.loads(line)
    except ValueError:
        return False
    return isinstance(message, dict) and message.get("id") == 1 and "result" in message


def shell_word(word: str) -> str:
    """``word`` quoted for a POSIX shell where it needs it."""
    return word if re.fullmatch(r"[\w@%+=:,./-]+", word) else "'" + word.replace("'", "'\\''") \
        + "'"


