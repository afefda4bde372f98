"""Client ID Metadata Documents (the MCP authorization spec of 2026-07-28): a remote client
may name itself by an https URL instead of registering, and that URL serves its metadata
(its name and redirect URIs). The one outbound request remote mode adds, so it is held
tight:
- only ``https://`` with a path (not a bare origin), default port or a named one;
- the host must resolve only to public addresses (no loopback, private, link-local,
  cloud-metadata, multicast or reserved address: the server must not be turned into a
  probe of the owner's own network), and the connection goes to the address that was
  checked, the certificate checked against the name;
- at most ``MAX_BYTES``, within ``TIMEOUT_S``, an answer of 200 with JSON; no redirect
  followed;
- the document must name itself (``client_id`` equal to its URL) and pass the same rules
  as a registration (``remote_auth.check_registration``);
- kept ``CACHE_S`` (at most ``CACHE_ENTRIES``), so a client's requests fetch it once.
The owner still approves every client, whatever its document says.
"""

from __future__ import annotations

import http.client
import ipaddress
import json
import logging
import socket
import ssl
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any
from urllib.parse import urlparse

from mcp.server.auth.provider import RegistrationError
from mcp.shared.auth import OAuthClientInformationFull

from .client_rules import check_registration

log = logging.getLogger(__name__)

MAX_BYTES = 64 * 1024
TIMEOUT_S = 5.0
CACHE_S = 600.0
CACHE_ENTRIES = 100

Resolve = Callable[[str, int], list[str]]
Fetch = Callable[[str, str, int, str], bytes]  # (host, address, port, path) → body


class DocumentError(ValueError):
    """A client's metadata document cannot be used (said in the log, never to the client
    beyond "unknown client")."""


def is_document_id(client_id: str) -> bool:
    parsed = urlparse(client_id)
    return parsed.scheme == "https" and bool(parsed.hostname) and parsed.path not in ("", "/")


def resolve(host: str, port: int) -> list[str]:
    return sorted({str(info[4][0]) for info in socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM)})


def public_addresses(host: str, port: int, resolver: Resolve = resolve) -> list[str]:
    """Every address ``host`` resolves to, when all are public; else ``DocumentError``."""
    try:
        addresses = resolver(host, port)
    except OSError as exc:
        raise DocumentError(f"{host} does not resolve ({exc})") from None
    if not addresses:
        raise DocumentError(f"{host} does not resolve")
    for text in addresses:
        address = ipaddress.ip_address(text.split("%")[0])
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            address = address.ipv4_mapped
        if not address.is_global or address.is_multicast:
            raise DocumentError(f"{host} resolves to {address}, which is not a public address")
    return addresses


class _PinnedHTTPS(http.client.HTTPSConnection):
    """An https connection to one checked address, the certificate checked for ``host``."""

    def __init__(self, host: str, address: str, port: int) -> None:
        super().__init__(host, port, timeout=TIMEOUT_S, context=ssl.create_default_context())
        self.address = address

    def connect(self) -> None:
        raw = socket.create_connection((self.address, self.port), self.timeout)
        self.sock = self._context.wrap_socket(raw, server_hostname=self.host)  # type: ignore[attr-defined]


def fetch(host: str, address: str, port: int, path: str) -> bytes:
    conn = _PinnedHTTPS(host, address, port)
    try:
        conn.request("GET", path, headers={"Accept": "application/json",
                                           "User-Agent": "plaud-index-mcp"})
        answer = conn.getresponse()
        if answer.status != 200:
            raise DocumentError(f"it answered {answer.status}")
        body = answer.read(MAX_BYTES + 1)
    except (OSError, http.client.HTTPException) as exc:
        raise DocumentError(f"it could not be fetched ({exc})") from None
    finally:
        conn.close()
    if len(body) > MAX_BYTES:
        raise DocumentError(f"it is over {MAX_BYTES} bytes")
    return body


def read_document(url: str, body: bytes) -> OAuthClientInformationFull:
    """The client a document describes, or ``DocumentError``."""
    try:
        data = json.loads(body)
    except ValueError:
        raise DocumentError("it is not JSON") from None
    if not isinstance(data, dict) or data.get("client_id") != url:
        raise DocumentError("it does not name itself by its own URL (client_id)")
    try:
        info = OAuthClientInformationFull.model_validate(
            {**{k: v for k, v in data.items() if k in (
                "client_name", "redirect_uris", "grant_types", "response_types",
                "client_uri", "logo_uri")}, "client_id": url,
             "token_endpoint_auth_method": "none"})
        check_registration(info)
    except RegistrationError as exc:
        raise DocumentError(exc.error_description or exc.error) from None
    except ValueError as exc:
        raise DocumentError(f"its metadata is not valid ({str(exc)[:200]})") from None
    return info


class ClientDocuments:
    """The documents fetched, kept a while."""

    def __init__(self, resolver: Resolve = resolve, fetcher: Fetch = fetch,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.resolver, self.fetcher, self.clock = resolver, fetcher, clock
        self._kept: OrderedDict[str, tuple[float, OAuthClientInformationFull | None]] = \
            OrderedDict()
        self._lock = threading.Lock()

    def client(self, url: str) -> OAuthClientInformationFull | None:
        """The client at ``url`` (``None``: its document cannot be used; said in the log)."""
        with self._lock:
            kept = self._kept.get(url)
            if kept is not None and self.clock() - kept[0] < CACHE_S:
                return kept[1]
        info = self._fetch(url)
        with self._lock:
            self._kept[url] = (self.clock(), info)
            self._kept.move_to_end(url)
            while len(self._kept) > CACHE_ENTRIES:
                self._kept.popitem(last=False)
        return info

    def _fetch(self, url: str) -> OAuthClientInformationFull | None:
        parsed = urlparse(url)
        try:
            if not is_document_id(url) or parsed.username or parsed.password:
                raise DocumentError("a client's URL is https with a path, and no credentials")
            host, port = str(parsed.hostname), parsed.port or 443
            address = public_addresses(host, port, self.resolver)[0]
            path = parsed.path + (f"?{parsed.query}" if parsed.query else "")
            body = self.fetcher(host, address, port, path)
            if len(body) > MAX_BYTES:
                raise DocumentError(f"it is over {MAX_BYTES} bytes")
            return read_document(url, body)
        except DocumentError as exc:
            log.warning("A client named itself %r, but its metadata document cannot be "
                        "used: %s", url[:200], exc)
            return None


def advertised(metadata: dict[str, Any]) -> dict[str, Any]:
    """The authorization server's metadata, saying it reads clients' documents."""
    return {**metadata, "client_id_metadata_document_supported": True}
