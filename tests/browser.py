"""A real browser for the tests: Debian's headless Chromium, driven over the DevTools
protocol on a pipe (``--remote-debugging-pipe``: JSON messages ending in NUL on file
descriptors 3 and 4), so no driver and no package beyond the browser itself.

``.ci/setup`` installs ``chromium``; ``Browser.open`` fails with a message saying so where
it is missing.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from typing import Any

FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--remote-debugging-pipe", "about:blank")


class Browser:
    def __init__(self) -> None:
        binary = shutil.which("chromium") or shutil.which("chromium-browser")
        assert binary, "these tests need Chromium: bash .ci/setup installs Debian's chromium"
        self.profile = tempfile.mkdtemp(prefix="plaud-chromium-")
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()

        def fds() -> None:  # the pipe ends Chromium expects, as 3 and 4
            os.dup2(to_browser_r, 3)
            os.dup2(from_browser_w, 4)

        self.process = subprocess.Popen([binary, f"--user-data-dir={self.profile}", *FLAGS],
                                        # 3 and 4 stay open through the exec: the
                                        # pipe ends were put there just before it
                                        pass_fds=(to_browser_r, from_browser_w, 3, 4),
                                        preexec_fn=fds, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL)
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buffer = b""
        self._next = 0
        self.events: list[dict[str, Any]] = []
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target,
                                 flatten=True)["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable", session=True)

    def call(self, method: str, session: bool = False, **params: Any) -> dict[str, Any]:
        self._next += 1
        message: dict[str, Any] = {"id": self._next, "method": method, "params": params}
        if session:
            message["sessionId"] = self.session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        while True:
            answer = self._read()
            if answer.get("id") == self._next:
                assert "error" not in answer, answer
                return dict(answer.get("result", {}))
            self.events.append(answer)

    def _read(self) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            chunk = os.read(self._from_browser, 1 << 16)
            assert chunk, "Chromium closed the pipe"
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        return dict(json.loads(raw))

    def open(self, url: str) -> None:
        """Go to ``url`` and wait until it has loaded (what it then submits or frames is
        waited for with ``until``)."""
        self.call("Page.navigate", session=True, url=url)
        self.until(lambda: self.evaluate("document.readyState") == "complete")

    def until(self, done: Callable[[], bool], timeout_s: float = 60.0) -> None:
        """Let the pages run (a form they submit, a frame they load), collecting what they
        say, until ``done`` holds: never a fixed wait a busy machine could outrun."""
        deadline = time.monotonic() + timeout_s
        while not done():
            assert time.monotonic() < deadline, self.events[-5:]
            self.call("Runtime.evaluate", session=True, expression="1")
            time.sleep(0.05)

    def evaluate(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", session=True, expression=expression,
                           returnByValue=True, awaitPromise=True)
        return result.get("result", {}).get("value")

    def said(self) -> list[str]:
        """Every console and log message of the pages so far."""
        out = []
        for event in self.events:
            params = event.get("params", {})
            if event.get("method") == "Log.entryAdded":
                out.append(str(params.get("entry", {}).get("text", "")))
            elif event.get("method") == "Runtime.consoleAPICalled":
                out.append(" ".join(str(a.get("value", "")) for a in params.get("args", [])))
        return out

    def responses(self) -> list[tuple[str, int, dict[str, str]]]:
        return [(e["params"]["response"]["url"], e["params"]["response"]["status"],
                 e["params"]["response"].get("headers", {}))
                for e in self.events if e.get("method") == "Network.responseReceived"]

    def close(self) -> None:
        with contextlib.suppress(AssertionError, OSError):
            self.call("Browser.close")
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
        os.close(self._to_browser)
        os.close(self._from_browser)
        shutil.rmtree(self.profile, ignore_errors=True)
