"""Stdlib HTTP for everything that talks to Plaud: JSON, retries, backoff, size caps.

- a real ``User-Agent`` (Cloudflare answers ``Python-urllib/*`` with a 403 page);
- redirects are refused, so an ``Authorization`` header never follows one elsewhere;
- 429 waits for ``Retry-After`` (seconds or an HTTP-date, capped) or backs off
  exponentially; 5xx and network errors back off and retry, a bounded number of times;
- bodies are capped in size and gunzipped by header or by magic bytes.
Callers get the final ``Response`` for any status below 500 and decide what it means.
"""

from __future__ import annotations

import email.utils
import http.client
import json
import logging
import time
import urllib.error
import urllib.request
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .. import __version__
from ..errors import (
    PlaudRateLimitedError,
    PlaudTransientError,
    PlaudUnreachableError,
    PlaudUpstreamError,
)

log = logging.getLogger(__name__)

USER_AGENT = f"plaud-index-mcp/{__version__} (+https://github.com/plaud-index-mcp)"
MAX_BYTES = 20 * 1024 * 1024
TIMEOUT_S = 30.0
MAX_ATTEMPTS = 5
MAX_RETRY_AFTER_S = 300.0
BACKOFF_BASE_S = 1.0
BACKOFF_CAP_S = 60.0


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None  # urllib then raises HTTPError with the 3xx status


Opener = Callable[..., Any]  # urlopen-like: (request, timeout=) -> response


def default_opener() -> Opener:
    return urllib.request.build_opener(_NoRedirect).open


@dataclass(frozen=True)
class Response:
    status: int
    headers: Mapping[str, str]
    body: bytes
    url: str

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "")

    def json(self) -> Any:
        """The body as JSON; HTML, empty or truncated bodies are upstream errors."""
        if "html" in self.content_type or self.body.lstrip()[:1] == b"<":
            hint = " (Cloudflare block? check the User-Agent)" if "cf-ray" in self.headers \
                else ""
            raise PlaudUpstreamError(f"Plaud returned an HTML page, not JSON, for "
                                     f"{_path(self.url)} (HTTP {self.status}){hint}")
        try:
            return json.loads(self.body)
        except ValueError as exc:
            raise PlaudUpstreamError(f"Plaud returned malformed JSON for {_path(self.url)} "
                                     f"(HTTP {self.status}, {len(self.body)} bytes)") from exc


def _path(url: str) -> str:
    """The URL without its query: presigned links carry signatures, never log them."""
    return url.split("?", 1)[0]


def parse_retry_after(value: str | None, now: float) -> float | None:
    """``Retry-After`` as seconds from ``now``: delta-seconds or an HTTP-date."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(when.timestamp() - now, 0.0)


def decode_body(body: bytes, headers: Mapping[str, str], limit: int = MAX_BYTES) -> bytes:
    if headers.get("content-encoding", "").lower() == "gzip" or body[:2] == b"\x1f\x8b":
        try:
            inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
            out = inflater.decompress(body, limit + 1)
        except zlib.error as exc:
            raise PlaudUpstreamError(f"A gzip body from Plaud is corrupt: {exc}") from exc
        if len(out) > limit:
            raise PlaudUpstreamError(f"A body from Plaud inflates past {limit} bytes; refused")
        return out
    return body


@dataclass
class Transport:
    opener: Opener = field(default_factory=default_opener)
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.time
    user_agent: str = USER_AGENT
    timeout: float = TIMEOUT_S
    max_attempts: int = MAX_ATTEMPTS
    max_bytes: int = MAX_BYTES
    retries: int = 0  # how many times this transport had to wait and retry (rate pressure)

    def request(self, method: str, url: str, *, headers: Mapping[str, str] | None = None,
                data: bytes | None = None, retry: bool = True) -> Response:
        """Send with retries (``retry=False``: one attempt, for non-idempotent token calls)."""
        attempts = self.max_attempts if retry else 1
        for attempt in range(1, attempts + 1):
            try:
                response = self._once(method, url, headers or {}, data)
            except PlaudTransientError as exc:
                if attempt == attempts:
                    raise
                self._wait(attempt, None, f"{exc}")
                continue
            if response.status == 429 or response.status >= 500:
                if attempt == attempts and response.status == 429:
                    raise PlaudRateLimitedError(
                        f"Plaud is rate-limiting requests (HTTP 429 for {_path(url)}, "
                        f"{attempts} tries): what is indexed stays, and the next sync "
                        "continues more slowly. Your sign-in is fine.")
                if attempt == attempts:
                    raise PlaudTransientError(
                        f"Plaud answered HTTP {response.status} for {_path(url)} "
                        f"{attempts} time(s) (trouble on Plaud's side); will try again "
                        "next cycle. Your sign-in is fine.")
                delay = parse_retry_after(response.headers.get("retry-after"), self.clock()) \
                    if response.status == 429 else None
                self._wait(attempt, delay, f"HTTP {response.status}")
                continue
            return response
        raise AssertionError("unreachable")  # pragma: no cover

    def _wait(self, attempt: int, retry_after: float | None, why: str) -> None:
        delay = retry_after if retry_after is not None else \
            min(BACKOFF_BASE_S * 2 ** (attempt - 1), BACKOFF_CAP_S)
        delay = min(delay, MAX_RETRY_AFTER_S)
        self.retries += 1
        log.warning("Plaud request failed (%s); retrying in %.1fs", why, delay)
        self.sleep(delay)

    def _once(self, method: str, url: str, headers: Mapping[str, str],
              data: bytes | None) -> Response:
        request = urllib.request.Request(url, data=data, method=method,
                                         headers={"User-Agent": self.user_agent,
                                                  "Accept-Encoding": "gzip", **headers})
        try:
            with self.opener(request, timeout=self.timeout) as raw:
                return self._read(raw.status, raw.headers, raw, url)
        except urllib.error.HTTPError as exc:
            if 300 <= exc.code < 400:
                raise PlaudUpstreamError(f"Plaud redirected {_path(url)} (HTTP {exc.code}); "
                                         "redirects are refused") from None
            with exc:
                return self._read(exc.code, exc.headers, exc, url)
        except (urllib.error.URLError, ConnectionError, http.client.HTTPException,
                TimeoutError) as exc:
            reason = getattr(exc, "reason", exc)
            if isinstance(reason, (http.client.HTTPException, ConnectionResetError,
                                   BrokenPipeError)):  # Plaud answered, then hung up
                raise PlaudTransientError(f"The connection to Plaud broke ({_path(url)}: "
                                          f"{reason!r}); will try again.") from None
            raise PlaudUnreachableError(f"Cannot reach Plaud ({_path(url)}: {reason}): check "
                                        "the network connection; your sign-in is kept and "
                                        "the next sync tries again.") from None

    def _read(self, status: int, headers: Any, stream: Any, url: str) -> Response:
        lowered = {k.lower(): v for k, v in headers.items()} if headers else {}
        try:
            body = stream.read(self.max_bytes + 1)
        except (ConnectionError, TimeoutError, http.client.HTTPException) as exc:
            raise PlaudTransientError(f"The connection to Plaud broke mid-response "
                                      f"({_path(url)}): {exc!r}") from None
        if len(body) > self.max_bytes:
            raise PlaudUpstreamError(f"A response from Plaud for {_path(url)} is larger than "
                                     f"{self.max_bytes} bytes; refused")
        expected = lowered.get("content-length", "")
        if expected.isdigit() and len(body) < int(expected):
            raise PlaudTransientError(f"The connection to Plaud broke mid-response "
                                      f"({_path(url)}: {len(body)} of {expected} bytes)")
        return Response(status, lowered, decode_body(body, lowered, self.max_bytes), url)
