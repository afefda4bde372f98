"""install-agent: the launchd plist and the systemd unit, written and loaded via a fake runner."""

from __future__ import annotations

import plistlib
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from plaud_index.errors import AgentError
from plaud_index.setup.agent import LABEL, install, launchd_plist, plan, uninstall

REPO = Path(__file__).resolve().parent.parent


class Recorder:
    def __init__(self, fail: bool = False) -> None:
        self.calls: list[list[str]] = []
        self.fail = fail

    def __call__(self, argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        self.calls.append(argv)
        return subprocess.CompletedProcess(argv, 5 if self.fail else 0, "", "boom")


def test_the_shipped_plist_parses_and_runs_the_indexer() -> None:
    agent = plistlib.loads((REPO / "launchd" / f"{LABEL}.plist").read_bytes())
    assert agent["Label"] == LABEL and agent["RunAtLoad"] and agent["KeepAlive"]
    assert agent["ThrottleInterval"] >= 10
    assert agent["ProgramArguments"][1:] == ["-m", "plaud_index", "indexer"]
    assert all(Path(p).is_absolute() for p in (agent["ProgramArguments"][0],
                                                agent["StandardErrorPath"]))
    assert "Library/Logs/plaud-index-mcp" in agent["StandardErrorPath"]


def test_generated_plist_uses_this_interpreter_absolutely(tmp_path: Path) -> None:
    agent = plistlib.loads(launchd_plist(tmp_path, sys.executable).encode())
    assert agent["ProgramArguments"] == [str(Path(sys.executable).absolute()), "-m",
                                         "plaud_index", "indexer"]
    assert "serve" not in " ".join(agent["ProgramArguments"])


def test_install_on_macos_writes_the_plist_and_bootstraps_it(tmp_path: Path) -> None:
    run = Recorder()
    agent = plan("darwin", home=tmp_path, uid=501)
    assert install(agent, run) == [f"launchctl bootstrap gui/501 {agent.path}"]
    assert agent.path == tmp_path / "Library" / "LaunchAgents" / f"{LABEL}.plist"
    assert plistlib.loads(agent.path.read_bytes())["Label"] == LABEL
    assert (tmp_path / "Library" / "Logs" / "plaud-index-mcp").is_dir()
    uninstall(agent, run)
    assert run.calls[-1] == ["launchctl", "bootout", f"gui/501/{LABEL}"]
    assert not agent.path.exists()


def test_install_on_linux_writes_a_systemd_user_unit(tmp_path: Path) -> None:
    run = Recorder()
    agent = plan("linux", home=tmp_path)
    install(agent, run)
    text = agent.path.read_text()
    assert f"ExecStart={Path(sys.executable).absolute()} -m plaud_index indexer" in text
    assert "Restart=always" in text
    assert run.calls == [["systemctl", "--user", "daemon-reload"],
                         ["systemctl", "--user", "enable", "--now",
                          "plaud-index-mcp-indexer.service"]]


def test_a_refusing_service_manager_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(AgentError, match="launchctl bootstrap"):
        install(plan("darwin", home=tmp_path, uid=501), Recorder(fail=True))


def test_print_shows_the_agent_without_installing(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, "-m", "plaud_index", "install-agent", "--print"],
                            capture_output=True, text=True, cwd=REPO, timeout=60,
                            env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin",
                                 "PLAUD_INDEX_HOME": str(tmp_path / "h")})
    assert result.returncode == 0, result.stderr
    assert "-m plaud_index indexer" in result.stdout and "# then run:" in result.stdout
    assert not (tmp_path / ".config").exists()
