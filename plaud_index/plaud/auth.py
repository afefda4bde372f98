"""Sign-in: OAuth 2.0 authorization code + PKCE S256, public client.

Pure helpers make the verifier, challenge, state and authorize URL. ``login``
runs a loopback ``http.server`` for the callback (no access log: the code must
never reach stderr), exchanges the code once, stores the tokens and asks
``users/current`` who signed in; ``BrowserSignIn`` is the same flow in steps, for a
sign-in started from an MCP client. Keeping the tokens fresh is ``refresh``'s job.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import html
import logging
import secrets
import socket
import threading
import time
import webbrowser
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlparse

from ..cleaning import clean_line
from ..errors import LoginError, PlaudIndexError
from ..redact import remember
from .settings import LOGIN_TIMEOUT_S, PlaudSettings, check_callback
from .tokens import Tokens, TokenStore
from .transport import Transport

log = logging.getLogger(__name__)

EXCHANGE_WAIT_S = 60.0  # how long the browser's request waits for the code exchange
CONNECTION_TIMEOUT_S = 10.0  # an idle connection to the listener is dropped after this


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def make_verifier() -> str:
    return b64url(secrets.token_bytes(32))  # 43 characters, RFC 7636


def challenge_for(verifier: str) -> str:
    return b64url(hashlib.sha256(verifier.encode("ascii")).digest())


def make_state() -> str:
    return b64url(secrets.token_bytes(16))


def authorize_url(settings: PlaudSettings, challenge: str, state: str) -> str:
    query = urlencode({"client_id": settings.client_id, "redirect_uri": settings.callback_url,
                       "response_type": "code", "code_challenge": challenge,
                       "code_challenge_method": "S256", "state": state})
    return f"{settings.auth_url}?{query}"  # no scope: Plaud's clients never send one


class _Callback:
    """What the loopback listener has seen: the first good code, or why it failed."""

    def __init__(self, state: str, path: str) -> None:
        self.state, self.path = state, path
        self.code: str | None = None
        self.error: str | None = None
        self.ignored = 0  # callbacks with a wrong or missing state (never exchanged)
        self.done = threading.Event()
        self.finished = threading.Event()  # the code exchange is over, one way or the other
        self.failure: str | None = None

    def finish(self, failure: str | None = None) -> None:
        """The exchange is over: the browser page may now say how it went."""
        self.failure = failure
        self.finished.set()

    def handle(self, url: str) -> tuple[int, str]:
        parsed = urlparse(url)
        if parsed.path != self.path:
            return 404, "Not found."
        params = {k: v[0] for k, v in parse_qs(parsed.query).items()}
        # bytes: a state that is not ASCII (%C3%A9, %ff) is just another wrong state
        sent = params.get("state", "").encode("utf-8", "surrogateescape")
        if not hmac.compare_digest(sent, self.state.encode()):
            self.ignored += 1
            return 200, "This sign-in link is not the one plaud-index-mcp is waiting for."
        if "error" in params:
            if not self.done.is_set():
                # the text is the callback's, not Plaud's: one clean line, bounded
                self.error = clean_line(params.get("error_description") or params["error"],
                                        300) or "no reason given"
                self.done.set()
            return 400, "Sign-in was cancelled. You can close this tab."
        if not params.get("code"):
            return 200, "No authorization code in this callback."
        if not self.done.is_set():  # one exchange per login, whatever the browser replays
            self.code = params["code"]
            remember(self.code)
            self.done.set()
        # The page says "signed in" only once the tokens are really ours.
        if not self.finished.wait(EXCHANGE_WAIT_S):
            return 504, "Still signing in; check the terminal."
        if self.failure:
            return 502, f"Sign-in failed: {html.escape(self.failure)} Check the terminal."
        return 200, "Signed in to Plaud. You can close this tab."


def _handler(callback: _Callback) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        timeout = CONNECTION_TIMEOUT_S  # an idle or half-open connection never holds us

        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            status, text = callback.handle(self.path)
            body = f"<!doctype html><title>plaud-index-mcp</title><p>{text}</p>".encode()
            self.send_response(status)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            pass  # the request line holds the authorization code

    return Handler


class _Listener(ThreadingHTTPServer):
    """One thread per connection: a browser's idle pre-connection (or anything else
    that connects and says nothing) cannot block the real callback. The accept queue
    holds a browser's retries and pre-connections beside whatever else connects (the
    default of 5 dropped the callback behind a burst)."""

    daemon_threads = True
    request_queue_size = 128


class _ListenerV6(_Listener):
    address_family = socket.AF_INET6


def exchange_code(settings: PlaudSettings, transport: Transport, code: str, verifier: str,
                  state: str, now_ms: int) -> Tokens:
    basic = base64.b64encode(f"{settings.client_id}:".encode()).decode()
    body = urlencode({"code": code, "redirect_uri": settings.callback_url,
                      "code_verifier": verifier, "state": state}).encode()
    response = transport.request("POST", settings.token_url, data=body, retry=False, headers={
        "Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json",
        "Authorization": f"Basic {basic}"})
    if response.status != 200:
        raise LoginError(f"Plaud refused the sign-in code (HTTP {response.status}). Run "
                         "`plaud-index-mcp login` again; codes expire after about 2 minutes.")
    return Tokens.from_response(response.json(), now_ms)


class BrowserSignIn:
    """One sign-in waiting for the browser: the loopback listener bound and the URL to
    open made by ``start``; when the browser comes back, the code is exchanged once and the
    tokens stored on a thread of its own (``on_done`` then hears who is signed in, or
    nothing on a failure). ``wait`` blocks for it (the CLI); a server leaves it running and
    answers meanwhile. The listener closes when it is done or ``timeout`` passed."""

    def __init__(self, settings: PlaudSettings, store: TokenStore, transport: Transport, *,
                 timeout: float = LOGIN_TIMEOUT_S, clock: Callable[[], float] = time.time,
                 on_done: Callable[[Tokens], object] | None = None) -> None:
        if not timeout > 0:  # 0 or less (or NaN) would wait forever or not at all
            raise LoginError(f"The login timeout must be a positive number of seconds, not "
                             f"{timeout:g}: leave --timeout out for {LOGIN_TIMEOUT_S:.0f}s")
        check_callback(settings.callback_url)
        self.settings, self.store, self.transport = settings, store, transport
        self.timeout, self.clock, self.on_done = timeout, clock, on_done
        self._verifier, self._state = make_verifier(), make_state()
        remember(self._verifier)
        self.url = authorize_url(settings, challenge_for(self._verifier), self._state)
        self.expires_at = clock() + timeout
        self._callback = _Callback(self._state, urlparse(settings.callback_url).path or "/")
        self._server: ThreadingHTTPServer | None = None
        self.ended = threading.Event()
        self.tokens: Tokens | None = None
        self.failure: LoginError | PlaudIndexError | None = None

    def start(self) -> str:
        """Bind the listener (``LoginError`` when the port is taken) and wait on a thread."""
        self._server = bind_listener(self.settings, self._callback)
        threading.Thread(target=self._server.serve_forever, name="oauth-callback",
                         daemon=True).start()
        threading.Thread(target=self._complete, name="oauth-exchange", daemon=True).start()
        return self.url

    def _complete(self) -> None:
        try:
            self.tokens = self._exchange()
        except (LoginError, PlaudIndexError) as exc:
            self.failure = exc
        except Exception as exc:  # a bug: said on the page and raised by wait()
            self._callback.finish(type(exc).__name__)
            self.failure = LoginError(f"The sign-in failed ({type(exc).__name__})")
        finally:
            self.close()
            self.ended.set()
        if self.tokens is not None and self.on_done is not None:
            self.on_done(self.tokens)

    def _exchange(self) -> Tokens:
        callback = self._callback
        if not callback.done.wait(self.timeout):
            ignored = f" ({callback.ignored} callback(s) with a wrong state were ignored)" \
                if callback.ignored else ""
            raise LoginError(f"No sign-in arrived within {self.timeout:.0f}s{ignored}. Sign in "
                             "again (over SSH: ssh -L 8199:localhost:8199 first).")
        if callback.error:
            raise LoginError(f"Plaud sign-in was denied: {callback.error}")
        assert callback.code is not None
        try:
            tokens = exchange_code(self.settings, self.transport, callback.code,
                                   self._verifier, self._state, int(self.clock() * 1000))
            self.store.save(tokens)
        except PlaudIndexError as exc:
            callback.finish(str(exc))
            raise
        callback.finish()
        return tokens

    def wait(self) -> Tokens:
        self.ended.wait()
        if self.failure is not None:
            raise self.failure
        assert self.tokens is not None
        return self.tokens

    @property
    def waiting(self) -> bool:
        return not self.ended.is_set()

    def close(self) -> None:
        if self._server is not None:
            server, self._server = self._server, None
            server.shutdown()
            server.server_close()


def bind_listener(settings: PlaudSettings, callback: _Callback) -> ThreadingHTTPServer:
    url = urlparse(settings.callback_url)
    ipv6 = (url.hostname or "") == "::1"
    server_class = _ListenerV6 if ipv6 else _Listener
    try:
        return server_class(("::1" if ipv6 else "127.0.0.1", url.port or 80),
                            _handler(callback))
    except OSError as exc:
        raise LoginError(f"Port {url.port} is busy ({exc.strerror}): another Plaud login may "
                         "still be running (plaud login, @plaud-ai/mcp). Close it and retry.") \
            from None


def login(settings: PlaudSettings, store: TokenStore, transport: Transport, *,
          open_browser: Callable[[str], object] | None = webbrowser.open,
          timeout: float = LOGIN_TIMEOUT_S, clock: Callable[[], float] = time.time,
          announce: Callable[[str], object] | None = None) -> Tokens:
    """The browser sign-in, waited for. ``announce`` shows the URL to the person (the CLI
    prints it plainly); without it the URL is logged."""
    flow = BrowserSignIn(settings, store, transport, timeout=timeout, clock=clock)
    url = flow.start()
    try:
        if announce is not None:
            announce(url)
        else:
            log.warning("Sign in to Plaud in your browser: %s", url)
        if open_browser is not None:
            open_browser(url)
        return flow.wait()
    finally:
        flow.close()

