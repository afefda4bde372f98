"""What every request to ``serve --http`` passes before it reaches MCP: its ``Origin`` and
``Host`` (DNS rebinding: a web page in the person's browser must not reach a loopback
server), its bearer token, and a rate limit on the endpoints a stranger can hammer.

- ``Origin`` present and not one of ours: 403. ``Host`` not one of ours: 421 (the SDK
  answers the same; checked here first so nothing else runs for such a request).
- ``/mcp`` without a token this server accepts: 401 with ``WWW-Authenticate: Bearer``
  (``resource_metadata`` too when the remote authorization is on, so an OAuth client
  finds the authorization server). Tokens are compared in constant time and never logged.
- Throttles a stranger cannot turn against the owner (behind a tunnel every request comes
  from loopback: the sender is the address the tunnel appended to X-Forwarded-For):
  registrations and authorization requests, a few a minute per sender and a budget for
  everyone together; refused tokens at ``/mcp``, a few a minute per sender (a good token
  always passes). ``/token`` and the one-time code are not throttled by address at all:
  a code, refresh token or authorization code is 256 random bits, and the one-time code
  has budgets of its own (``remote_auth``), so nobody's failures slow the owner's clients
  or the owner's code.
- ``GET /plaud-index/proof?nonce=N``: the server proves it is this home's (``proof``: a MAC
  of the nonce and its port under the local token), so a stdio entry never sends its token
  or a question to another program that holds the port (``forward``).

The local token lives in ``<home>/http-token`` (0600): ``config`` and ``install`` write it
into the entries of clients that speak HTTP.
"""

from __future__ import annotations

import hmac
import json
import logging
import secrets
import time
from collections import defaultdict, deque
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

from ..fsio import own_secret
from ..home import Home

log = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


def local_token(home: Path) -> str:
    """The bearer token local clients use, made once (0600, never through a link); a
    damaged one is replaced (clients' entries are written again by ``install``)."""
    token = own_secret(Home(home).http_token, lambda: secrets.token_urlsafe(32).encode(),
                       lambda held: len(held.decode("ascii", "replace").strip()) >= 32)
    return token.decode("ascii", "replace").strip()


PROOF_PATH = "/plaud-index/proof"
METADATA_PATH = "/.well-known/oauth-authorization-server"
_NONCE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


def proof(token: str, nonce: str, port: int) -> str:
    """What only a holder of ``token`` can say to ``nonce`` on ``port``."""
    return hmac.new(token.encode(), f"plaud-index-proof\0{port}\0{nonce}".encode(),
                    "sha256").hexdigest()


def fair_nonce(nonce: str) -> bool:
    return 16 <= len(nonce) <= 128 and set(nonce) <= _NONCE


def same(given: str, expected: str) -> bool:
    return hmac.compare_digest(given.encode("utf-8", "replace"),
                               expected.encode("utf-8", "replace"))


class RateLimit:
    """At most ``burst`` events per key (a sender, or everyone) in ``window_s`` seconds;
    at most ``keys`` keys are remembered (the oldest forgotten first), so a flood of
    senders cannot grow it without bound."""

    def __init__(self, burst: int = 10, window_s: float = 60.0,
                 clock: Callable[[], float] = time.monotonic, keys: int = 10_000) -> None:
        self.burst, self.window_s, self.clock, self.keys = burst, window_s, clock, keys
        self._seen: dict[str, deque[float]] = defaultdict(deque)

    def allow(self, who: str) -> bool:
        if who not in self._seen and len(self._seen) >= self.keys:
            del self._seen[next(iter(self._seen))]
        now, seen = self.clock(), self._seen[who]
        while seen and now - seen[0] > self.window_s:
            seen.popleft()
        if len(seen) >= self.burst:
            return False
        seen.append(now)
        return True


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return bytes(value).decode("latin-1")
    return None


def _query(scope: Scope) -> dict[str, str]:
    raw = scope.get("query_string", b"").decode("latin-1")
    return {k: v for k, v in parse_qsl(raw, keep_blank_values=True)}


async def _refuse(send: Send, status: int, message: str,
                  headers: Iterable[tuple[bytes, bytes]] = ()) -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": None,
                       "error": {"code": -32001, "message": message}}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode()), *headers]})
    await send({"type": "http.response.body", "body": body})


ASKING = ("/authorize", "/register")  # what a stranger can ask for without any secret
EVERYONE = "*"  # the key of the budget all senders share
EVERYONE_BURST = 60  # asks a minute from all senders together


def sender(scope: Scope, behind_tunnel: bool) -> str:
    """Who sent a request: the peer address, or behind a tunnel (a loopback peer with
    X-Forwarded-For) the address the tunnel appended, the last one (the ones before it
    are whatever the sender wrote)."""
    peer = str((scope.get("client") or ("?", 0))[0])
    forwarded = _header(scope, b"x-forwarded-for") if behind_tunnel else None
    if forwarded and peer in ("127.0.0.1", "::1"):
        return forwarded.split(",")[-1].strip()[:64] or peer
    return peer


class Guard:
    """The ASGI middleware in front of the SDK's app."""

    def __init__(self, app: App, *, hosts: set[str], origins: set[str],
                 verify: Callable[[str], Awaitable[bool]], resource_metadata: str | None = None,
                 limit: RateLimit | None = None,
                 prove: Callable[[str, int], str] | None = None,
                 may_redirect: Callable[[str, str], bool] | None = None,
                 behind_tunnel: bool = False,
                 metadata: Callable[[dict[str, Any]], dict[str, Any]] | None = None) -> None:
        self.app, self.hosts, self.origins = app, hosts, origins
        self.behind_tunnel = behind_tunnel  # --public-url: the sender is the tunnel's word
        self.metadata = metadata  # what this server adds to the SDK's authorization metadata
        self.everyone = RateLimit(EVERYONE_BURST, clock=self.limit_clock(limit))
        self.verify = verify
        # (client id, location) → may /authorize send the browser there (remote mode)
        self.may_redirect = may_redirect
        self.prove = prove  # (nonce, port) → the proof, where this server gives one
        self.resource_metadata = resource_metadata
        self.limit = limit or RateLimit()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        origin, host = _header(scope, b"origin"), _header(scope, b"host")
        if origin is not None and origin not in self.origins:
            log.warning("Refused a request from the web origin %r (not this server's)",
                        origin[:100])
            await _refuse(send, 403, "Forbidden: this origin may not use this server")
            return
        if host is None or host not in self.hosts:
            await _refuse(send, 421, "Misdirected request: unknown Host")
            return
        who = sender(scope, self.behind_tunnel)
        path = scope.get("path", "")
        if path == PROOF_PATH and self.prove is not None:
            await self._prove(scope, send)
            return
        if path.startswith(ASKING) and not self._may_ask(who, path.split("/")[1]):
            await _refuse(send, 429, "Too many requests: wait a minute",
                          [(b"retry-after", b"60")])
            return
        if path.rstrip("/") == "/mcp" and not await self._authorised(scope, who, send):
            return
        if path == "/authorize" and self.may_redirect is not None:
            send = self._redirects_checked(send, _query(scope).get("client_id", ""))
        if path == METADATA_PATH and self.metadata is not None:
            send = self._metadata_added(send)
        await self.app(scope, receive, send)

    def _metadata_added(self, send: Send) -> Send:
        """``send`` for the authorization server's metadata: the JSON the SDK makes, with
        what this server adds (``metadata``): the SDK has no setting for it."""
        assert self.metadata is not None
        change, start, body = self.metadata, [], []

        async def added(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start":
                start.append(message)
                return
            body.append(message.get("body", b""))
            if message.get("more_body"):
                return
            data = b"".join(body)
            head = start[0]
            if head["status"] == 200:
                data = json.dumps(change(json.loads(data))).encode()
            head["headers"] = [(k, v) for k, v in head.get("headers", [])
                               if k.lower() != b"content-length"] + \
                [(b"content-length", str(len(data)).encode())]
            await send(head)
            await send({"type": "http.response.body", "body": data})
        return added

    @staticmethod
    def limit_clock(limit: RateLimit | None) -> Callable[[], float]:
        return limit.clock if limit is not None else time.monotonic

    def _may_ask(self, who: str, what: str) -> bool:
        """A registration or an authorization request: within the sender's few a minute,
        and within everyone's budget (which a sender's own limit keeps others' share of)."""
        return self.limit.allow(f"{who} {what}") and self.everyone.allow(f"{EVERYONE} {what}")

    def _redirects_checked(self, send: Send, client_id: str) -> Send:
        """``send`` for an authorization request: a redirect it answers with goes through
        only where ``may_redirect`` allows (our waiting page, or a client the owner
        approved); otherwise a 400 of our own instead, so a stranger's registration never
        makes this host a redirector to its address (the SDK sends some errors there)."""
        assert self.may_redirect is not None
        allowed = self.may_redirect
        held = False

        async def checked(message: MutableMapping[str, Any]) -> None:
            nonlocal held
            if message["type"] == "http.response.start" and 300 <= message["status"] < 400:
                location = next((v.decode("latin-1") for k, v in message.get("headers", [])
                                 if k.lower() == b"location"), "")
                if not allowed(client_id, location):
                    held = True
                    await _refuse(send, 400, "This client is not approved by the owner of "
                                  "this server, so it is sent nowhere: start again from the "
                                  "app that asked")
                    return
            if held:
                return
            await send(message)
        return checked

    async def _prove(self, scope: Scope, send: Send) -> None:
        assert self.prove is not None
        nonce = _query(scope).get("nonce", "")
        port = int((scope.get("server") or ("", 0))[1] or 0)
        if scope.get("method") != "GET" or not fair_nonce(nonce):
            await _refuse(send, 400, "Bad request: GET with a nonce of 16-128 URL-safe "
                          "characters")
            return
        body = json.dumps({"proof": self.prove(nonce, port)}).encode()
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/json"),
                                (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})

    async def _authorised(self, scope: Scope, who: str, send: Send) -> bool:
        """A good token always passes (behind a tunnel every request comes from loopback:
        a stranger's wrong tokens must not lock the owner's clients out); wrong ones past
        the limit get 429 instead of 401."""
        given = _header(scope, b"authorization") or ""
        scheme, _, token = given.partition(" ")
        if scheme.lower() == "bearer" and token.strip() and await self.verify(token.strip()):
            return True
        if not self.limit.allow(f"{who} refused"):
            await _refuse(send, 429, "Too many refused tokens: wait a minute",
                          [(b"retry-after", b"60")])
            return False
        challenge = 'Bearer realm="plaud-index-mcp"'
        if token:
            challenge += ', error="invalid_token"'
        if self.resource_metadata:
            challenge += f', resource_metadata="{self.resource_metadata}"'
        await _refuse(send, 401, "Unauthorized: send the bearer token of this server "
                      "(plaud-index-mcp config <client> --http writes it)",
                      [(b"www-authenticate", challenge.encode())])
        return False
