"""A tunnel's local end, as cloudflared, ngrok and Tailscale Funnel are by default: every
request reaches the server from loopback with the public Host it was sent to, and
X-Forwarded-For / X-Forwarded-Proto saying who sent it and how; answers stream back as
they come (an event stream stays open). (TLS ends at the tunnel's edge; what the server
sees is exactly this.)"""

from __future__ import annotations

import http.client
import threading
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx2 as httpx

PUBLIC = "plaud.example.ts.net"  # a tunnel's public name: cloudflared, ngrok or Funnel
HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade",
       "proxy-authorization", "proxy-authenticate", "host"}


def handler(backend_port: int, public_host: str) -> type[BaseHTTPRequestHandler]:
    class Forward(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _forward(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP}
            headers["Host"] = public_host
            headers["X-Forwarded-For"] = self.headers.get("X-Test-Client-Ip", "203.0.113.7")
            headers["X-Forwarded-Proto"] = "https"
            upstream = http.client.HTTPConnection("127.0.0.1", backend_port, timeout=60)
            try:
                upstream.request(self.command, self.path, body=body or None, headers=headers)
                answer = upstream.getresponse()
                self.send_response(answer.status)
                for key, value in answer.getheaders():
                    if key.lower() not in HOP and key.lower() != "content-length":
                        self.send_header(key, value)
                length = answer.getheader("Content-Length")
                if length is not None:  # a whole answer
                    data = answer.read()
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                self.send_header("Transfer-Encoding", "chunked")  # a stream, as it comes
                self.end_headers()
                while chunk := answer.read1(65536):
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
            except (OSError, http.client.HTTPException):
                self.close_connection = True
            finally:
                upstream.close()

        do_GET = do_POST = do_DELETE = _forward

        def log_message(self, *args: object) -> None:
            pass

    return Forward


@contextmanager
def tunnel(backend_port: int, public_host: str) -> Iterator[int]:
    """A tunnel to ``backend_port`` that presents ``public_host``; yields its own port."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler(backend_port, public_host))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield int(server.server_address[1])
    finally:
        server.shutdown()
        server.server_close()


class ThroughTunnel(httpx.AsyncBaseTransport):
    """A remote client's network: what it sends to the public https address arrives at the
    tunnel's local end (TLS ends at the tunnel's edge)."""

    def __init__(self, public_host: str, entry: str) -> None:
        self.public_host, self.entry = public_host, urllib.parse.urlparse(entry)
        self.inner = httpx.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.host == self.public_host:
            request.url = request.url.copy_with(scheme="http", host=self.entry.hostname,
                                                port=self.entry.port)
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()
