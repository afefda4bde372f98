"""Access tokens handed out fresh: ``TokenManager`` refreshes 60 s before expiry and
once after a 401, persists the rotated pair before anyone uses it, and serialises
refreshes across processes with a lock file and a re-read (the indexer and the search
server share one sign-in).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlencode

from ..errors import PlaudAuthError, PlaudTransientError
from ..fsio import flocked
from .settings import PlaudSettings
from .tokens import Tokens, TokenStore
from .transport import Transport

log = logging.getLogger(__name__)

REFRESH_MARGIN_MS = 60_000
AUTH_EXPIRED = PlaudAuthError.EXPIRED


class TokenManager:
    """The ``TokenProvider`` the API client uses. One per cycle: after an auth failure it
    fails fast for the rest of its life instead of hammering the refresh endpoint."""

    def __init__(self, store: TokenStore, settings: PlaudSettings, transport: Transport,
                 lock_path: Path, clock: Callable[[], float] = time.time) -> None:
        self.store, self.settings, self.transport = store, settings, transport
        self.lock_path, self.clock = lock_path, clock
        self._dead = False
        self._local = threading.Lock()

    def _now_ms(self) -> int:
        return int(self.clock() * 1000)

    def access_token(self) -> str:
        tokens = self._load()
        if tokens.expires_at - REFRESH_MARGIN_MS <= self._now_ms():
            tokens = self._refresh(tokens.access_token)
        return tokens.access_token

    def after_unauthorized(self, rejected: str) -> str:
        return self._refresh(rejected).access_token

    def _load(self) -> Tokens:
        if self._dead:
            raise PlaudAuthError(AUTH_EXPIRED)
        tokens = self.store.load()
        if tokens is None:
            raise PlaudAuthError(PlaudAuthError.SIGNED_OUT)
        return tokens

    @contextmanager
    def _serialised(self) -> Iterator[None]:
        with self._local, flocked(self.lock_path):
            yield

    def _refresh(self, stale_access: str) -> Tokens:
        with self._serialised():
            current = self._load()  # re-read: another process may have refreshed already
            fresh = current.expires_at - REFRESH_MARGIN_MS > self._now_ms()
            if current.access_token != stale_access and fresh:
                return current
            if not current.refresh_token:
                self._dead = True
                raise PlaudAuthError(AUTH_EXPIRED)
            response = self.transport.request(
                "POST", self.settings.refresh_url, retry=False,
                data=urlencode({"refresh_token": current.refresh_token}).encode(),
                headers={"Content-Type": "application/x-www-form-urlencoded",
                         "Accept": "application/json"})
            if response.status >= 500:
                raise PlaudTransientError(f"Plaud's token refresh failed (HTTP "
                                          f"{response.status}); sign-in kept, will retry")
            if response.status != 200:
                self._dead = True
                log.error("%s (refresh answered HTTP %s)", AUTH_EXPIRED, response.status)
                raise PlaudAuthError(AUTH_EXPIRED)
            tokens = Tokens.from_response(response.json(), self._now_ms(), previous=current)
            self.store.save(tokens)  # persisted before anyone uses the new pair
            return tokens
