"""What a remote client may be: the rules every client meets, whether it registered
(dynamic registration) or named itself by its metadata document's URL
(``client_documents``). Pure."""

from __future__ import annotations

import ipaddress
from urllib.parse import urlparse

from mcp.server.auth.provider import RegistrationError
from mcp.shared.auth import OAuthClientInformationFull

# What one registration may hold: a client names itself in a line and sends its browser
# back to a few addresses; anything larger is a stranger filling the owner's disk and log.
MAX_NAME_CHARS = 100
MAX_REDIRECTS = 5
MAX_URI_CHARS = 2000
MAX_RECORD_CHARS = 8000


def loopback_host(host: str | None) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address((host or "").strip("[]")).is_loopback
    except ValueError:
        return False


def redirect_problem(uri: str) -> str | None:
    """Why ``uri`` cannot be a redirect URI (RFC 8252, OAuth 2.1): only https, or http to a
    loopback address (a native app's listener); never javascript:, data:, or plain http to
    another host. ``None`` when it can."""
    if len(uri) > MAX_URI_CHARS:
        return f"a redirect URI is at most {MAX_URI_CHARS} characters"
    parsed = urlparse(uri)
    if not (parsed.scheme == "https" or (parsed.scheme == "http" and
                                         loopback_host(parsed.hostname))):
        return f"{uri[:100]!r}: a redirect URI is https, or http to a loopback address"
    if parsed.fragment or not parsed.hostname:
        return f"{uri[:100]!r} is not an absolute URI without a fragment"
    return None


def check_registration(info: OAuthClientInformationFull) -> None:
    """Bounds and redirect rules of one registration (``RegistrationError`` → 400)."""
    uris = [str(u) for u in info.redirect_uris or []]
    if not uris or len(uris) > MAX_REDIRECTS:
        raise RegistrationError("invalid_redirect_uri",
                                f"give 1 to {MAX_REDIRECTS} redirect URIs")
    for uri in uris:
        if (why := redirect_problem(uri)) is not None:
            raise RegistrationError("invalid_redirect_uri", why)
    if len(info.client_name or "") > MAX_NAME_CHARS:
        raise RegistrationError("invalid_client_metadata",
                                f"client_name is at most {MAX_NAME_CHARS} characters")
    if len(info.model_dump_json(exclude_none=True)) > MAX_RECORD_CHARS:
        raise RegistrationError("invalid_client_metadata",
                                f"the registration is over {MAX_RECORD_CHARS} characters")
