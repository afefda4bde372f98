"""``PlaudClient``: the developer API (API.md §3) as raw dicts, for the indexer.

It never imports ``auth``: a ``TokenProvider`` is passed in. Every answer is
checked for shape, so an HTML page, malformed JSON or a wrong envelope is an
explicit ``PlaudUpstreamError``, never an empty listing. ``data_link`` bodies
are fetched without ``Authorization`` (S3 presigned URLs reject it), only over
https from allow-listed hosts (or the API's own loopback host in tests), and
gunzipped; an expired link is retried once with a fresh detail.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any, Protocol
from urllib.parse import quote, urlparse

from ..errors import (
    PlaudAuthError,
    PlaudTransientError,
    PlaudUpstreamError,
    RecordingGoneError,
)
from .settings import DETAIL_INTERVAL_S, LOOPBACK_HOSTS, PlaudSettings
from .transport import Response, Transport

log = logging.getLogger(__name__)

PAGE_SIZE = 100  # the API allows 10..100
MAX_PAGES = 1000
LINK_HOST_SUFFIXES = (".amazonaws.com",)
LINK_BLOCKS = ("source_list", "note_list")


class TokenProvider(Protocol):
    def access_token(self) -> str: ...

    def after_unauthorized(self, rejected: str) -> str: ...


def _items(body: Any, url: str) -> tuple[list[dict[str, Any]], int | None]:
    """The list envelope ``{type, data: [...], page, page_size}`` (or ``{data: {data}}``)."""
    data = body.get("data") if isinstance(body, dict) else None
    if isinstance(data, dict):
        data = data.get("data")
    if not isinstance(data, list) or not all(isinstance(i, dict) for i in data):
        raise PlaudUpstreamError(f"Plaud's recording list has an unexpected shape ({url}); "
                                 "nothing was changed")
    echoed = body.get("page_size") if isinstance(body, dict) else None
    return data, echoed if isinstance(echoed, int) and echoed > 0 else None


class Pacer:
    """Spaces detail requests: about one a second to start (a first sync of hundreds of
    recordings is exactly the burst Plaud answers with 429), speeding up towards
    ``floor`` while requests go through without retries, doubling after each retry."""

    def __init__(self, interval: float = DETAIL_INTERVAL_S, floor: float = 0.25,
                 ceiling: float = 10.0, pressure: Callable[[], int] = lambda: 0,
                 sleep: Callable[[float], None] = time.sleep,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.interval, self.floor, self.ceiling = interval, min(floor, interval), ceiling
        self.pressure, self.sleep, self.clock = pressure, sleep, clock
        self._last: float | None = None
        self._seen_pressure = pressure()
        self._streak = 0

    def wait(self) -> None:
        if self.interval <= 0:
            return
        pressure = self.pressure()
        if pressure > self._seen_pressure:
            self.interval, self._streak = min(self.interval * 2, self.ceiling), 0
        else:
            self._streak += 1
            if self._streak >= 10:
                self.interval, self._streak = max(self.floor, self.interval * 0.8), 0
        self._seen_pressure = pressure
        if self._last is not None:
            delay = self._last + self.interval - self.clock()
            if delay > 0:
                self.sleep(delay)
        self._last = self.clock()


class PlaudClient:
    def __init__(self, settings: PlaudSettings, tokens: TokenProvider,
                 transport: Transport | None = None, page_size: int = PAGE_SIZE,
                 detail_interval: float = DETAIL_INTERVAL_S) -> None:
        self.settings = settings
        self.tokens = tokens
        self.transport = transport or Transport()
        self.page_size = min(max(page_size, 10), 100)
        self.pacer = Pacer(detail_interval, pressure=lambda: self.transport.retries,
                           sleep=self.transport.sleep)

    # -- authenticated JSON ------------------------------------------------------------
    def _get(self, path: str) -> Response:
        url = f"{self.settings.api_base}{path}"
        token = self.tokens.access_token()
        response = self._send(url, token)
        if response.status == 401:  # one refresh, one retry
            response = self._send(url, self.tokens.after_unauthorized(token))
            if response.status == 401:
                raise PlaudAuthError(PlaudAuthError.EXPIRED)
        if response.status == 403 and "cf-ray" in response.headers:
            raise PlaudUpstreamError("Plaud's edge (Cloudflare) refused the request (HTTP 403); "
                                     "this usually means a blocked User-Agent or network")
        return response

    def _send(self, url: str, token: str) -> Response:
        headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
        if self.settings.region:  # routing, as Plaud's own client sends it (API.md §2.1)
            headers["x-pld-region"] = self.settings.region
        return self.transport.request("GET", url, headers=headers)

    def _json(self, path: str) -> Any:
        response = self._get(path)
        if response.status != 200:
            raise PlaudUpstreamError(_describe(response, path))
        return response.json()

    # -- the API -----------------------------------------------------------------------
    def current_user(self) -> dict[str, Any]:
        body = self._json("/open/third-party/users/current")
        if not isinstance(body, dict):
            raise PlaudUpstreamError("Plaud's users/current answer is not an object")
        return body

    def revoke(self) -> None:
        """Best effort: the official CLI ignores errors here too."""
        token = self.tokens.access_token()
        self.transport.request("POST", f"{self.settings.api_base}/open/third-party/users/"
                               "current/revoke", retry=False,
                               headers={"Authorization": f"Bearer {token}"})

    def list_files(self, tail_hint: str | None = None) -> list[dict[str, Any]]:
        """Every recording, newest first, deduplicated; stops on a short or empty page.

        ``tail_hint`` is the oldest recording of the previous complete walk: a full page
        that ends with it is the last one (the list is newest first, so nothing older
        can follow), which saves the empty page an exact multiple of 100 would cost."""
        seen: dict[str, dict[str, Any]] = {}
        for page in range(1, MAX_PAGES + 1):
            path = f"/open/third-party/files/?page={page}&page_size={self.page_size}"
            items, echoed = _items(self._json(path), path)
            new = [i for i in items if isinstance(i.get("id"), str) and i["id"] not in seen]
            if items and not new:
                raise PlaudUpstreamError("Pagination repeated: Plaud returned a page of "
                                         "recordings already seen; nothing was changed")
            for item in new:
                seen[item["id"]] = item
            if len(items) < (echoed or self.page_size):
                return list(seen.values())
            if tail_hint is not None and items[-1].get("id") == tail_hint:
                return list(seen.values())
        raise PlaudUpstreamError(f"Plaud's list did not end within {MAX_PAGES} pages")

    def get_file(self, file_id: str) -> dict[str, Any]:
        """The detail JSON with every link-only block's content fetched inline."""
        detail = self._detail(file_id)
        try:
            self._resolve_links(detail)
        except _LinkExpired:
            detail = self._detail(file_id)  # fresh signatures, once
            self._resolve_links(detail)
        return detail

    def _detail(self, file_id: str) -> dict[str, Any]:
        self.pacer.wait()
        path = f"/open/third-party/files/{quote(file_id, safe='')}"
        response = self._get(path)
        if response.status == 404:
            raise RecordingGoneError(f"Plaud has no recording {file_id} (deleted?)")
        if response.status != 200:
            raise PlaudUpstreamError(_describe(response, path))
        body = response.json()
        if isinstance(body, dict) and isinstance(body.get("data"), dict) and "id" not in body:
            body = body["data"]
        if not isinstance(body, dict) or "id" not in body:
            raise PlaudUpstreamError(f"Plaud's detail for {file_id} has an unexpected shape")
        return body

    def _resolve_links(self, detail: dict[str, Any]) -> None:
        for key in LINK_BLOCKS:
            blocks = detail.get(key)
            for block in blocks if isinstance(blocks, list) else []:
                link = block.get("data_link") if isinstance(block, dict) else None
                if isinstance(link, str) and link and not block.get("data_content"):
                    block["data_content"] = self._fetch_link(link)

    def _fetch_link(self, link: str) -> str:
        check_link(link, self.settings.api_base)
        response = self.transport.request("GET", link)  # no Authorization, ever
        if response.status in (400, 403):
            raise _LinkExpired()
        if response.status != 200:
            raise PlaudUpstreamError(f"A Plaud content link answered HTTP {response.status}")
        return response.body.decode("utf-8", errors="replace")

def check_link(link: str, api_base: str) -> None:
    """Only https links to Plaud's storage, or (tests) the API's own loopback host."""
    url, api = urlparse(link), urlparse(api_base)
    host = url.hostname or ""
    if url.scheme == "https" and host.endswith(LINK_HOST_SUFFIXES):
        return
    if api.scheme == "http" and api.hostname in LOOPBACK_HOSTS and url.scheme == "http" \
            and host == api.hostname:
        return
    raise PlaudUpstreamError(f"Refusing a content link to {url.scheme}://{host}: only https "
                             "links to Plaud's storage are fetched")


class _LinkExpired(PlaudTransientError):
    def __init__(self) -> None:
        super().__init__("A Plaud content link expired; the detail is fetched again once")


def _describe(response: Response, path: str) -> str:
    if response.status == 422:
        try:
            detail = response.json().get("detail", [])
            parts = [f"{'.'.join(map(str, d.get('loc', [])))}: {d.get('msg')}" for d in detail]
            return f"Plaud rejected {path.split('?')[0]} (HTTP 422): {'; '.join(parts)}"
        except (PlaudUpstreamError, AttributeError, TypeError):
            pass
    return f"Plaud answered HTTP {response.status} for {path.split('?')[0]}"
