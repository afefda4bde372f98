"""A remote client's whole life behind a tunnel that keeps the public Host, with the SDK's
own OAuth client: it names itself (by registering, or by its metadata document), the
owner approves, it searches; the clock passes its access token's lifetime and it carries on
with a refresh, asking the owner nothing; the owner revokes it, and it is shut out.

The server runs in this process (``http.http_app``, ``listeners`` and ``serve_apps``, as
``serve --http --public-url`` assembles them), so that the world's clock can move on for
both sides, and so that the client's own web site, which serves its metadata document
(CIMD), stands at a public address: the resolver and the fetch are the only things
replaced (``ClientDocuments``); every rule between them runs as it does for a user."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import answers_of
from oauth_client import (
    REDIRECT,
    Memory,
    approve_at_the_machine,
    bearer,
    oauth_client,
    request,
    search,
    token,
    two_free_ports,
)
from tunnel import PUBLIC, ThroughTunnel, tunnel

from plaud_index.config import load_config
from plaud_index.server.account import Account
from plaud_index.server.client_documents import ClientDocuments
from plaud_index.server.http import Remote, http_app, listeners, serve_apps
from plaud_index.server.http_guard import local_token
from plaud_index.server.remote_auth import ACCESS_S, Pending, RemoteAuthority

REPO = Path(__file__).resolve().parent.parent
SITE_HOST = "app.example.com"
SITE_ADDRESS = "93.184.215.14"  # a public address: what its name resolves to
DOCUMENT_URL = f"https://{SITE_HOST}/oauth/client.json"
REAL_TIME = time.time


class WorldClock:
    """The time both the server and the client read: moved on by the test."""

    def __init__(self) -> None:
        self.ahead = 0.0

    def now(self) -> float:
        return REAL_TIME() + self.ahead


class ClientSite:
    """The remote app's web site: its name resolves to a public address, and it serves
    the app's metadata document. Records what our server fetched from it."""

    def __init__(self) -> None:
        self.fetched: list[tuple[str, str, int, str]] = []
        self.document = {"client_id": DOCUMENT_URL, "client_name": "Phone app (by its document)",
                         "redirect_uris": [REDIRECT], "response_types": ["code"],
                         "grant_types": ["authorization_code", "refresh_token"],
                         "token_endpoint_auth_method": "none"}

    def resolve(self, host: str, port: int) -> list[str]:
        if host != SITE_HOST:
            raise OSError(f"{host}: unknown name")
        return [SITE_ADDRESS]

    def fetch(self, host: str, address: str, port: int, path: str) -> bytes:
        self.fetched.append((host, address, port, path))
        return json.dumps(self.document).encode()


@pytest.fixture
def behind_tunnel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    """``serve --http --public-url https://PUBLIC`` in this process on the indexed sample,
    behind the tunnel; the owner's approval requests as ``serve`` announces them."""
    env = {"PLAUD_INDEX_HOME": str(tmp_path / "home"), "PLAUD_CLIENT": "mock",
           "PLAUD_EMBEDDER": "mock"}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    subprocess.run([sys.executable, "-m", "plaud_index", "indexer", "--once"], check=True,
                   capture_output=True, cwd=REPO, timeout=300)
    config = load_config()
    clock, site, asked = WorldClock(), ClientSite(), list[Pending]()
    monkeypatch.setattr(time, "time", clock.now)  # the client's clock (the SDK's expiry)
    port = two_free_ports()
    token_ = local_token(config.home)
    authority = RemoteAuthority(config.home, f"https://{PUBLIC}", asked.append, token_,
                                clock=clock.now,
                                documents=ClientDocuments(site.resolve, site.fetch))
    remote = Remote(f"https://{PUBLIC}", authority, port + 1)
    answers = answers_of(config)
    app = http_app(answers, Account(config, lambda: None), "127.0.0.1", port, token_, remote)
    servers = listeners(app, "127.0.0.1", port, remote)
    serving = threading.Thread(target=asyncio.run, daemon=True, args=(
        serve_apps(config.home, servers, remote, lambda: None),))
    serving.start()
    try:
        deadline = REAL_TIME() + 60
        while not (config.home / "http-server.json").exists():
            assert serving.is_alive() and REAL_TIME() < deadline
            time.sleep(0.05)
        with tunnel(port, PUBLIC) as entry:
            base = f"http://127.0.0.1:{entry}"
            yield {"clock": clock, "site": site, "asked": asked, "base": base,
                   "url": f"https://{PUBLIC}/mcp",
                   "through": lambda url: url.replace(f"https://{PUBLIC}", base),
                   "transport": lambda: ThroughTunnel(PUBLIC, base),
                   "approval": f"http://127.0.0.1:{port + 1}"}
    finally:
        for server in servers:
            server.should_exit = True
        serving.join(30)


def the_owner_approves(remote: dict[str, Any]) -> None:
    """The owner, at the machine: the newest request's approval page, one click."""
    approve_at_the_machine(f"{remote['approval']}/approve/{remote['asked'][-1].ident}")


@pytest.mark.parametrize("names_itself", ["by registering", "by its metadata document"])
def test_behind_a_tunnel_a_client_is_approved_refreshes_after_expiry_and_is_revoked(
        behind_tunnel: dict[str, Any], names_itself: str) -> None:
    remote, storage = behind_tunnel, Memory()
    by_document = names_itself == "by its metadata document"
    provider = oauth_client(remote["url"], storage, lambda: the_owner_approves(remote),
                            remote["through"], DOCUMENT_URL if by_document else None)
    tools, top = search(remote["url"], provider, remote["transport"]())
    assert top == "Q3 budget review" and "plaud_search" in tools
    assert len(remote["asked"]) == 1 and storage.tokens is not None
    client_id = storage.client.client_id
    if by_document:  # fetched once, from the address its name was checked to resolve to
        assert client_id == DOCUMENT_URL
        assert remote["site"].fetched == [(SITE_HOST, SITE_ADDRESS, 443, "/oauth/client.json")]
    first = storage.tokens
    mcp = {"url": f"{remote['base']}/mcp"}

    remote["clock"].ahead += ACCESS_S + 60  # the access token's lifetime has passed
    assert bearer(mcp, first.access_token) == 401
    tools, top = search(remote["url"], provider, remote["transport"]())
    assert top == "Q3 budget review"
    assert storage.tokens.access_token != first.access_token  # refreshed...
    assert storage.tokens.refresh_token != first.refresh_token  # (rotated)
    assert len(remote["asked"]) == 1  # ...without asking the owner again

    done = subprocess.run([sys.executable, "-m", "plaud_index", "serve", "--revoke",
                           client_id], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert done.returncode == 0, done.stderr
    assert bearer(mcp, storage.tokens.access_token) == 401
    status, _ = token(remote, grant_type="refresh_token", client_id=client_id,
                      refresh_token=storage.tokens.refresh_token)
    assert status in (400, 401)
    status, _, page = request(remote["through"](
        f"https://{PUBLIC}/authorize?response_type=code&client_id={client_id}"
        f"&redirect_uri={REDIRECT}&code_challenge={'c' * 43}&code_challenge_method=S256"))
    assert status == 400 and len(remote["asked"]) == 1  # asking again gets it nowhere
