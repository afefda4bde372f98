"""Plaud endpoints and client id, each overridable from the environment. Pure."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol
from urllib.parse import urlparse

from ..errors import ConfigError

if TYPE_CHECKING:  # names in the protocol's hints; this module stays pure
    from pathlib import Path

    from ..clock import UserZone

DEFAULT_CLIENT_ID = "client_9c501dad-8a0d-40b2-a7b0-d1cb8787f674"  # @plaud-ai/mcp's public id
DEFAULT_AUTH_URL = "https://web.plaud.ai/platform/oauth"
DEFAULT_API_BASE = "https://platform.plaud.ai/developer/api"
# An account kept in Plaud's EU region (API.md §2.1): its own host, and the routing header
# Plaud's official client sends (``x-pld-region``); the default (US, no header) fits most.
REGION_API_BASES = {"us": DEFAULT_API_BASE, "eu": "https://platform-eu.plaud.ai/developer/api"}
DEFAULT_CALLBACK = "http://localhost:8199/auth/callback"  # fixed in Plaud's registration
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1", "[::1]")
DEFAULT_WEB_BASE = "https://api.plaud.ai"  # the web-app API (PLAUD_API_TOKEN)
DETAIL_INTERVAL_S = 1.0  # between detail requests at first (API.md: be gentle)
LOGIN_TIMEOUT_S = 300.0  # a password, a 2FA code and a slow page fit in five minutes


@dataclass(frozen=True)
class PlaudSettings:
    client_id: str = DEFAULT_CLIENT_ID
    auth_url: str = DEFAULT_AUTH_URL
    api_base: str = DEFAULT_API_BASE
    token_url: str = f"{DEFAULT_API_BASE}/oauth/third-party/access-token"
    refresh_url: str = f"{DEFAULT_API_BASE}/oauth/third-party/access-token/refresh"
    callback_url: str = DEFAULT_CALLBACK
    region: str | None = None  # "us" | "eu" when PLAUD_REGION says (the x-pld-region header)


def check_callback(callback: str) -> None:
    """The sign-in listener can only serve an ``http://<loopback>:<port>/…`` URL."""
    parsed = urlparse(callback)
    try:
        port = parsed.port
    except ValueError:
        port = None
    if parsed.scheme != "http" or (parsed.hostname or "") not in LOOPBACK_HOSTS or not port:
        raise ConfigError(f"PLAUD_CALLBACK_URL must be an http://localhost:<port>/… loopback "
                          f"URL, got {callback!r}")


def plaud_settings(env: Mapping[str, str]) -> PlaudSettings:
    """Read once, at the edge, into ``Config``; a bad callback URL is reported by ``login``
    (the only user of it), so it never stops search or status. An unknown PLAUD_REGION is
    left out (the default host serves most accounts) rather than stopping anything."""
    region = (env.get("PLAUD_REGION") or "").strip().lower() or None
    if region not in (None, *REGION_API_BASES):
        region = None
    api = (env.get("PLAUD_MCP_API_BASE") or REGION_API_BASES[region or "us"]).rstrip("/")
    callback = env.get("PLAUD_CALLBACK_URL") or DEFAULT_CALLBACK
    return PlaudSettings(
        client_id=env.get("PLAUD_MCP_CLIENT_ID") or DEFAULT_CLIENT_ID,
        auth_url=env.get("PLAUD_AUTH_URL") or DEFAULT_AUTH_URL,
        api_base=api,
        token_url=env.get("PLAUD_TOKEN_URL") or f"{api}/oauth/third-party/access-token",
        refresh_url=env.get("PLAUD_REFRESH_URL")
        or f"{api}/oauth/third-party/access-token/refresh",
        callback_url=callback,
        region=region,
    )


class PlaudConfig(Protocol):
    """What this package reads of the program's configuration. ``Config`` has these; they
    are declared here so ``plaud/`` never imports ``config`` (which imports this package
    for the settings above), type hints included."""

    @property
    def home(self) -> Path: ...
    @property
    def client(self) -> str: ...
    @property
    def mock_corpus(self) -> Path | None: ...
    @property
    def plaud(self) -> PlaudSettings: ...
    @property
    def web_token(self) -> str | None: ...
    @property
    def web_base(self) -> str: ...
    @property
    def detail_interval_s(self) -> float: ...
    @property
    def legacy_tokens(self) -> Path | None: ...
    @property
    def login_timeout_s(self) -> float: ...
    @property
    def zone(self) -> UserZone: ...
