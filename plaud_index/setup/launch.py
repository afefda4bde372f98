"""How this installation was started, as a command a client can run, and proof it runs.

From an ephemeral ``uvx`` environment (one inside uv's cache, wherever that cache
is): ``uvx --from SPEC plaud-index-mcp``, where SPEC is what the installed
distribution records of where it came from (PEP 610 ``direct_url.json``: a local
wheel or folder, a VCS URL) with the extras that are installed (``[offline]``), or
the bare name from the package index; never a path inside uv's cache, which ``uv
cache clean`` deletes. ``uvx`` is written as an absolute path: a GUI client (Claude Desktop
on macOS) starts servers with the PATH a GUI app gets, ``/usr/bin:/bin:/usr/sbin:/sbin``,
where a bare ``uvx`` is not found (``spawn uvx ENOENT``). From a virtual environment or a
``uv tool install``: the absolute path of its console script. ``check_launch`` starts a
command as such a client would (that PATH, a minimal environment) and completes MCP
``initialize`` before anything is written.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import Distribution, PackageNotFoundError, distribution
from pathlib import Path

from ..errors import ConfigError

SCRIPT = "plaud-index-mcp"


@dataclass(frozen=True)
class Launch:
    command: str
    args: tuple[str, ...] = ()


DIST = "plaud-index-mcp"
DEV_EXTRAS = {"test", "dev"}  # installed for working on this package, not for running it
# uv's cache keeps ephemeral environments in archive-v*/ (and builds-v*/) folders
_UV_CACHE_ENV = re.compile(r"[/\\](archive|builds)-v\d+[/\\]")


GUI_PATH = "/usr/bin:/bin:/usr/sbin:/sbin"  # what a macOS GUI app's children get
# where uv's installers put uvx: its own installer, cargo, Homebrew (Apple silicon, Intel)
UVX_PLACES = ("~/.local/bin", "~/.cargo/bin", "/opt/homebrew/bin", "/usr/local/bin")
UVX_MISSING = (
    "Cannot find uvx, which starts this server for your MCP client. uv's installer puts it "
    "in ~/.local/bin (`curl -LsSf https://astral.sh/uv/install.sh | sh`), Homebrew in "
    "/opt/homebrew/bin (`brew install uv`). Install uv, or point the config's command at "
    "uvx's full path (`which uvx` in a terminal).")


def this_launch(prefix: str | None = None, executable: str | None = None,
                dist: Distribution | None = None,
                environ: dict[str, str] | None = None) -> Launch:
    """How a client should start the installation that is running now."""
    prefix, executable = prefix or sys.prefix, executable or sys.executable
    if in_uv_cache(Path(prefix)):
        return Launch(find_uvx(os.environ if environ is None else environ),
                      ("--from", uvx_spec(dist or distribution(DIST)), SCRIPT))
    script = Path(prefix) / ("Scripts" if os.name == "nt" else "bin") / SCRIPT
    if script.is_file():
        return Launch(str(script))
    return Launch(executable, ("-m", "plaud_index"))


def find_uvx(environ: dict[str, str] | os._Environ[str],
             installed_places: tuple[str, ...] = UVX_PLACES) -> str:
    """uvx's absolute path: beside the uv that started us (uv sets ``UV`` to itself), on
    this PATH, or where uv's installers put it. ``ConfigError`` with how to fix it."""
    places = [str(Path(environ["UV"]).parent)] if environ.get("UV") else []
    places += [*environ.get("PATH", "").split(os.pathsep),
               *(str(Path(p).expanduser()) for p in installed_places)]
    for place in places:
        found = shutil.which("uvx", path=place) if place else None
        if found:
            return str(Path(found).absolute())
    raise ConfigError(UVX_MISSING)


# How this machine reaches the network (a proxy, a company's certificate authority). A GUI
# client has these from the system (macOS hands apps its proxy and trust settings), so the
# check keeps them: without them uvx cannot reach the package index behind such a proxy,
# and the check would test the network instead of the command we write.
NETWORK_VARIABLES = ("SSL_CERT_FILE", "SSL_CERT_DIR", "HTTPS_PROXY", "HTTP_PROXY",
                     "ALL_PROXY", "NO_PROXY")


def client_environment(environ: dict[str, str] | os._Environ[str]) -> dict[str, str]:
    """The environment a GUI client gives a server: a minimal PATH, the user's identity
    and locale, the machine's network settings, and the settings a config's ``env`` may
    carry (``PLAUD_*``, uv's and the model hub's), nothing else of this shell."""
    kept = {k: v for k, v in environ.items()
            if k in ("HOME", "USER", "LOGNAME", "TMPDIR", "LANG", "SYSTEMROOT")
            or k.upper() in NETWORK_VARIABLES
            or k.startswith(("PLAUD_", "UV_", "HF_"))}
    return {**kept, "PATH": GUI_PATH}


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


def check_launch(launch: Launch, timeout_s: float = STARTUP_TIMEOUT_S,
                 environ: dict[str, str] | None = None) -> float:
    """Start ``launch`` as a GUI client would (``client_environment``) and complete MCP
    ``initialize``; the seconds it took. ``ConfigError`` (nothing is written) when it
    cannot start or does not answer."""
    argv = [launch.command, *launch.args]
    shown = " ".join(shell_word(a) for a in argv)
    hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "plaud-index-mcp config", "version": "check"}}}
    started = time.monotonic()
    with tempfile.TemporaryFile() as errors:
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=errors, env=client_environment(
                                        os.environ if environ is None else environ))
        except OSError as exc:
            hint = f" {UVX_MISSING}" if Path(launch.command).name.startswith("uvx") else ""
            raise ConfigError(f"`{shown}` cannot be started with a GUI client's PATH "
                              f"({GUI_PATH}): {exc}; nothing was written.{hint}") from exc
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


