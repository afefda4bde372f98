"""Plaud endpoints and client id, each overridable from the environment. Pure."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlparse

from .errors import ConfigError

DEFAULT_CLIENT_ID = "client_9c501dad-8a0d-40b2-a7b0-d1cb8787f674"  # @plaud-ai/mcp's public id
DEFAULT_AUTH_URL = "https://web.plaud.ai/platform/oauth"
DEFAULT_API_BASE = "https://platform.plaud.ai/developer/api"
DEFAULT_CALLBACK = "http://localhost:8199/auth/callback"  # fixed in Plaud's registration
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1", "[::1]")


@dataclass(frozen=True)
class PlaudSettings:
    client_id: str = DEFAULT_CLIENT_ID
    auth_url: str = DEFAULT_AUTH_URL
    api_base: str = DEFAULT_API_BASE
    token_url: str = f"{DEFAULT_API_BASE}/oauth/third-party/access-token"
    refresh_url: str = f"{DEFAULT_API_BASE}/oauth/third-party/access-token/refresh"
    callback_url: str = DEFAULT_CALLBACK


def plaud_settings(env: Mapping[str, str]) -> PlaudSettings:
    api = (env.get("PLAUD_MCP_API_BASE") or DEFAULT_API_BASE).rstrip("/")
    callback = env.get("PLAUD_CALLBACK_URL") or DEFAULT_CALLBACK
    parsed = urlparse(callback)
    if parsed.scheme != "http" or (parsed.hostname or "") not in LOOPBACK_HOSTS \
            or not parsed.port:
        raise ConfigError(f"PLAUD_CALLBACK_URL must be an http://localhost:<port>/… loopback "
                          f"URL, got {callback!r}")
    return PlaudSettings(
        client_id=env.get("PLAUD_MCP_CLIENT_ID") or DEFAULT_CLIENT_ID,
        auth_url=env.get("PLAUD_AUTH_URL") or DEFAULT_AUTH_URL,
        api_base=api,
        token_url=env.get("PLAUD_TOKEN_URL") or f"{api}/oauth/third-party/access-token",
        refresh_url=env.get("PLAUD_REFRESH_URL")
        or f"{api}/oauth/third-party/access-token/refresh",
        callback_url=callback,
    )
