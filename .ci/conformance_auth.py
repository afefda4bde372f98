"""The conformance suite's authorization-server scenarios against ``serve --http
--public-url`` (issue 49): the metadata endpoint, and the authorization code grant.

The suite's grant scenario prints an authorization URL for a person to open and waits for
its callback. Here a scripted browser opens it, and the owner approves on the loopback
page, as a person would at the machine: the browser lands on the waiting page, the owner
clicks Approve (the approval link ``serve`` printed), the waiting page sends the browser
on to the suite's callback with the code, and the suite exchanges it.

    python .ci/conformance_auth.py NODE SUITE

Exits 0 when every check passed; prints the suite's report.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent


def free_port(pair: bool = False) -> int:
    for _ in range(50):
        with socket.socket() as a:
            a.bind(("127.0.0.1", 0))
            port = int(a.getsockname()[1])
            if not pair:
                return port
            with socket.socket() as b:
                try:
                    b.bind(("127.0.0.1", port + 1))
                except OSError:
                    continue
                return port
    raise SystemExit("no free ports")


class Stay(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def get(url: str, form: dict[str, str] | None = None) -> tuple[int, dict[str, str], str]:
    data = urllib.parse.urlencode(form).encode() if form else None
    try:
        with urllib.request.build_opener(Stay).open(urllib.request.Request(url, data),
                                                    timeout=30) as answer:
            return answer.status, dict(answer.headers), answer.read().decode()
    except urllib.error.HTTPError as other:
        return other.code, dict(other.headers), other.read().decode()


def location(headers: dict[str, str]) -> str:
    return next((v for k, v in headers.items() if k.lower() == "location"), "")


def wait_for(pattern: str, path: Path, after: int = 0, seconds: float = 60) -> re.Match[str]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = re.search(pattern, path.read_text()[after:])
        if found:
            return found
        time.sleep(0.1)
    raise SystemExit(f"not seen in {path}: {pattern}\n{path.read_text()[-3000:]}")


def main() -> int:
    node, suite = sys.argv[1], sys.argv[2]
    work = Path(tempfile.mkdtemp(prefix="plaud-conformance-auth-"))
    port, callback = free_port(pair=True), free_port()
    base = f"http://127.0.0.1:{port}"
    env = {**os.environ, "PLAUD_INDEX_HOME": str(work / "home"), "PLAUD_CLIENT": "mock",
           "PLAUD_EMBEDDER": "mock"}
    serve_log, suite_log = work / "serve.log", work / "suite.log"
    with serve_log.open("w") as err:
        server = subprocess.Popen([sys.executable, "-m", "plaud_index", "serve", "--http",
                                   "--port", str(port), "--public-url", base], cwd=REPO,
                                  env=env, stderr=err, stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while not (work / "home" / "http-server.json").exists():
            if server.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(serve_log.read_text())
            time.sleep(0.1)
        request = urllib.request.Request(f"{base}/register", json.dumps({
            "client_name": "MCP conformance suite",
            "redirect_uris": [f"http://127.0.0.1:{callback}/callback"],
            "token_endpoint_auth_method": "none",
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"]}).encode(), {"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as answer:
            client_id = json.loads(answer.read())["client_id"]
        with suite_log.open("w") as out:
            run = subprocess.Popen([node, suite, "authorization", "--url", base,
                                    "--client-id", client_id, "--resource", f"{base}/mcp",
                                    "--port", str(callback)], stdout=out,
                                   stderr=subprocess.STDOUT)
        opened = wait_for(rf"({re.escape(base)}/authorize\?\S+)", suite_log).group(1)
        status, headers, _ = get(opened)  # the browser: to the waiting page
        assert status == 302 and "/consent/" in location(headers), (status, headers)
        waiting = location(headers)
        link = wait_for(r"on this machine: (\S+/approve/\S+) ", serve_log).group(1)
        status, _, page = get(link)  # the owner, at the machine
        nonce = re.search(r"name=nonce value=([\w-]+)", page)
        assert status == 200 and nonce is not None, page
        status, _, page = get(link, {"nonce": nonce.group(1), "decision": "approve"})
        assert status == 200 and "You approved" in page, page
        status, headers, _ = get(waiting)  # the browser again: on to the callback
        assert status == 302 and location(headers).startswith(
            f"http://127.0.0.1:{callback}/callback"), (status, headers)
        get(location(headers))
        code = run.wait(120)
    finally:
        server.terminate()
        server.wait(30)
    report = suite_log.read_text()
    print(report)
    total = re.search(r"Total: (\d+) passed, (\d+) failed", report)
    return 0 if code == 0 and total and int(total.group(1)) > 0 and total.group(2) == "0" \
        else 1


if __name__ == "__main__":
    sys.exit(main())
