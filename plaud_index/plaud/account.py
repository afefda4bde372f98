"""Sign in, who am I, sign out: the account side of the Plaud package, for the CLI."""

from __future__ import annotations

import logging
import webbrowser
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import PlaudIndexError
from .api import PlaudClient
from .auth import TokenManager, login
from .source import token_store
from .transport import Transport

if TYPE_CHECKING:
    from ..config import Config

log = logging.getLogger(__name__)


def _client(config: Config) -> PlaudClient:
    transport = Transport()
    manager = TokenManager(token_store(config), config.plaud, transport,
                           config.home / "refresh.lock")
    return PlaudClient(config.plaud, manager, transport)


def sign_in(config: Config, open_browser: Callable[[str], object] | None = webbrowser.open,
            announce: Callable[[str], object] | None = None) -> dict[str, Any]:
    """The browser sign-in (OAuth PKCE); returns Plaud's description of the account."""
    login(config.plaud, token_store(config), Transport(), open_browser=open_browser,
          announce=announce)
    return _client(config).current_user()


def sign_out(config: Config) -> bool:
    """Revoke (best effort) and delete the local tokens; False if nobody was signed in."""
    store = token_store(config)
    if store.load() is None:
        return False
    try:
        _client(config).revoke()
    except PlaudIndexError as exc:  # best effort: the local sign-in goes either way
        log.warning("Could not revoke the Plaud sign-in remotely: %s", exc)
    store.delete()
    return True
