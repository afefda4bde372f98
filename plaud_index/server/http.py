"""``serve --http``: one MCP server for every client on the machine, over the SDK's
streamable HTTP transport, on 127.0.0.1 unless told otherwise.

The same server as stdio's (``app.build_server``: tools, prompts, sign-in), behind the
guards of ``http_guard`` (Origin, Host, a bearer token, rate limits). With
``--public-url`` it is also an OAuth 2.1 authorization server for remote clients
(``remote_auth``), each approved by the owner (``consent``), whose approval page listens on
a second loopback port that no tunnel forwards. Where it runs is recorded in
``<home>/http-server.json`` (while it runs), so a stdio entry can forward to it
(``forward``) instead of starting a server of its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import logging
import os
import signal
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlparse

import uvicorn
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.server.transport_security import TransportSecuritySettings

from .. import __version__
from ..answers import Answers
from ..config import HTTP_PORT, Config
from ..errors import ConfigError
from ..fsio import read_state_file, write_json_atomic
from ..home import Home
from .account import Account
from .app import build_server, server_process, warm_up
from .client_documents import advertised
from .connections import BoundedH11
from .consent import add_public_routes, consent_app
from .forward import proves
from .http_guard import Guard, RateLimit, local_token, proof, same
from .remote_auth import Pending, RemoteAuthority, spaced

log = logging.getLogger(__name__)

LOOPBACK = ("127.0.0.1", "::1", "localhost")
EVERYWHERE = ("0.0.0.0", "::", "")  # every address of every network this machine is on


def origins_of(host: str, port: int) -> tuple[set[str], set[str]]:
    """The Host and Origin values a request to this server may carry."""
    names = {host, "127.0.0.1", "localhost"} if host in LOOPBACK else {host}
    hosts = {f"{n}:{port}" for n in names} | ({f"[::1]:{port}"} if host in LOOPBACK else set())
    return hosts, {f"http://{h}" for h in hosts}


class Verifier:
    """Which bearer tokens the guard lets through: the local token, and with the remote
    authorization on, a remote client's access token (the SDK checks those again)."""

    def __init__(self, token: str, authority: RemoteAuthority | None) -> None:
        self.token, self.authority = token, authority

    async def accepts(self, token: str) -> bool:
        if self.authority is not None:
            return await self.authority.load_access_token(token) is not None
        return same(token, self.token)


def check_public_url(url: str) -> str:
    parsed = urlparse(url)
    local = parsed.hostname in LOOPBACK
    if parsed.scheme != "https" and not (parsed.scheme == "http" and local) or \
            not parsed.hostname or parsed.path not in ("", "/") or parsed.query:
        raise ConfigError(f"--public-url must be the https:// address of your tunnel (e.g. "
                          f"https://plaud.example.ts.net), got {url!r}")
    return url.rstrip("/")


def announce(admin: str) -> Callable[[Pending], None]:
    def say(pending: Pending) -> None:
        log.warning("%r asks to use this server. Approve it on this machine: %s/approve/%s "
                    "- or, from where you are, type the one-time code %s on the page it "
                    "opened. (It expires in 10 minutes; nothing is granted until then.)",
                    pending.client_name, admin, pending.ident, spaced(pending.code))
    return say


@dataclass(frozen=True)
class Remote:
    """Remote mode (``--public-url``): the public origin a tunnel serves, the authority
    that registers clients and issues their tokens, and the owner's approval page on the
    next loopback port (which no tunnel forwards)."""
    base: str
    authority: RemoteAuthority
    approval_port: int

    @classmethod
    def of(cls, home: Path, public_url: str, port: int, token: str) -> Remote:
        base = check_public_url(public_url)
        admin = f"http://127.0.0.1:{port + 1}"
        return cls(base, RemoteAuthority(home, base, announce(admin), token), port + 1)

    def auth_settings(self) -> AuthSettings:
        # (validated from text: the issuer keeps its empty path, "https://host" and not
        # "https://host/", as RFC 8414 compares it character for character)
        return AuthSettings.model_validate({
            "issuer_url": self.base, "resource_server_url": f"{self.base}/mcp",
            "validate_token_resource": True,
            "client_registration_options": ClientRegistrationOptions(enabled=True),
            "revocation_options": RevocationOptions(enabled=True)})

    def public_origin(self) -> tuple[str, str]:
        """The Host and Origin a request through the tunnel carries."""
        public = urlparse(self.base)
        return public.netloc, f"{public.scheme}://{public.netloc}"

    def approval_server(self) -> uvicorn.Server:
        hosts, origins = origins_of("127.0.0.1", self.approval_port)
        approval = Guard(consent_app(self.authority), hosts=hosts, origins=origins,
                         verify=_never)
        return _uvicorn(approval, "127.0.0.1", self.approval_port, lifespan="off")


def check_host(host: str) -> str:
    """One address to listen on. A wildcard would expose the server on every network the
    machine joins (a café's Wi-Fi, a VPN) under Host values no list can know."""
    if host.strip("[]") in EVERYWHERE:
        raise ConfigError(f"--host {host or repr(host)} would listen on every network this machine "
                          "is on; give one of its addresses (e.g. its LAN address), or keep "
                          "127.0.0.1 and reach it from elsewhere with --public-url behind a "
                          "tunnel")
    return host


def check_free(config: Config, host: str, port: int, token: str) -> None:
    """One line, before anything starts, when this home's server runs already or another
    program holds the port."""
    running = running_server(config.home)
    if running is not None:
        where = urlparse(str(running.get("url", "")))
        if proves(where.hostname or "127.0.0.1", where.port or 80, token):
            raise ConfigError(f"serve --http already runs for this home (pid "
                              f"{running['pid']}, {running['url']}): stop it first, or give "
                              "this one another PLAUD_INDEX_HOME")
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host.strip("[]"), port))
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE:
                raise ConfigError(f"Cannot listen on {host}:{port}: {exc.strerror}") from None
            raise ConfigError(f"Port {port} on {host} is in use by another program; choose "
                              "another with --port") from None


def serve_http(config: Config, port: int = HTTP_PORT, host: str = "127.0.0.1",
               public_url: str | None = None) -> int:
    host = check_host(host)
    token = local_token(config.home)
    check_free(config, host, port, token)
    if host not in LOOPBACK:
        log.warning("Listening on %s: other machines can reach this server (the bearer token "
                    "still guards it)", host)
    remote = Remote.of(config.home, public_url, port, token) if public_url else None
    answers, account = server_process(config, started_by="server")
    app = http_app(answers, account, host, port, token, remote)
    warm_up(answers)
    log.info("plaud-index-mcp %s serving MCP over streamable HTTP at %s/mcp%s", __version__,
             f"http://{host}:{port}", f" (public: {remote.base}/mcp)" if remote else "")
    # SIGTERM (launchd, systemd, kill) ends the process like Ctrl-C, through the cleanup:
    # uvicorn re-raises the signal it caught once it has stopped, and with the default
    # action nothing after that would run (the record of a server gone would stay behind).
    previous = signal.signal(signal.SIGTERM, _stop)
    try:
        return asyncio.run(serve_apps(config.home, listeners(app, host, port, remote), remote,
                                      account.close))
    finally:
        signal.signal(signal.SIGTERM, previous)
        forget(config.home)


def http_app(answers: Answers, account: Account, host: str, port: int, token: str,
             remote: Remote | None) -> Guard:
    """The MCP server over streamable HTTP behind its guard: the local token on loopback,
    and with ``remote``, the OAuth authorization server and its public Host too."""
    authority = remote.authority if remote else None
    server = build_server(answers, account, auth=remote.auth_settings() if remote else None,
                          provider=authority)
    hosts, origins = origins_of(host, port)
    if remote is not None:
        add_public_routes(server, remote.authority)
        public_host, public_origin = remote.public_origin()
        hosts.add(public_host)
        origins.add(public_origin)
    # One picture of who may be asked for: the SDK's own Host/Origin check gets the very
    # lists our guard holds (left to its default, it would allow loopback only and refuse
    # every request a tunnel forwards with the public Host).
    app = server.streamable_http_app(host=host, transport_security=TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=sorted(hosts),
        allowed_origins=sorted(origins)))
    return Guard(app, hosts=hosts, origins=origins, verify=Verifier(token, authority).accepts,
                 resource_metadata=f"{remote.base}/.well-known/oauth-protected-resource/mcp"
                 if remote else None, limit=RateLimit(),
                 prove=lambda nonce, port: proof(token, nonce, port),
                 may_redirect=authority.may_redirect if authority else None,
                 behind_tunnel=remote is not None,
                 metadata=advertised if remote else None)


def _stop(signum: int, frame: Any) -> None:
    raise SystemExit(0)


def forget(home: Path) -> None:
    """Remove this process's record of where it serves (another's is left alone)."""
    record = Home(home).http_server
    with contextlib.suppress(OSError, ValueError, AttributeError):
        if json.loads(read_state_file(record)).get("pid") == os.getpid():
            record.unlink()


def _uvicorn(app: Any, host: str, port: int,
             lifespan: Literal["on", "off"]) -> uvicorn.Server:
    return uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning",
                                         access_log=False, lifespan=lifespan,
                                         server_header=False, http=BoundedH11))


def listeners(app: Guard, host: str, port: int, remote: Remote | None
              ) -> list[uvicorn.Server]:
    """The MCP server's listener, and with ``remote`` the approval page's."""
    servers = [_uvicorn(app, host, port, lifespan="on")]
    if remote is not None:
        servers.append(remote.approval_server())
    return servers


async def serve_apps(home: Path, servers: list[uvicorn.Server], remote: Remote | None,
                     close: Callable[[], None]) -> int:
    """Serve until stopped (``should_exit``); the record of where the MCP server serves
    written once every listener listens, removed when they stop."""
    tasks = [asyncio.create_task(s.serve()) for s in servers]
    while not all(s.started for s in servers) and not any(t.done() for t in tasks):
        await asyncio.sleep(0.05)
    if all(s.started for s in servers):
        main = servers[0].config
        write_json_atomic(Home(home).http_server, {
            "pid": os.getpid(), "url": f"http://{main.host}:{main.port}/mcp",
            "public": f"{remote.base}/mcp" if remote else None, "version": __version__,
            "started": time.time()})
    try:
        await asyncio.gather(*tasks)
    finally:
        for s in servers:
            s.should_exit = True
        forget(home)
        close()
    return 0 if all(s.started for s in servers) else 1


async def _never(token: str) -> bool:
    return False


def running_server(home: Path) -> dict[str, Any] | None:
    """The ``serve --http`` of this home, if one runs (its record, pid alive)."""
    from ..fsio import process_alive

    try:
        data = json.loads(read_state_file(Home(home).http_server))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and process_alive(data.get("pid")) else None
