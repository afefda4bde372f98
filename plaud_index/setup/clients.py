"""The MCP clients we install into: where each keeps its servers, in which format, and the
shape of the entry it reads. Pure (paths are computed from a home, an environment and a
platform given in).

Sources, as each client documents its user-level file: Claude Desktop
(``claude_desktop_config.json``, ``mcpServers``), Claude Code (``~/.claude.json``, user
scope, ``mcpServers``, ``"type": "stdio"``), Cursor (``~/.cursor/mcp.json``), VS Code (the
profile's ``mcp.json``, JSONC, ``servers``, ``"type"``), Codex (``$CODEX_HOME/config.toml``,
``[mcp_servers.<name>]``), Gemini CLI (``~/.gemini/settings.json``, ``mcpServers``,
``httpUrl`` for HTTP), Windsurf (``~/.codeium/windsurf/mcp_config.json``, ``serverUrl``).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConfigError

SERVER = "plaud-index"


@dataclass(frozen=True)
class Client:
    name: str  # as `config <name>` takes it
    label: str  # as people call it
    fmt: str  # "json" | "jsonc" | "toml"
    container: tuple[str, ...]  # where the servers are: ("mcpServers",), ("mcp_servers",)
    typed: bool = False  # entries say "type": "stdio" / "http"
    url_key: str | None = None  # the key of a streamable-HTTP entry; None: stdio only


CLIENTS: dict[str, Client] = {c.name: c for c in (
    Client("claude-desktop", "Claude Desktop", "json", ("mcpServers",)),
    Client("claude-code", "Claude Code", "json", ("mcpServers",), typed=True, url_key="url"),
    Client("cursor", "Cursor", "json", ("mcpServers",), url_key="url"),
    Client("vscode", "VS Code", "jsonc", ("servers",), typed=True, url_key="url"),
    Client("codex", "Codex", "toml", ("mcp_servers",)),
    Client("gemini", "Gemini CLI", "jsonc", ("mcpServers",), url_key="httpUrl"),
    Client("windsurf", "Windsurf", "json", ("mcpServers",), url_key="serverUrl"),
)}


def client(name: str) -> Client:
    try:
        return CLIENTS[name]
    except KeyError:
        raise ConfigError(f"unknown client {name!r}: choose one of "
                          f"{', '.join(CLIENTS)}") from None


def _app_support(home: Path, env: Mapping[str, str], platform: str) -> Path:
    """Where desktop apps keep their settings on this platform."""
    if platform == "darwin":
        return home / "Library" / "Application Support"
    if platform == "win32":
        return Path(env.get("APPDATA") or home / "AppData" / "Roaming")
    return Path(env.get("XDG_CONFIG_HOME") or home / ".config")


def config_path(name: str, home: Path, env: Mapping[str, str],
                platform: str = sys.platform) -> Path:
    """The user-level file the client reads its MCP servers from."""
    support = _app_support(home, env, platform)
    paths = {
        "claude-desktop": support / "Claude" / "claude_desktop_config.json",
        "claude-code": home / ".claude.json",
        "cursor": home / ".cursor" / "mcp.json",
        "vscode": support / "Code" / "User" / "mcp.json",
        "codex": Path(env.get("CODEX_HOME") or home / ".codex") / "config.toml",
        "gemini": home / ".gemini" / "settings.json",
        "windsurf": home / ".codeium" / "windsurf" / "mcp_config.json",
    }
    client(name)
    return paths[name]


def installed(name: str, home: Path, env: Mapping[str, str],
              platform: str = sys.platform) -> bool:
    """Is the client on this machine? Its settings folder exists (an app makes it at its
    first start; Claude Code's is ``~/.claude`` or ``~/.claude.json``)."""
    path = config_path(name, home, env, platform)
    if name == "claude-code":
        return path.exists() or (home / ".claude").is_dir()
    return path.parent.is_dir()


def stdio_entry(spec: Client, command: str, args: tuple[str, ...],
                env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The entry that starts the server over stdio."""
    value: dict[str, Any] = {"type": "stdio"} if spec.typed else {}
    value.update({"command": command, "args": list(args)})
    if env:
        value["env"] = dict(env)
    return value


def http_entry(spec: Client, url: str, token: str) -> dict[str, Any] | None:
    """The entry that reaches ``serve --http`` (``None``: this client speaks only stdio)."""
    if spec.url_key is None:
        return None
    value: dict[str, Any] = {"type": "http"} if spec.typed else {}
    value.update({spec.url_key: url, "headers": {"Authorization": f"Bearer {token}"}})
    return value


# Keys that say how to reach a server: an entry of ours replaces all of them at once (a
# stdio entry keeps no URL of an earlier HTTP one, and the other way round).
TRANSPORT_KEYS = {"type", "transport", "command", "args", "url", "httpUrl", "serverUrl",
                  "headers"}
PROGRAM_NAMES = ("plaud-index-mcp", "plaud_index")


def user_options(existing: Mapping[str, Any]) -> list[str]:
    """The options a user added after our program in an entry of ours (``-v``): what
    follows ``plaud-index-mcp`` or ``-m plaud_index`` in its args."""
    args = existing.get("args")
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        return []
    command = existing.get("command")
    anchor = -1 if isinstance(command, str) and command.endswith(PROGRAM_NAMES[0]) else None
    for index, arg in enumerate(args):
        if arg.endswith(PROGRAM_NAMES[0]) or (arg == PROGRAM_NAMES[1] and index and
                                              args[index - 1] == "-m"):
            anchor = index
    return [] if anchor is None else list(args[anchor + 1:])


def merged_entry(ours: dict[str, Any], existing: object,
                 managed: frozenset[str] = frozenset()) -> dict[str, Any]:
    """Our new entry over the one the file has: how to start or reach the server is ours,
    and so are the ``managed`` variables of ``env`` (our settings, as the shell has them
    now); the user's own keys stay (``disabled``, ``timeout``, …), and so do the other
    variables of ``env`` and the options they added after our program."""
    if not isinstance(existing, dict):
        return ours
    kept = {k: v for k, v in existing.items() if k not in TRANSPORT_KEYS and k != "env"}
    merged = {**ours, **kept}
    if "args" in ours:
        merged["args"] = [*ours["args"], *user_options(existing)]
    theirs = existing.get("env")
    if isinstance(theirs, dict):
        own = {k: v for k, v in theirs.items() if k not in managed}
        if own:
            merged["env"] = {**own, **ours.get("env", {})}
    return merged
