"""A client's config is the user's file: only our entry changes, byte for byte. Links are
written through to their target, a FIFO, a folder, a read-only file or folder gets a
one-line message, never a traceback, a hang or a write elsewhere; the user's own keys,
env variables and options in our entry stay; what cannot be kept byte-exact is refused
with the entry to paste."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import tomllib
from hypothesis import given, settings
from hypothesis import strategies as st

from plaud_index.errors import ConfigError
from plaud_index.setup import jsonc, jsonc_edit
from plaud_index.setup.client_config import apply, plan
from plaud_index.setup.clients import client, stdio_entry

REPO = Path(__file__).resolve().parent.parent
OURS = stdio_entry(client("cursor"), "/Users/me/.local/bin/uvx",
                   ("--from", "plaud-index-mcp[offline]", "plaud-index-mcp"),
                   {"PLAUD_TIMEZONE": "Europe/Berlin"})
MANAGED = frozenset({"PLAUD_TIMEZONE", "PLAUD_INDEX_FOLDERS"})


def install(name: str, path: Path, entry: dict[str, Any] | None = None) -> Path | None:
    change = plan(name, path, stdio_entry(client(name), OURS["command"],
                                          tuple(OURS["args"]), OURS["env"])
                  if entry is None else entry, MANAGED)
    return apply(change)


def changed_region(old: str, new: str) -> tuple[str, str]:
    """What differs between two texts: (old's middle, new's middle) after the longest
    common prefix and suffix."""
    start = 0
    while start < min(len(old), len(new)) and old[start] == new[start]:
        start += 1
    end = 0
    while end < min(len(old), len(new)) - start and old[-1 - end] == new[-1 - end]:
        end += 1
    return old[start:len(old) - end], new[start:len(new) - end]


CODEX = '''model = "o4-mini"

[mcp_servers.plaud-index]
command = "/old/bin/plaud-index-mcp"
args = ["-v"]
startup_timeout_sec = 30
env = { PLAUD_TIMEZONE = "UTC", HTTPS_PROXY = "http://proxy:3128" }
# the filesystem server is mine
  [mcp_servers.fs]
  command = "npx"
  args = [
    "-y", # pinned below
    "@modelcontextprotocol/server-filesystem",
  ]

[profiles.fast]
notes = """
[not.a.table]
"""
'''


def test_codex_keeps_an_indented_table_and_the_comment_before_it(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text(CODEX)
    install("codex", path)
    text = path.read_text()
    old_part, new_part = changed_region(CODEX, text)
    assert "[mcp_servers.fs]" not in old_part and "# the filesystem" not in old_part
    assert text.count("  [mcp_servers.fs]\n") == 1 and "# the filesystem server is mine\n" in text
    parsed = tomllib.loads(text)
    assert parsed["mcp_servers"]["fs"]["args"] == ["-y", "@modelcontextprotocol/server-filesystem"]
    assert parsed["profiles"]["fast"]["notes"] == "[not.a.table]\n"
    ours = parsed["mcp_servers"]["plaud-index"]
    # the user's own key, env variable and option stay; our settings are the shell's
    assert ours["startup_timeout_sec"] == 30 and ours["args"][-1] == "-v"
    assert ours["env"] == {"HTTPS_PROXY": "http://proxy:3128", "PLAUD_TIMEZONE": "Europe/Berlin"}
    assert ours["command"] == OURS["command"]


def test_a_link_to_a_dotfiles_copy_is_written_through_and_stays_a_link(
        tmp_path: Path) -> None:
    real = tmp_path / "dotfiles" / "cursor" / "mcp.json"
    real.parent.mkdir(parents=True)
    real.write_text('{"mcpServers": {"fs": {"command": "npx"}}}\n')
    link = tmp_path / ".cursor" / "mcp.json"
    link.parent.mkdir()
    link.symlink_to(real)
    backup = install("cursor", link)
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert json.loads(real.read_text())["mcpServers"]["plaud-index"]["command"] == OURS["command"]
    assert backup is not None and backup.parent == real.parent
    assert sorted(p.name for p in link.parent.iterdir()) == ["mcp.json"]


def test_a_link_to_nothing_is_refused_naming_its_target(tmp_path: Path) -> None:
    link = tmp_path / "mcp.json"
    link.symlink_to(tmp_path / "gone" / "mcp.json")
    with pytest.raises(ConfigError, match=r"a link to .*gone/mcp.json, which does not exist"):
        install("cursor", link)
    assert not (tmp_path / "gone").exists()


def test_numbers_json_cannot_hold_as_floats_stay_as_written(tmp_path: Path) -> None:
    text = ('{\n  "huge": 1e999,\n  "exact": 0.1000000000000000055511151231257827,\n'
            '  "mcpServers": {\n    "x": {"command": "y"}\n  }\n}\n')
    path = tmp_path / "mcp.json"
    path.write_text(text)
    install("cursor", path)
    new = path.read_text()
    assert "1e999" in new and "Infinity" not in new
    assert "0.1000000000000000055511151231257827" in new
    old_part, new_part = changed_region(text, new)
    assert old_part == "" and 'plaud-index"' in new_part


def test_a_read_only_file_is_refused_even_for_root(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text("{}")
    path.chmod(0o444)
    with pytest.raises(ConfigError, match=r"read-only \(mode 0444\).*chmod u\+w"):
        install("cursor", path)
    assert path.read_text() == "{}" and len(list(tmp_path.iterdir())) == 1


def test_the_users_env_args_and_keys_in_our_json_entry_stay(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"plaud-index": {
        "command": "/old/venv/bin/plaud-index-mcp", "args": ["-v"], "disabled": False,
        "env": {"HTTPS_PROXY": "http://p:1", "PLAUD_INDEX_FOLDERS": "/old"}}}}, indent=2))
    install("cursor", path)
    ours = json.loads(path.read_text())["mcpServers"]["plaud-index"]
    assert ours == {"command": OURS["command"], "args": [*OURS["args"], "-v"],
                    "env": {"HTTPS_PROXY": "http://p:1", "PLAUD_TIMEZONE": "Europe/Berlin"},
                    "disabled": False}


def test_vscode_jsonc_keeps_its_comments_and_trailing_commas(tmp_path: Path) -> None:
    text = ('// my servers\n{\n  "servers": {\n    /* github */\n    "github": {"type": "http",'
            ' "url": "https://api.githubcopilot.com/mcp/"},\n  },\n  "inputs": [],\n}\n')
    path = tmp_path / "mcp.json"
    path.write_text(text)
    install("vscode", path)
    new = path.read_text()
    old_part, new_part = changed_region(text, new)
    assert old_part == "" and 'plaud-index"' in new_part and '"type": "stdio"' in new_part
    assert jsonc.plain(jsonc.member(jsonc.parse(new), ("servers", "github"))) == {
        "type": "http", "url": "https://api.githubcopilot.com/mcp/"}


def test_uninstall_gives_back_the_file_as_it_was(tmp_path: Path) -> None:
    for name, text in (("cursor", '{\n  "mcpServers": {\n    "fs": {"command": "npx"}\n  }\n}\n'),
                       ("codex", 'model = "m"\n\n[mcp_servers.fs]\ncommand = "npx"\n'),
                       ("vscode", '{"servers": {"a": {}}, // x\n}')):
        path = tmp_path / f"{name}.conf"
        path.write_text(text)
        install(name, path)
        assert path.read_text() != text
        apply(plan(name, path, None))
        assert path.read_text() == text, name


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                 max_size=3),
    max_leaves=8)


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.text(max_size=8).filter(lambda k: k != "mcpServers"), JSON_VALUES,
                       max_size=4),
       st.dictionaries(st.text(max_size=8).filter(lambda k: k != "plaud-index"),
                       JSON_VALUES, max_size=3) | st.none(),
       st.sampled_from([None, 2, 4, "\t"]), st.booleans())
def test_the_only_bytes_that_change_are_our_entry(
        top: dict[str, Any], servers: dict[str, Any] | None, indent: Any, ours_before: bool
        ) -> None:
    document: dict[str, Any] = dict(top)
    if servers is not None:
        document["mcpServers"] = dict(servers)
        if ours_before:
            document["mcpServers"]["plaud-index"] = {"command": "old", "args": []}
    text = json.dumps(document, indent=indent, ensure_ascii=False)
    new = jsonc_edit.set_member(text, ("mcpServers",), "plaud-index", OURS, comments=False)
    assert json.loads(new)["mcpServers"]["plaud-index"] == OURS
    rest = json.loads(new)
    rest["mcpServers"].pop("plaud-index")
    if servers is None:
        rest.pop("mcpServers")
        document.pop("mcpServers", None)
    else:
        document["mcpServers"].pop("plaud-index", None)
    assert rest == document
    old_part, new_part = changed_region(text, new)
    if not (servers is not None and ours_before):
        assert old_part == "", (text, new)  # an insertion: not one byte of theirs changed
    else:
        old_value = jsonc.member(jsonc.parse(text), ("mcpServers", "plaud-index"))
        assert old_value is not None and old_part in text[old_value.start:old_value.end]


def cli(home: Path, *argv: str, prefix: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*prefix, sys.executable, "-m", "plaud_index", *argv],
                          capture_output=True, text=True, cwd=REPO, timeout=120,
                          env={**os.environ, "HOME": str(home),
                               "PLAUD_INDEX_HOME": str(home / "pi")})


def test_a_fifo_at_the_config_path_is_refused_at_once(tmp_path: Path) -> None:
    path = tmp_path / ".cursor" / "mcp.json"
    path.parent.mkdir()
    os.mkfifo(path)
    done = cli(tmp_path, "install", "--dry-run", "--client", "cursor")
    assert done.returncode == 1 and "is a FIFO, not a config file" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_read_only_config_folder_gets_one_line_and_the_entry_to_paste(
        tmp_path: Path) -> None:
    folder = tmp_path / ".cursor"
    folder.mkdir()
    (folder / "mcp.json").write_text('{"mcpServers": {}}')
    folder.chmod(0o555)
    drop = ("setpriv", "--bounding-set", "-dac_override,-dac_read_search") \
        if os.geteuid() == 0 else ()
    try:
        done = cli(tmp_path, "config", "cursor", "--install", prefix=drop)
    finally:
        folder.chmod(0o755)
    assert done.returncode == 1, done.stdout
    assert "Traceback" not in done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("plaud-index-mcp:")]
    assert len(lines) == 1 and "cannot be read or written" in lines[0], done.stderr
    assert (folder / "mcp.json").read_text() == '{"mcpServers": {}}'
    assert sorted(p.name for p in folder.iterdir()) == ["mcp.json"]


def test_a_web_token_user_is_told_how_the_clients_server_signs_in(tmp_path: Path) -> None:
    """config never copies PLAUD_API_TOKEN into an entry; it says so, and doctor's client
    check says the client's server has no sign-in (its first answer is a sign-in link)."""
    from plaud_index.config import build_config
    from plaud_index.setup.doctor import check_clients

    env = {"PLAUD_API_TOKEN": "bearer secret-web-token", "PLAUD_TIMEZONE": "UTC"}
    shown = subprocess.run([sys.executable, "-m", "plaud_index", "config", "cursor"],
                           capture_output=True, text=True, cwd=REPO, timeout=60,
                           env={**os.environ, "HOME": str(tmp_path),
                                "PLAUD_INDEX_HOME": str(tmp_path / "pi"), **env})
    assert shown.returncode == 0, shown.stderr
    assert "secret-web-token" not in shown.stdout + shown.stderr
    assert "never written into a client's config" in shown.stderr
    assert "its first answer will be a sign-in link" in shown.stderr
    entry = json.loads(shown.stdout)["mcpServers"]["plaud-index"]
    assert "PLAUD_API_TOKEN" not in entry.get("env", {})
    path = tmp_path / ".cursor" / "mcp.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"mcpServers": {"plaud-index": entry}}))
    config = build_config({"PLAUD_INDEX_HOME": str(tmp_path / "pi"), **env}, None)
    shell = {"HOME": str(tmp_path), "PLAUD_INDEX_HOME": str(tmp_path / "pi"), **env}
    check = check_clients(shell, home=tmp_path, config=config)
    assert check.status == "warn" and "without your web token" in check.detail
    assert "plaud-index-mcp login" in str(check.fix)
