"""``WebClient``: the ``PLAUD_API_TOKEN`` power-user path to Plaud's web-app API (API.md §5).

Never used unless ``PLAUD_API_TOKEN`` is set. Differences from the developer API
that matter: ``skip``/``limit`` paging, errors as HTTP 200 with a negative
``status`` (-3900 = bad token; -302 = "use this regional host", followed
once), transcripts only behind ``content_list`` links (gzip), the summary
inline in ``pre_download_content_list``. Raw dicts out, like ``PlaudClient``.
"""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import quote, urlparse

from ..errors import PlaudAuthError, PlaudUpstreamError, RecordingGoneError
from .api import check_link
from .settings import DEFAULT_WEB_BASE
from .transport import Transport

log = logging.getLogger(__name__)

PAGE = 100
# Cloudflare in front of the web API wants browser-like requests (API.md §5).
BROWSER_HEADERS = {
    "User-Agent": "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 "
                  "(KHTML, like Gecko) Chrome/131.0 Safari/537.36 plaud-index-mcp",
    "Origin": "https://web.plaud.ai", "Referer": "https://web.plaud.ai/",
    "app-platform": "web", "edit-from": "web", "Accept": "application/json",
}


class WebClient:
    def __init__(self, token: str, base: str = DEFAULT_WEB_BASE,
                 transport: Transport | None = None) -> None:
        self._token = token
        self.base = base.rstrip("/")
        self.transport = transport or Transport(user_agent=BROWSER_HEADERS["User-Agent"])
        self._switched = False

    def _call(self, path: str) -> Any:
        while True:
            response = self.transport.request("GET", f"{self.base}{path}", headers={
                **BROWSER_HEADERS, "Authorization": f"Bearer {self._token}"})
            if response.status == 404:
                raise RecordingGoneError(f"The Plaud web API has no {path.split('?')[0]}")
            if response.status != 200:
                raise PlaudUpstreamError(f"The Plaud web API answered HTTP {response.status} "
                                         f"for {path.split('?')[0]}")
            body = response.json()
            if not isinstance(body, dict):
                raise PlaudUpstreamError("The Plaud web API's answer is not an object")
            status = body.get("status", 0)
            if status == 0:
                return body
            if status == -3900:
                raise PlaudAuthError("PLAUD_API_TOKEN was rejected (invalid auth header): copy "
                                     "a fresh token from web.plaud.ai, or unset it and run "
                                     "`plaud-index-mcp login`.")
            if status == -302:
                self._switch_region(body)
                continue
            raise PlaudUpstreamError(f"The Plaud web API failed with status {status}: "
                                     f"{body.get('msg', '')}")

    def _switch_region(self, body: dict[str, Any]) -> None:
        host = ((body.get("data") or {}).get("domains") or {}).get("api")
        if self._switched or not isinstance(host, str) or not host:
            raise PlaudUpstreamError("The Plaud web API keeps redirecting between regions "
                                     "(redirect loop); check PLAUD_API_BASE")
        scheme = urlparse(self.base).scheme or "https"
        self.base = f"{scheme}://{host.removeprefix('https://').rstrip('/')}"
        self._switched = True
        log.info("Plaud web API: switching to the account's region %s", host)

    def list_files(self, tail_hint: str | None = None) -> list[dict[str, Any]]:
        seen: dict[str, dict[str, Any]] = {}
        skip = 0
        while True:
            body = self._call(f"/file/simple/web?skip={skip}&limit={PAGE}&is_trash=0"
                              "&sort_by=start_time&is_desc=true")
            items = body.get("data_file_list")
            if not isinstance(items, list):
                raise PlaudUpstreamError("The Plaud web API's file list has an unexpected "
                                         "shape; nothing was changed")
            for item in items:
                if isinstance(item, dict) and isinstance(item.get("id"), str):
                    seen.setdefault(item["id"], {"id": item["id"],
                                                 "name": item.get("filename") or ""})
            skip += len(items)
            total = body.get("data_file_total")
            if len(items) < PAGE or (isinstance(total, int) and skip >= total):
                return list(seen.values())

    def get_file(self, file_id: str) -> dict[str, Any]:
        data = self._call(f"/file/detail/{quote(file_id, safe='')}").get("data")
        if not isinstance(data, dict):
            raise PlaudUpstreamError(f"The Plaud web API's detail for {file_id} has no data")
        blocks = data.get("content_list")
        for block in blocks if isinstance(blocks, list) else []:
            link = block.get("data_link") if isinstance(block, dict) else None
            ready = block.get("task_status", 1) == 1 if isinstance(block, dict) else False
            if isinstance(link, str) and link and not block.get("data_content") and ready:
                check_link(link, self.base)
                response = self.transport.request("GET", link)  # presigned: no Authorization
                if response.status != 200:
                    raise PlaudUpstreamError(f"A Plaud content link answered HTTP "
                                             f"{response.status}")
                block["data_content"] = response.body.decode("utf-8", errors="replace")
        return data
