"""Setting up MCP clients: ``config <client> [--install]`` for one, ``install`` and
``uninstall`` for every client on the machine. Each lists what it changes; only our entry
in each file changes (``setup.client_config``)."""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..config import ENV_VARS, Config, passthrough_env
from ..errors import PlaudIndexError
from ..home import Home
from ..plaud import auth_status
from ..setup.client_config import (
    Change,
    EntryNotWritten,
    apply,
    describe,
    entry_lines,
    plan,
    snippet,
)
from ..setup.clients import CLIENTS, client, config_path, http_entry, installed, stdio_entry
from ..setup.launch import Launch, check_launch, this_launch

MANAGED = frozenset(ENV_VARS)  # the settings an entry's env carries from the shell


def _entry(name: str, launch: Launch, env: dict[str, str],
           shared: tuple[str, str] | None = None) -> dict[str, Any]:
    """The client's entry: the stdio server (which forwards to a running ``serve --http``
    by itself), or with ``shared`` (its URL and token) the HTTP server, where the client
    speaks HTTP."""
    spec = client(name)
    if shared is not None and spec.url_key is not None:
        entry = http_entry(spec, *shared)
        assert entry is not None
        return entry
    return stdio_entry(spec, launch.command, launch.args, env)


def shared_server(config: Config, port: int) -> tuple[str, str]:
    """The URL and bearer token of this home's ``serve --http`` (running, or as it will)."""
    from ..server.http import running_server
    from ..server.http_guard import local_token

    running = running_server(config.home)
    url = str(running["url"]) if running else f"http://127.0.0.1:{port}/mcp"
    return url, local_token(config.home)


HTTP_NOTE = ("{label} speaks only stdio: its entry starts the stdio server, which forwards to "
             "the shared HTTP server whenever it runs (and serves on its own when not).")


def carried(env: dict[str, str]) -> str:
    return (f"The entry carries your settings: {', '.join(env)}." if env else
            "No PLAUD_* settings are set here: the entry carries none.")


def sign_in_note(config: Config) -> str | None:
    """What a web-token user must know: the token stays out of client configs, so the
    client's server signs in another way (or not at all yet)."""
    if not config.web_token:
        return None
    stored = auth_status(replace(config, web_token=None), online=False)
    how = (f"with the sign-in `login` stored ({stored.account or 'your Plaud account'}): "
           "it does not see Plaud folders, which only the web token reads"
           if stored.signed_in else
           "not at all yet: its first answer will be a sign-in link (or run "
           "`plaud-index-mcp login` once)")
    return ("Your shell signs in to Plaud with a web token (PLAUD_API_TOKEN), which is never "
            f"written into a client's config. The client's server signs in {how}.")


def _check(launch: Launch, env: dict[str, str]) -> None:
    shell = {k: v for k, v in os.environ.items() if k not in ENV_VARS}
    seconds = check_launch(launch, environ={**shell, **env})  # exactly the entry's settings
    print(f"Checked: `{' '.join((launch.command, *launch.args))}` started and answered MCP "
          f"initialize in {seconds:.1f} s, with the entry's settings.")


def _write(change: Change) -> int:
    backup = apply(change)
    print(describe(change) + (f" (the old file is saved as {backup})" if backup else ""))
    return 0


def _refused(exc: EntryNotWritten) -> int:
    print(f"plaud-index-mcp: {exc}", file=sys.stderr)
    print(exc.snippet)
    return 1


def cmd_config(args: argparse.Namespace, config: Config) -> int:
    launch, env = this_launch(), passthrough_env(os.environ)  # never a Plaud token
    shared = shared_server(config, args.port) if args.http else None
    entry = _entry(args.client, launch, env, shared)
    notes = [carried(env), *filter(None, [sign_in_note(config)])]
    if shared and "command" in entry:
        notes.append(HTTP_NOTE.format(label=client(args.client).label))
    elif shared:
        notes = [f"The entry reaches the shared server at {shared[0]} with its bearer token "
                 f"({Home(config.home).http_token}, 0600); it runs with the settings it was "
                 "started with."]
    if not args.install:
        print(snippet(args.client, entry))
        for note in notes:
            print(note, file=sys.stderr)
        return 0
    if "command" in entry:
        _check(launch, env)
    for note in notes:
        print(note)
    try:
        change = plan(args.client, config_path(args.client, Path.home(), os.environ), entry,
                      MANAGED)
    except EntryNotWritten as exc:
        return _refused(exc)
    _write(change)
    if change.changed:
        print(f"Restart {client(args.client).label} to load it.")
    return 0


def cmd_install(args: argparse.Namespace, config: Config) -> int:
    """Our entry in every MCP client found on this machine."""
    launch, env = this_launch(), passthrough_env(os.environ)
    shared = shared_server(config, args.port) if args.http else None
    home = Path.home()
    found = [name for name in (args.client or CLIENTS)
             if installed(name, home, os.environ) or args.client]
    missing = [CLIENTS[n].label for n in CLIENTS if n not in found and not args.client]
    if not found:
        print("No MCP client was found on this machine (" + ", ".join(missing) + "). "
              "Install one, or name it: `plaud-index-mcp install --client cursor`.")
        return 1
    if not args.dry_run:
        _check(launch, env)
    print(carried(env))
    failed = 0
    for name in found:
        try:
            change = plan(name, config_path(name, home, os.environ),
                          _entry(name, launch, env, shared), MANAGED)
        except EntryNotWritten as exc:
            failed += _refused(exc)
            continue
        except PlaudIndexError as exc:
            print(f"{name}: {exc}", file=sys.stderr)
            failed += 1
            continue
        if args.dry_run:
            print(("would: " if change.changed else "") + describe(change))
            if change.changed and change.entry is not None:
                print(f"  {entry_lines(change.entry)}")
            continue
        _write(change)
    if missing:
        print(f"Not found on this machine: {', '.join(missing)}.")
    if note := sign_in_note(config):
        print(note)
    if shared:
        _http_agent(args, shared[0])
    _offer_agent(args)
    if not args.dry_run and not failed:
        print("Restart your MCP clients to load plaud-index. Their first question starts the "
              "first sync; sign in from the client when it asks.")
    return 1 if failed else 0


def _offer_agent(args: argparse.Namespace) -> None:
    from ..setup.agent import install
    from ..setup.agent import plan as agent_plan

    agent = agent_plan()
    if args.dry_run:
        print(f"The indexer agent ({agent.path}) keeps the index fresh in the background: "
              "`plaud-index-mcp install --agent` installs it.")
        return
    wanted = args.agent
    if wanted is None and sys.stdin.isatty():
        answer = input("Install the indexer agent, which keeps the index fresh at login "
                       "(recommended)? [Y/n] ").strip().casefold()
        wanted = answer in ("", "y", "yes")
    if not wanted:
        print("The indexer agent was not installed: the servers your clients start keep the "
              "index fresh while they run (`plaud-index-mcp install-agent` adds it later).")
        return
    for command in install(agent):
        print(f"ran: {command}")
    print(f"Installed {agent.path}: the indexer runs in the background and at login.")


def _http_agent(args: argparse.Namespace, url: str) -> None:
    """``install --http``: the shared server runs at login, kept alive, beside the indexer."""
    from ..setup.agent import install
    from ..setup.agent import plan as agent_plan

    agent = agent_plan(job="http")
    if args.dry_run:
        print(f"would: install {agent.path}: the shared HTTP server at {url}, started at "
              "login and kept alive")
        return
    for command in install(agent):
        print(f"ran: {command}")
    print(f"Installed {agent.path}: one MCP server for every client at {url}; clients that "
          "speak only stdio forward to it.")


def cmd_uninstall(args: argparse.Namespace, config: Config) -> int:
    """Our entry out of every client's config, nothing else."""
    home, failed, removed = Path.home(), 0, 0
    for name in args.client or CLIENTS:
        path = config_path(name, home, os.environ)
        if not path.exists() and not path.is_symlink():
            continue
        try:
            change = plan(name, path, None)
        except EntryNotWritten as exc:
            print(f"plaud-index-mcp: {exc}", file=sys.stderr)
            failed += 1
            continue
        except PlaudIndexError as exc:
            print(f"{name}: {exc}", file=sys.stderr)
            failed += 1
            continue
        if change.action == "absent":
            continue
        removed += 1
        if args.dry_run:
            print("would: " + describe(change))
        else:
            _write(change)
    if not removed and not failed:
        print("No MCP client config has an entry of ours.")
    print("The indexer agent, if installed, stays: `plaud-index-mcp uninstall-agent` "
          "removes it.")
    return 1 if failed else 0
