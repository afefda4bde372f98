"""A remote client's side, for the remote-mode tests: the SDK's own OAuth client as a remote
app runs it (its token storage, the browser it sends to the consent page, a session that
searches), and the bare requests a hand-written client or an attacker sends.
``through`` maps a public URL to where the test's browser reaches it, ``transport`` carries
the client's own requests there (a tunnel's two sides); ``owner`` is the owner approving
at the machine while the browser waits."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import Any

import anyio
import httpx2 as httpx
from mcp import ClientSession
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata, OAuthToken

REDIRECT = "http://127.0.0.1:9/callback"


class Memory:
    """Where the client keeps its registration and tokens (a real app: its keychain)."""
    tokens: OAuthToken | None = None
    client: Any = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> Any:
        return self.client

    async def set_client_info(self, info: Any) -> None:
        self.client = info


def oauth_client(url: str, storage: Memory, owner: Callable[[], None],
                 through: Callable[[str], str] = lambda u: u,
                 metadata_url: str | None = None) -> OAuthClientProvider:
    """The provider, its browser checked on the way: the consent page grants nothing by
    being reached, and sends the browser on with a code only once ``owner`` approved.
    With ``metadata_url`` the client names itself by its metadata document (CIMD)."""
    seen: dict[str, str] = {}

    async def browser_opens(authorize: str) -> None:
        status, headers, _ = await anyio.to_thread.run_sync(request, through(authorize))
        assert status == 302 and "/consent/" in headers["location"], (status, headers)
        seen["consent"] = headers["location"]

    async def browser_returns() -> AuthorizationCodeResult:
        consent = through(seen["consent"])
        status, _, page = await anyio.to_thread.run_sync(request, consent)
        assert status == 200 and "waits for the owner" in page
        assert storage.tokens is None
        await anyio.to_thread.run_sync(owner)
        status, headers, _ = await anyio.to_thread.run_sync(request, consent)
        assert status == 302 and headers["location"].startswith(REDIRECT)
        query = urllib.parse.parse_qs(urllib.parse.urlparse(headers["location"]).query)
        return AuthorizationCodeResult(code=query["code"][0], state=query["state"][0])

    return OAuthClientProvider(
        server_url=url, storage=storage, redirect_handler=browser_opens,
        callback_handler=browser_returns, client_metadata_url=metadata_url,
        client_metadata=OAuthClientMetadata(client_name="Remote test client",
                                            redirect_uris=[REDIRECT],
                                            grant_types=["authorization_code",
                                                         "refresh_token"],
                                            response_types=["code"],
                                            token_endpoint_auth_method="none"))


def search(url: str, provider: OAuthClientProvider,
           transport: httpx.AsyncBaseTransport | None = None) -> tuple[list[str], str]:
    """One session: initialise, list the tools, search; the tools and the top title."""
    async def session() -> tuple[list[str], str]:
        client = create_mcp_http_client(auth=provider) if transport is None else \
            httpx.AsyncClient(auth=provider, transport=transport, follow_redirects=True,
                              timeout=httpx.Timeout(30, read=300))
        async with client as http, \
                streamable_http_client(url, http_client=http) as streams, \
                ClientSession(streams[0], streams[1]) as mcp:
            await mcp.initialize()
            tools = sorted(t.name for t in (await mcp.list_tools()).tools)
            found = await mcp.call_tool("plaud_search", {"query": "Q3 budget decision"})
            assert not found.is_error, found.content
            return tools, found.structured_content["results"][0]["title"]

    return anyio.run(session)


def request(url: str, data: dict[str, str] | bytes | None = None,
            headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], str]:
    """One request, redirects not followed (a browser's first hop)."""
    class Stay(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: Any, **kwargs: Any) -> None:
            return None

    body = urllib.parse.urlencode(data).encode() if isinstance(data, dict) else data
    req = urllib.request.Request(url, data=body, headers=headers or {})
    try:
        with urllib.request.build_opener(Stay).open(req, timeout=30) as answer:
            return answer.status, dict(answer.headers), answer.read().decode()
    except urllib.error.HTTPError as other:
        return other.code, dict(other.headers), other.read().decode()


def approve_at_the_machine(link: str) -> None:
    status, _, page = request(link)
    assert status == 200 and "Approve" in page
    nonce = re.search(r"name=nonce value=([\w-]+)", page)
    assert nonce is not None
    assert request(link, {"nonce": "forged", "decision": "approve"})[0] == 403
    status, _, page = request(link, {"nonce": nonce.group(1), "decision": "approve"})
    assert status == 200 and "You approved" in page


def bearer(remote: dict[str, Any], token: str) -> int:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}}).encode()
    return request(remote["url"], body, {"Authorization": f"Bearer {token}",
                                         "Content-Type": "application/json",
                                         "Accept": "application/json, text/event-stream"})[0]


def token(remote: dict[str, Any], **form: str) -> tuple[int, dict[str, Any]]:
    status, _, body = request(f"{remote['base']}/token", form,
                              {"Content-Type": "application/x-www-form-urlencoded"})
    return status, json.loads(body)


def two_free_ports() -> int:
    import socket

    for _ in range(50):
        with socket.socket() as a:
            a.bind(("127.0.0.1", 0))
            port = a.getsockname()[1]
            with socket.socket() as b:
                try:
                    b.bind(("127.0.0.1", port + 1))
                except OSError:
                    continue
                return int(port)
    raise RuntimeError("no two free ports in a row")
