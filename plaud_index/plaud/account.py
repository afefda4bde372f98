"""Sign in, who am I, sign out: the account side of the Plaud package, for the CLI.

Who signed in is remembered in ``<home>/account.json`` (name and email, never a
token), so ``status`` and ``auth status`` can say it without a network call.
"""

from __future__ import annotations

import json
import logging
import time
import webbrowser
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timezone
from typing import Any

from ..errors import PlaudAuthError, PlaudIndexError, PlaudUnreachableError, TokenStoreError
from ..fsio import read_state_file, write_json_atomic
from ..home import Home
from ..reports import AuthStatus
from .api import PlaudClient
from .auth import login
from .refresh import TokenManager
from .settings import PlaudConfig
from .source import token_store
from .transport import MAX_ATTEMPTS, Transport

log = logging.getLogger(__name__)

# A person waiting on ``doctor`` or ``auth status`` gets the answer in seconds: one retry,
# where a sync's five tries over half a minute ride out a passing hiccup.
ASKING_ATTEMPTS = 2


def _client(config: PlaudConfig, attempts: int = MAX_ATTEMPTS) -> PlaudClient:
    transport = Transport(max_attempts=attempts)
    manager = TokenManager(token_store(config), config.plaud, transport,
                           Home(config.home).refresh_lock)
    return PlaudClient(config.plaud, manager, transport)


def describe_user(user: dict[str, Any]) -> str:
    """``Ada (ada@example.com)`` from Plaud's users/current answer."""
    name = user.get("nickname") or user.get("name") or user.get("email") or user.get("id")
    email = user.get("email")
    return f"{name} ({email})" if email and email != name else str(name or "unknown")


def sign_in(config: PlaudConfig, open_browser: Callable[[str], object] | None = webbrowser.open,
            announce: Callable[[str], object] | None = None) -> str:
    """The browser sign-in (OAuth PKCE); returns who signed in, e.g. ``Ada (ada@x.org)``."""
    login(config.plaud, token_store(config), Transport(), open_browser=open_browser,
          announce=announce, timeout=config.login_timeout_s)
    account = describe_user(_client(config).current_user())
    write_json_atomic(Home(config.home).account, {"version": 1, "account": account,
                                                   "signed_in_at": time.time()})
    return account


def sign_out(config: PlaudConfig) -> bool:
    """Revoke (best effort) and delete the local tokens; False if nobody was signed in."""
    store = token_store(config)
    if store.load() is None:
        return False
    try:
        _client(config).revoke()
    except PlaudIndexError as exc:  # best effort: the local sign-in goes either way
        log.warning("Could not revoke the Plaud sign-in remotely: %s", exc)
    store.delete()
    Home(config.home).account.unlink(missing_ok=True)
    return True


def _remembered(config: PlaudConfig) -> str | None:
    try:
        data = json.loads(read_state_file(Home(config.home).account))
    except (OSError, ValueError):
        return None
    account = data.get("account") if isinstance(data, dict) else None
    return account if isinstance(account, str) else None


def auth_status(config: PlaudConfig, online: bool = False) -> AuthStatus:
    """Who is signed in, how, until when, where the token lives; with ``online``, whether
    Plaud accepts it now (a network call: distinct answers for unreachable and expired)."""
    base = config.plaud.api_base
    if config.client == "mock":
        corpus = f"the mock corpus {config.mock_corpus}" if config.mock_corpus else \
            "the bundled sample corpus"
        return AuthStatus(signed_in=True, method="mock", account=corpus,
                          api_base="(none: PLAUD_CLIENT=mock)", token_store="-")
    if config.web_token:
        return AuthStatus(signed_in=True, method="web token (PLAUD_API_TOKEN)",
                          account=None, api_base=config.web_base, token_store="environment")
    store = token_store(config)
    try:
        tokens = store.load()
    except TokenStoreError as exc:
        return AuthStatus(signed_in=False, method="oauth", account=None, api_base=base,
                          token_store=store.where, problem=str(exc))
    if tokens is None:
        return AuthStatus(signed_in=False, method="oauth", account=None, api_base=base,
                          token_store=store.where, problem=PlaudAuthError.SIGNED_OUT)
    expires = config.zone.local(datetime.fromtimestamp(tokens.expires_at / 1000, timezone.utc))
    status = AuthStatus(signed_in=True, method="oauth", account=_remembered(config),
                        api_base=base, token_store=store.where,
                        expires_at=expires.isoformat(timespec="seconds"),
                        refreshable=bool(tokens.refresh_token))
    if not online:
        return status
    try:
        user = _client(config, ASKING_ATTEMPTS).current_user()
    except PlaudIndexError as exc:
        return replace(status, reachable=not isinstance(exc, PlaudUnreachableError),
                       problem=str(exc), signed_in=not isinstance(exc, PlaudAuthError))
    return replace(status, reachable=True, account=describe_user(user))
