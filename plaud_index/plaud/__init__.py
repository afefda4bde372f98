"""Where recordings come from: Plaud's developer API, its web API, or the mock corpus.

Everything that knows Plaud (endpoints, OAuth, tokens, JSON field names) is in
this package; the rest of the program uses only what this module exports. The
network and OAuth modules load on first use, so reading the configuration (which
holds ``PlaudSettings``) stays cheap for the MCP server's start-up.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from .settings import (
    DEFAULT_WEB_BASE,
    DETAIL_INTERVAL_S,
    LOGIN_TIMEOUT_S,
    PlaudConfig,
    PlaudSettings,
    plaud_settings,
)
from .source import PlaudSource, RecordingSource, make_source, token_store

if TYPE_CHECKING:
    from ..reports import AuthStatus
    from .client_sign_in import SignInDesk

__all__ = ["DEFAULT_WEB_BASE", "DETAIL_INTERVAL_S", "LOGIN_TIMEOUT_S", "PlaudSettings",
           "PlaudSource", "RecordingSource", "auth_status", "make_source", "plaud_settings",
           "sign_in", "sign_in_desk", "sign_out", "token_store"]


def sign_in(config: PlaudConfig, open_browser: Callable[[str], object] | None,
            announce: Callable[[str], object] | None = None) -> str:
    """The browser sign-in (OAuth PKCE); returns who signed in, e.g. ``Ada (ada@x.org)``."""
    from .account import sign_in as run

    return run(config, open_browser, announce)


def auth_status(config: PlaudConfig, online: bool = False) -> AuthStatus:
    """Who is signed in, how, until when; with ``online``, whether Plaud accepts it now."""
    from .account import auth_status as run

    return run(config, online)


def sign_out(config: PlaudConfig) -> bool:
    """Revoke (best effort) and delete the local tokens; False if nobody was signed in."""
    from .account import sign_out as run

    return run(config)


def sign_in_desk(config: PlaudConfig, on_signed_in: Callable[[str], object]) -> SignInDesk:
    """A server's sign-in from the client: links handed out, their return listened for."""
    from .client_sign_in import SignInDesk

    return SignInDesk(config, on_signed_in)
