"""Signing in from inside an MCP client: the server hands out a sign-in link and listens for
its return itself (the same PKCE loopback as ``login``), so nobody opens a terminal.

Plaud's registration fixes the callback at ``localhost:8199``, so one process on the
machine can wait for a browser at a time. The one that binds it records the link in
``<home>/sign-in-pending.json`` (the link only: the PKCE verifier never leaves its memory);
another server asked meanwhile hands out the same link. When the browser comes back the
waiting process exchanges the code, stores the tokens where ``login`` puts them (Keychain,
else ``tokens.json``), remembers who signed in and tells its server (``on_signed_in``),
which starts the first sync. Nothing of a token is in any link or answer.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from ..errors import LoginError, PlaudIndexError
from ..fsio import process_alive, read_state_file, write_json_atomic
from ..home import Home
from .account import _client, describe_user
from .auth import BrowserSignIn
from .settings import PlaudConfig
from .source import token_store
from .tokens import Tokens
from .transport import Transport

log = logging.getLogger(__name__)



@dataclass(frozen=True)
class SignInLink:
    url: str
    expires_at: float  # epoch seconds: open it before then
    here: bool  # this process waits for it (else another server of ours does)


class SignInDesk:
    """One per server process: the link to hand out while nobody is signed in."""

    def __init__(self, config: PlaudConfig,
                 on_signed_in: Callable[[str], object] = lambda account: None,
                 clock: Callable[[], float] = time.time) -> None:
        self.config = config
        self.on_signed_in = on_signed_in
        self.clock = clock
        self._flow: BrowserSignIn | None = None
        self._lock = threading.Lock()

    def signed_in(self) -> bool:
        try:
            return token_store(self.config).load() is not None
        except PlaudIndexError:
            return False

    def link(self) -> SignInLink:
        """The sign-in link: this process's waiting one, another server's, or a new one.
        ``LoginError`` when the port is held by a program that is not ours."""
        with self._lock:
            flow = self._flow
            if flow is not None and flow.waiting and flow.expires_at > self.clock() + 5:
                return SignInLink(flow.url, flow.expires_at, True)
            theirs = self._pending()
            if theirs is not None:
                return theirs
            flow = BrowserSignIn(self.config.plaud, token_store(self.config), Transport(),
                                 timeout=self.config.login_timeout_s, clock=self.clock,
                                 on_done=self._done)
            try:
                flow.start()
            except LoginError:
                theirs = self._pending()  # it may have just started
                if theirs is not None:
                    return theirs
                raise
            self._flow = flow
            try:  # for the other servers of this machine: one waiting link for all
                self.config.home.mkdir(parents=True, exist_ok=True, mode=0o700)
                write_json_atomic(Home(self.config.home).sign_in_pending, {
                    "url": flow.url, "expires_at": flow.expires_at, "pid": os.getpid()})
            except OSError as exc:
                log.warning("Cannot record the waiting sign-in in %s: %s", self.config.home,
                            exc)
            log.info("Waiting for the Plaud sign-in in the browser (the link is in the "
                     "answer; it expires in %.0f s)", self.config.login_timeout_s)
            return SignInLink(flow.url, flow.expires_at, True)

    def _pending(self) -> SignInLink | None:
        """Another server's waiting link, if it still lives and waits."""
        try:
            data = json.loads(read_state_file(Home(self.config.home).sign_in_pending))
            url, expires, pid = str(data["url"]), float(data["expires_at"]), int(data["pid"])
        except (OSError, ValueError, KeyError, TypeError):
            return None
        if pid == os.getpid() or expires <= self.clock() + 5 or not process_alive(pid):
            return None
        return SignInLink(url, expires, False)

    def _done(self, tokens: Tokens) -> None:
        with contextlib.suppress(OSError):
            Home(self.config.home).sign_in_pending.unlink(missing_ok=True)
        try:
            account = describe_user(_client(self.config).current_user())
        except PlaudIndexError as exc:
            log.warning("Signed in, but Plaud did not say who: %s", exc)
            account = "your Plaud account"
        else:
            with contextlib.suppress(OSError):  # only a name for status to say
                write_json_atomic(Home(self.config.home).account, {
                    "version": 1, "account": account, "signed_in_at": self.clock()})
        log.info("Signed in to Plaud as %s", account)
        self.on_signed_in(account)

    def close(self) -> None:
        with self._lock:
            if self._flow is not None and self._flow.waiting:
                self._flow.close()
                with contextlib.suppress(OSError):
                    Home(self.config.home).sign_in_pending.unlink(missing_ok=True)
