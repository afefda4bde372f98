"""``install-agent`` / ``uninstall-agent``: run the indexer at login, kept alive (and, with
``install --http``, the shared HTTP server beside it: ``JOBS``).

macOS: a launchd agent ``~/Library/LaunchAgents/com.plaud-index-mcp.<job>.plist``
loaded with ``launchctl bootstrap gui/<uid>``. Linux: a systemd user unit
``~/.config/systemd/user/plaud-index-mcp-<job>.service`` enabled with
``systemctl --user enable --now``. Both run ``<this python> -m plaud_index <args>`` with
absolute paths, and log to a file the user can read.
"""

from __future__ import annotations

import os
import plistlib
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..config import passthrough_env
from ..errors import AgentError

LABEL = "com.plaud-index-mcp.indexer"
UNIT = "plaud-index-mcp-indexer.service"
# job -> (the subcommand's arguments, what it does, as the unit describes it)
JOBS = {"indexer": (("indexer",), "indexer (keeps the Plaud search index fresh)"),
        "http": (("serve", "--http"), "HTTP server (one MCP server for every client)")}
THROTTLE_S = 30  # launchd waits this long before restarting a crashed indexer

Runner = Callable[..., subprocess.CompletedProcess[str]]


@dataclass(frozen=True)
class AgentPlan:
    path: Path
    content: str
    load: list[list[str]]
    unload: list[list[str]]
    logs: Path | None = None  # launchd does not create its log directory


def indexer_command(python: str = sys.executable, job: str = "indexer") -> list[str]:
    return [str(Path(python).absolute()), "-m", "plaud_index", *JOBS[job][0]]


def launchd_plist(home: Path, python: str = sys.executable,
                  env: dict[str, str] | None = None, job: str = "indexer") -> str:
    logs = home / "Library" / "Logs" / "plaud-index-mcp"  # AgentPlan.logs creates it
    agent: dict[str, object] = {
        "Label": LABEL.replace("indexer", job),
        "ProgramArguments": indexer_command(python, job),
        "RunAtLoad": True,
        "KeepAlive": True,
        "ThrottleInterval": THROTTLE_S,
        "ProcessType": "Background",
        "StandardOutPath": str(logs / f"{job}.out.log"),
        "StandardErrorPath": str(logs / f"{job}.log"),
        "WorkingDirectory": str(home),
    }
    if env:
        agent["EnvironmentVariables"] = env
    return plistlib.dumps(agent, sort_keys=False).decode()


def systemd_unit(python: str = sys.executable, env: dict[str, str] | None = None,
                 job: str = "indexer") -> str:
    command = " ".join(indexer_command(python, job))
    lines = ["[Unit]", f"Description=plaud-index-mcp {JOBS[job][1]}",
             "After=network-online.target", "", "[Service]", f"ExecStart={command}",
             "Restart=always", f"RestartSec={THROTTLE_S}"]
    lines += [f"Environment={k}={v}" for k, v in (env or {}).items()]
    lines += ["", "[Install]", "WantedBy=default.target", ""]
    return "\n".join(lines)


def _passthrough_env() -> dict[str, str]:
    return passthrough_env(os.environ)


def plan(platform: str = sys.platform, home: Path | None = None,
         python: str = sys.executable, uid: int | None = None,
         job: str = "indexer") -> AgentPlan:
    home = home or Path.home()
    env = _passthrough_env()
    if platform == "darwin":
        domain = f"gui/{os.getuid() if uid is None else uid}"
        label = LABEL.replace("indexer", job)
        path = home / "Library" / "LaunchAgents" / f"{label}.plist"
        return AgentPlan(path, launchd_plist(home, python, env, job),
                         load=[["launchctl", "bootstrap", domain, str(path)]],
                         unload=[["launchctl", "bootout", f"{domain}/{label}"]],
                         logs=home / "Library" / "Logs" / "plaud-index-mcp")
    unit = UNIT.replace("indexer", job)
    path = home / ".config" / "systemd" / "user" / unit
    return AgentPlan(path, systemd_unit(python, env, job),
                     load=[["systemctl", "--user", "daemon-reload"],
                           ["systemctl", "--user", "enable", "--now", unit]],
                     unload=[["systemctl", "--user", "disable", "--now", unit]])


def install(agent: AgentPlan, run: Runner = subprocess.run) -> list[str]:
    agent.path.parent.mkdir(parents=True, exist_ok=True)
    if agent.logs:
        agent.logs.mkdir(parents=True, exist_ok=True)
    agent.path.write_text(agent.content, encoding="utf-8")
    return _run_all(agent.load, run)


def uninstall(agent: AgentPlan, run: Runner = subprocess.run) -> list[str]:
    done = _run_all(agent.unload, run, tolerate=True)
    agent.path.unlink(missing_ok=True)
    return done


def _run_all(commands: list[list[str]], run: Runner, tolerate: bool = False) -> list[str]:
    done = []
    for command in commands:
        try:
            result = run(command, capture_output=True, text=True, check=False, timeout=60)
        except OSError as exc:
            raise AgentError(f"Cannot run {command[0]}: {exc}") from None
        if result.returncode != 0 and not tolerate:
            raise AgentError(f"`{' '.join(command)}` failed ({result.returncode}): "
                             f"{(result.stderr or result.stdout).strip()}")
        done.append(" ".join(command))
    return done
