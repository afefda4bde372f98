"""``config <client>``: the MCP client snippet that starts this server, printed or merged in.

The command is ``launch.this_launch()``: how this same installation was started.
Merging touches only the ``plaud-index`` entry: other servers and settings stay as
they are, the file is backed up first, and running it twice changes nothing the
second time.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..fsio import atomic_file, fsync_dir
from .launch import Launch, shell_word

SERVER = "plaud-index"
CLIENTS = ("claude-desktop", "cursor", "vscode", "codex", "claude-code")
SCRIPT = "plaud-index-mcp"


@dataclass(frozen=True)
class Installed:
    path: Path
    backup: Path | None  # None: the file did not exist, or nothing changed
    changed: bool


def config_path(client: str, home: Path, env: Mapping[str, str], cwd: Path,
                platform: str = sys.platform) -> Path:
    if client == "claude-desktop":
        if platform == "darwin":
            return home / "Library" / "Application Support" / "Claude" / \
                "claude_desktop_config.json"
        if platform == "win32":
            return Path(env.get("APPDATA", home)) / "Claude" / "claude_desktop_config.json"
        return home / ".config" / "Claude" / "claude_desktop_config.json"
    if client == "cursor":
        return home / ".cursor" / "mcp.json"
    if client == "vscode":
        return cwd / ".vscode" / "mcp.json"  # the workspace's servers
    if client == "codex":
        return Path(env.get("CODEX_HOME") or home / ".codex") / "config.toml"
    if client == "claude-code":
        return home / ".claude.json"
    raise ConfigError(f"unknown client {client!r}: choose one of {', '.join(CLIENTS)}")


def entry(client: str, launch: Launch, env: Mapping[str, str] | None = None
          ) -> dict[str, Any]:
    """Our server's entry: the command, and the user's settings in its ``env`` (a client
    starts the server with little of the user's shell: without them it would be another
    installation, with no folders, no mirror, another time zone)."""
    value: dict[str, Any] = {"command": launch.command, "args": list(launch.args)}
    if env:
        value["env"] = dict(env)
    if client in ("vscode", "claude-code"):
        value = {"type": "stdio", **value}
    return value


def snippet(client: str, launch: Launch, env: Mapping[str, str] | None = None) -> str:
    """What to paste (or, for Claude Code, what to run)."""
    if client == "codex":
        return toml_table(launch, env)
    if client == "claude-code":
        argv = " ".join(shell_word(a) for a in (launch.command, *launch.args))
        settings = "".join(f" -e {shell_word(f'{k}={v}')}" for k, v in (env or {}).items())
        return f"claude mcp add --scope user{settings} {SERVER} -- {argv}"
    key = "servers" if client == "vscode" else "mcpServers"
    return json.dumps({key: {SERVER: entry(client, launch, env)}}, indent=2)


def merge_json(existing: dict[str, Any], client: str, launch: Launch,
               env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """``existing`` with our entry set; every other key and server kept. Pure."""
    key = "servers" if client == "vscode" else "mcpServers"
    servers = existing.get(key, {})
    if not isinstance(servers, dict):
        raise ConfigError(f'"{key}" in the client config is not an object; fix it first')
    return {**existing, key: {**servers, SERVER: entry(client, launch, env)}}


def toml_table(launch: Launch, env: Mapping[str, str] | None = None) -> str:
    args = ", ".join(json.dumps(a) for a in launch.args)
    table = f'[mcp_servers.{SERVER}]\ncommand = {json.dumps(launch.command)}\nargs = [{args}]\n'
    if env:  # an inline table: the rest of the file is left byte for byte
        table += "env = { " + ", ".join(f"{json.dumps(k)} = {json.dumps(v)}"
                                        for k, v in env.items()) + " }\n"
    return table


def entry_env(client: str, path: Path) -> dict[str, str] | None:
    """The ``env`` of our entry in a client's config file; ``None`` when the file has no
    entry of ours (or cannot be read)."""
    try:
        text = path.read_text(encoding="utf-8")
        if client == "codex":
            import tomllib

            server = tomllib.loads(text).get("mcp_servers", {}).get(SERVER)
        else:
            key = "servers" if client == "vscode" else "mcpServers"
            server = json.loads(text).get(key, {}).get(SERVER)
    except (OSError, ValueError, AttributeError, ImportError):
        return None
    if not isinstance(server, dict):
        return None
    env = server.get("env") or {}
    return {str(k): str(v) for k, v in env.items()} if isinstance(env, dict) else {}


_TABLE = re.compile(rf"^\[mcp_servers\.(?:{SERVER}|\"{SERVER}\")\][^\n]*\n(?:(?!\[).*\n?)*",
                    re.MULTILINE)


def merge_toml(text: str, launch: Launch, env: Mapping[str, str] | None = None) -> str:
    """``text`` with our ``[mcp_servers.plaud-index]`` table replaced or appended; the rest
    byte for byte. Pure (TOML written by hand: the standard library only reads it)."""
    table = toml_table(launch, env)
    if _TABLE.search(text):
        return _TABLE.sub(lambda _: table + "\n", text, count=1).rstrip("\n") + "\n"
    joiner = "" if not text or text.endswith("\n\n") else ("\n" if text.endswith("\n")
                                                            else "\n\n")
    return text + joiner + table


def install(client: str, launch: Launch, path: Path, env: Mapping[str, str] | None = None,
            clock: Any = time.time) -> Installed:
    """Merge our entry into ``path``; a backup of the old file first; idempotent."""
    try:
        old = path.read_text(encoding="utf-8") if path.exists() else ""
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"Cannot read {path}: {exc}; nothing was changed") from exc
    new = _merged(client, launch, old, path, env)
    if new == old:
        return Installed(path, None, False)
    backup = None
    if path.exists():
        stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(clock()))
        backup = path.with_name(f"{path.name}.bak-{stamp}")
        shutil.copy2(path, backup)
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o644
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_file(path) as fh:
        fh.write(new.encode())
    os.chmod(path, mode)
    fsync_dir(path.parent)
    return Installed(path, backup, True)


def _merged(client: str, launch: Launch, old: str, path: Path,
            env: Mapping[str, str] | None) -> str:
    if client == "codex":
        _check_toml(old, path, "is not valid TOML")
        text = merge_toml(old, launch, env)
        _check_toml(text, path, "would not be valid TOML after adding our table")
        return text
    try:
        data = json.loads(old) if old.strip() else {}
    except ValueError as exc:
        raise ConfigError(f"{path} is not valid JSON ({exc}); fix it or move it away — "
                          "nothing was changed") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path} does not hold a JSON object; nothing was changed")
    merged: dict[str, Any] = merge_json(data, client, launch, env)
    if merged == data:
        return old
    return json.dumps(merged, indent=2, ensure_ascii=False) + "\n"


def _check_toml(text: str, path: Path, problem: str) -> None:
    try:
        import tomllib  # Python 3.11+; on 3.10 the merge is trusted as written
    except ModuleNotFoundError:  # pragma: no cover - 3.10
        return
    try:
        tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} {problem} ({exc}); nothing was changed") from exc
