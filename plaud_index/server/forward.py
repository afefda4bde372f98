"""A stdio entry that forwards to the machine's ``serve --http``: one server for every
client, and stdio where it does not run.

Every client's entry starts the stdio server. When a ``serve --http`` of the same home
runs (``<home>/http-server.json``, its pid alive, and whatever answers on its port proves
it holds this home's token: ``http_guard.proof`` over a fresh nonce), the stdio process
does not load a model or an index of its own: it relays each message from its client to
that server (streamable HTTP, with the local bearer token) and each answer back, in about
20 MB instead of 300. When none runs, the client gets the full stdio server, as before.

Standard library only, and nothing else of the package but the home's location and the
proof: this is the whole process while it forwards. Nothing is sent to a port (no token,
no question) before what answers there has proved it is the server of this home: another
program on a recorded port (the server gone, its pid reused) gets one request for a proof
it cannot give, and the client gets a server of its own.
"""

from __future__ import annotations

import contextlib
import hmac
import http.client
import json
import logging
import os
import secrets
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import IO, Any
from urllib.parse import urlparse

from ..config import default_home
from ..fsio import process_alive, read_state_file
from ..home import Home
from .http_guard import PROOF_PATH, proof

log = logging.getLogger(__name__)


def target(env: Mapping[str, str]) -> tuple[str, str] | None:
    """The running ``serve --http`` of this home (its URL and token), if it answers."""
    home = default_home(env)
    try:
        record = json.loads(read_state_file(Home(home).http_server))
        token = read_state_file(Home(home).http_token).strip()
        url = str(record["url"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    parsed = urlparse(url)
    if not process_alive(record.get("pid")) or parsed.hostname is None:
        return None
    return (url, token) if proves(parsed.hostname, parsed.port or 80, token) else None


def proves(host: str, port: int, token: str, timeout_s: float = 2.0) -> bool:
    """Does what answers on ``host:port`` prove it holds ``token``? One GET with a fresh
    nonce; neither the token nor anything of the client's goes out."""
    nonce = secrets.token_urlsafe(24)
    conn = http.client.HTTPConnection(host, port, timeout=timeout_s)
    try:
        conn.request("GET", f"{PROOF_PATH}?nonce={nonce}")
        response = conn.getresponse()
        answer = json.loads(response.read(4096)) if response.status == 200 else {}
    except (OSError, ValueError, http.client.HTTPException):
        return False
    finally:
        conn.close()
    given = answer.get("proof") if isinstance(answer, dict) else None
    if isinstance(given, str) and hmac.compare_digest(given, proof(token, nonce, port)):
        return True
    log.warning("Something on %s:%d answers where the shared server was recorded, but does "
                "not prove it is this home's server: serving this client alone", host, port)
    return False


def _events(response: http.client.HTTPResponse) -> Iterator[bytes]:
    """The JSON-RPC messages of an SSE stream (``data:`` lines of each event)."""
    data: list[bytes] = []
    for raw in response:
        line = raw.rstrip(b"\r\n")
        if not line:
            if data:
                yield b"\n".join(data)
            data = []
        elif line.startswith(b"data:"):
            data.append(line[5:].lstrip(b" "))
    if data:
        yield b"\n".join(data)


class Lost(Exception):
    """The shared server is gone, or no longer knows this session (it restarted)."""


class Relay:
    """One client's session on the shared server, kept through the server's restarts: the
    client's ``initialize`` and ``initialized`` are kept, and when the server stops
    answering or forgets the session, they are sent again to the server that proves itself
    now (``target``), or to a stdio server of this entry's own (``Alone``), and the message
    in flight goes there: the client never sees the change."""

    def __init__(self, url: str, token: str, out: IO[bytes],
                 env: Mapping[str, str] | None = None) -> None:
        self.env = env if env is not None else os.environ
        self.out = out
        self._write = threading.Lock()
        self._switch = threading.Lock()
        self.opening: list[bytes] = []  # initialize, then initialized: what a new one needs
        self.alone: Alone | None = None
        self._aim(url, token)

    def _aim(self, url: str, token: str) -> None:
        parsed = urlparse(url)
        self.host, self.port, self.path = parsed.hostname or "127.0.0.1", parsed.port or 80, \
            parsed.path or "/mcp"
        self.token = token
        self.session: str | None = None
        self.protocol: str | None = None

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Authorization": f"Bearer {self.token}",
                   "Accept": "application/json, text/event-stream"}
        if self.session:
            headers["Mcp-Session-Id"] = self.session
        if self.protocol:
            headers["MCP-Protocol-Version"] = self.protocol
        return headers

    def emit(self, message: bytes) -> None:
        with self._write:
            self.out.write(message + b"\n")
            self.out.flush()

    def post(self, line: bytes) -> None:
        """One message from the client: to the shared server, and whatever it answers
        (JSON, or an SSE stream of messages) back; through a restart or to a server of our
        own when the shared one is lost."""
        message = _parsed(line)
        opening = isinstance(message, dict) and message.get("method") in OPENING
        for _ in range(2):
            alone, seen = self.alone, (self.host, self.port, self.session)
            if alone is not None:
                alone.send(line)
                return
            try:
                self._send(line, message, self.emit)
                if opening:  # delivered: what a new server must be told again
                    self.opening.append(line)
                return
            except Lost as exc:
                self._recover(seen, exc)
        self._failed(message, OSError("the shared server was lost twice"))

    def _send(self, line: bytes, message: Any, deliver: Callable[[bytes], None]) -> None:
        conn = http.client.HTTPConnection(self.host, self.port, timeout=600)
        try:
            conn.request("POST", self.path, body=line, headers=self._headers())
            response = conn.getresponse()
            if response.status == 404 and self.session:
                raise Lost("the shared server no longer knows this session")
            self.session = response.getheader("Mcp-Session-Id") or self.session
            kind = response.getheader("Content-Type") or ""
            if response.status == 202:
                return
            if response.status >= 400 and "json" not in kind:
                raise Lost(f"HTTP {response.status}")
            for answer in _events(response) if "event-stream" in kind else [response.read()]:
                if answer.strip():
                    self._note_protocol(message, answer)
                    deliver(answer)
        except (OSError, http.client.HTTPException) as exc:
            raise Lost(str(exc)) from exc
        finally:
            conn.close()

    def _recover(self, seen: tuple[str, int, str | None], why: Lost) -> None:
        """Once for every thread that met the loss: the server that proves itself now
        gets the session opened again; without one, a server of our own."""
        with self._switch:
            if self.alone is not None or (self.host, self.port, self.session) != seen:
                return  # another thread recovered already
            log.warning("The shared server was lost (%s): finding it again", why)
            found = target(self.env)
            if found is not None and self._reopen(*found):
                log.info("Relaying to the shared server at %s again", found[0])
                return
            log.warning("No shared server answers: this client is served by a server of its "
                        "own from now on")
            self.alone = Alone(self.env, self.opening, self.emit)

    def _reopen(self, url: str, token: str) -> bool:
        """The client's opening, again, to the server at ``url`` (its answers kept from the
        client, which has had them)."""
        self._aim(url, token)
        try:
            for line in self.opening:
                self._send(line, _parsed(line), lambda answer: None)
        except Lost as exc:
            log.warning("The shared server at %s did not take the session again (%s)", url,
                        exc)
            return False
        return True

    def _note_protocol(self, sent: Any, answer: bytes) -> None:
        if isinstance(sent, dict) and sent.get("method") == "initialize":
            with contextlib.suppress(ValueError, KeyError, TypeError):
                self.protocol = json.loads(answer)["result"]["protocolVersion"]

    def _failed(self, sent: Any, exc: OSError) -> None:
        log.error("The shared HTTP server did not answer (%s)", exc)
        if isinstance(sent, dict) and "id" in sent and "method" in sent:
            self.emit(json.dumps({"jsonrpc": "2.0", "id": sent["id"], "error": {
                "code": -32603, "message": "The shared plaud-index-mcp server (serve --http) "
                "stopped answering: ask again"}}).encode())

    def close(self) -> None:
        if self.alone is not None:
            self.alone.close()
            return
        if not self.session:
            return
        conn = http.client.HTTPConnection(self.host, self.port, timeout=5)
        with contextlib.suppress(OSError, http.client.HTTPException):
            conn.request("DELETE", self.path, headers=self._headers())
            conn.getresponse().read()
        conn.close()


OPENING = ("initialize", "notifications/initialized")


def _parsed(line: bytes) -> Any:
    try:
        return json.loads(line)
    except ValueError:
        return None


class Alone:
    """A stdio server of this entry's own, taking over a session the shared server lost:
    it is opened with the client's own ``initialize`` (its answer kept from the client,
    which has had one), then every message goes to it and everything it says comes back."""

    def __init__(self, env: Mapping[str, str], opening: list[bytes],
                 emit: Callable[[bytes], None]) -> None:
        self.child = subprocess.Popen(
            [sys.executable, "-m", "plaud_index"], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, env={**env, "PLAUD_INDEX_NO_FORWARD": "1"})
        assert self.child.stdin is not None and self.child.stdout is not None
        self.stdin, self.stdout, self.emit = self.child.stdin, self.child.stdout, emit
        self._lock = threading.Lock()
        asked = [m.get("id") for m in map(_parsed, opening) if isinstance(m, dict) and "id" in m]
        for line in opening:
            self.send(line)
        threading.Thread(target=self._answers, args=(asked[0] if asked else None,),
                         daemon=True).start()

    def send(self, line: bytes) -> None:
        with self._lock, contextlib.suppress(OSError):
            self.stdin.write(line + b"\n")
            self.stdin.flush()

    def _answers(self, opening_id: Any) -> None:
        for raw in self.stdout:
            line = raw.rstrip(b"\r\n")
            if not line:
                continue
            answer = _parsed(line)
            if opening_id is not None and isinstance(answer, dict) and \
                    answer.get("id") == opening_id and "method" not in answer:
                opening_id = None  # the answer to the replayed initialize: not the client's
                continue
            self.emit(line)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.stdin.close()
        try:
            self.child.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.child.terminate()


def forward(url: str, token: str, stdin: IO[bytes] | None = None,
            stdout: IO[bytes] | None = None, env: Mapping[str, str] | None = None) -> int:
    """Relay until the client closes stdin. ``initialize`` goes first and alone (it opens
    the session); every later message on a thread of its own, so a long tool call never
    holds up a ping or a cancellation."""
    source = stdin or sys.stdin.buffer
    relay = Relay(url, token, stdout or sys.stdout.buffer, env)
    log.info("Forwarding this client to the shared server at %s", url)
    workers: list[threading.Thread] = []
    for line in source:
        if not line.strip():
            continue
        if relay.session is None and relay.alone is None:
            relay.post(line.rstrip(b"\r\n"))
            continue
        worker = threading.Thread(target=relay.post, args=(line.rstrip(b"\r\n"),),
                                  daemon=True)
        worker.start()
        workers = [w for w in workers if w.is_alive()] + [worker]
    for worker in workers:
        worker.join(timeout=2)
    relay.close()
    return 0


def forward_if_shared(env: Mapping[str, str] | None = None) -> int | None:
    """Forward when the shared server runs (the exit code), else ``None``."""
    if (env or os.environ).get("PLAUD_INDEX_NO_FORWARD"):
        return None
    found = target(env or os.environ)
    return forward(*found, env=env) if found else None
