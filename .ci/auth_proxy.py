"""A test's stand-in for a client that knows the server's token: a loopback proxy that adds
``Authorization: Bearer <token>`` to every request and passes everything else through,
streams included. The MCP conformance suite has no option for headers; through this
proxy it tests ``serve --http`` as it runs, guards on.

Host and Origin naming this proxy are rewritten to name the server (they are the same
machine); any other Host or Origin (the suite's DNS-rebinding scenario) reaches the
server untouched, so its guard is what answers.

    python .ci/auth_proxy.py LISTEN_PORT http://127.0.0.1:SERVER_PORT TOKEN_FILE
"""

from __future__ import annotations

import http.client
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlparse

HOP = {"connection", "keep-alive", "transfer-encoding", "te", "upgrade", "proxy-connection",
       "content-length"}


def handler(listen: int, target: str, token: str) -> type[BaseHTTPRequestHandler]:
    upstream = urlparse(target)
    ours = {f"{name}:{listen}" for name in ("localhost", "127.0.0.1", "[::1]")}

    class Forward(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _forward(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else None
            headers = {}
            for key, value in self.headers.items():
                low = key.lower()
                if low in HOP or low == "authorization":
                    continue
                if low == "host" and value in ours:
                    value = upstream.netloc
                if low == "origin" and value.split("://", 1)[-1] in ours:
                    value = f"http://{upstream.netloc}"
                headers[key] = value
            headers["Authorization"] = f"Bearer {token}"
            conn = http.client.HTTPConnection(upstream.hostname, upstream.port, timeout=300)
            conn.request(self.command, self.path, body=body, headers=headers)
            answer = conn.getresponse()
            self.send_response(answer.status)
            for key, value in answer.getheaders():
                if key.lower() not in HOP:
                    self.send_header(key, value)
            self.send_header("Connection", "close")  # the body runs until the end
            self.end_headers()
            while chunk := answer.read1(65536):
                self.wfile.write(chunk)
                self.wfile.flush()
            conn.close()
            self.close_connection = True

        do_GET = do_POST = do_DELETE = do_PUT = do_OPTIONS = _forward

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            pass

    return Forward


def main() -> None:
    listen, target, token_file = int(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
    token = token_file.read_text().strip()
    server = ThreadingHTTPServer(("127.0.0.1", listen), handler(listen, target, token))
    server.daemon_threads = True
    server.serve_forever()


if __name__ == "__main__":
    main()
