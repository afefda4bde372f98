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
import sys
import threading
from collections.abc import Iterator, Mapping
from typing import IO, Any
from urllib.parse import urlparse

from ..config import default_home
from ..fsio import read_state_file
from ..procs import process_alive
from .http_guard import PROOF_PATH, TOKEN_FILE, proof

RUNNING = "http-server.json"  # (``http.RUNNING``: that module loads the whole server)

log = logging.getLogger(__name__)


def target(env: Mapping[str, str]) -> tuple[str, str] | None:
    """The running ``serve --http`` of this home (its URL and token), if it answers."""
    home = default_home(env)
    try:
        record = json.loads(read_state_file(home / RUNNING))
        token = read_state_file(home / TOKEN_FILE).strip()
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


class Relay:
    def __init__(self, url: str, token: str, out: IO[bytes]) -> None:
        parsed = urlparse(url)
        self.host, self.port, self.path = parsed.hostname or "127.0.0.1", parsed.port or 80, \
            parsed.path or "/mcp"
        self.token, self.out = token, out
        self.session: str | None = None
        self.protocol: str | None = None
        self._write = threading.Lock()

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
        """One message to the server; whatever it answers (JSON, or an SSE stream of
        messages: requests of its own, notifications, the response) back to the client."""
        try:
            message = json.loads(line)
        except ValueError:
            message = None
        conn = http.client.HTTPConnection(self.host, self.port, timeout=600)
        try:
            conn.request("POST", self.path, body=line, headers=self._headers())
            response = conn.getresponse()
            self.session = response.getheader("Mcp-Session-Id") or self.session
            kind = response.getheader("Content-Type") or ""
            if response.status == 202:
                return
            if response.status >= 400 and "json" not in kind:
                raise OSError(f"HTTP {response.status}")
            for answer in _events(response) if "event-stream" in kind else [response.read()]:
                if answer.strip():
                    self._note_protocol(message, answer)
                    self.emit(answer)
        except OSError as exc:
            self._failed(message, exc)
        finally:
            conn.close()

    def _note_protocol(self, sent: Any, answer: bytes) -> None:
        if isinstance(sent, dict) and sent.get("method") == "initialize":
            with contextlib.suppress(ValueError, KeyError, TypeError):
                self.protocol = json.loads(answer)["result"]["protocolVersion"]

    def _failed(self, sent: Any, exc: OSError) -> None:
        log.error("The shared HTTP server did not answer (%s)", exc)
        if isinstance(sent, dict) and "id" in sent and "method" in sent:
            self.emit(json.dumps({"jsonrpc": "2.0", "id": sent["id"], "error": {
                "code": -32603, "message": "The shared plaud-index-mcp server (serve --http) "
                "stopped answering: restart this client to get a server of its own"}}).encode())

    def close(self) -> None:
        if not self.session:
            return
        conn = http.client.HTTPConnection(self.host, self.port, timeout=5)
        with contextlib.suppress(OSError):
            conn.request("DELETE", self.path, headers=self._headers())
            conn.getresponse().read()
        conn.close()


def forward(url: str, token: str, stdin: IO[bytes] | None = None,
            stdout: IO[bytes] | None = None) -> int:
    """Relay until the client closes stdin. ``initialize`` goes first and alone (it opens
    the session); every later message on a thread of its own, so a long tool call never
    holds up a ping or a cancellation."""
    source = stdin or sys.stdin.buffer
    relay = Relay(url, token, stdout or sys.stdout.buffer)
    log.info("Forwarding this client to the shared server at %s", url)
    workers: list[threading.Thread] = []
    for line in source:
        if not line.strip():
            continue
        if relay.session is None:
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
    return forward(*found) if found else None
