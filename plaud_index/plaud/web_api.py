"""``WebClient``: the ``PLAUD_API_TOKEN`` power-user path to Plaud's web-app API (API.md §5).

Never used unless ``PLAUD_API_TOKEN`` is set. Differences from the developer API
that matter: ``skip``/``limit`` paging, errors as HTTP 200 with a negative
``status`` (-3900 = bad token; -302 = "use this regional host", followed
once), transcripts only behind ``content_list`` links (gzip), the summary
inline in ``pre_download_content_list``. Raw dicts out, like ``PlaudClient``.
"""

from __future__ import annotations

import logging
import re
from typing import Any
from urllib.parse import quote, urlparse

from ..errors import PlaudAuthError, PlaudUpstreamError, RecordingGoneError
from ..redact import remember
from .api import check_link
from .settings import DEFAULT_WEB_BASE, LOOPBACK_HOSTS
from .transport import Transport

log = logging.getLogger(__name__)

PAGE = 100
# The web API's regional hosts (API.md §5, §8); a -302 may name another, always *.plaud.ai.
REGION_HOSTS = ("api.plaud.ai", "api-euc1.plaud.ai", "api-apse1.plaud.ai", "api-jp.plaud.ai")
# How a browser shows the token: "bearer eyJ…" (API.md §8); the scheme is ours to add.
_SCHEME = re.compile(r"^\s*bearer\s+", re.IGNORECASE)


def clean_web_token(token: str) -> str:
    """A pasted web token without the ``bearer `` a browser shows before it (any case) and
    without surrounding space or quotes."""
    return _SCHEME.sub("", token.strip().strip("'\"")).strip()


def region_host(domain: str, current_base: str) -> str | None:
    """The base URL a ``-302`` answer points to, if it may be followed: an https
    ``*.plaud.ai`` host (or, in tests, a loopback base while the current one is loopback);
    ``None`` for anything else."""
    text = domain.strip().rstrip("/")
    url = urlparse(text if "://" in text else f"https://{text}")
    host = (url.hostname or "").lower()
    if url.scheme == "https" and (host == "plaud.ai" or host.endswith(".plaud.ai")) \
            and not url.username and url.port in (None, 443):
        return f"https://{host}{url.path}".rstrip("/")
    current = urlparse(current_base)
    if current.scheme == "http" and current.hostname in LOOPBACK_HOSTS and \
            host in LOOPBACK_HOSTS and "://" not in text:
        return f"http://{text}"
    return None
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
        self._token = clean_web_token(token)
        remember(token, self._token)
        self.base = base.rstrip("/")
        self._tags: list[dict[str, Any]] | None = None  # the account's folders, once a walk
        self.transport = transport or Transport(user_agent=BROWSER_HEADERS["User-Agent"])
        self._switched = False

    def _call(self, path: str) -> Any:
        while True:
            response = self.transport.request("GET", f"{self.base}{path}", headers={
                **BROWSER_HEADERS, "Authorization": f"Bearer {self._token}"})
            if response.status == 404:
                raise RecordingGoneError(f"The Plaud web API has no {path.split('?')[0]}")
            if response.status == 401:  # a wrong regional host may say 401, not -302 (§8)
                raise PlaudAuthError(
                    f"Plaud's web API at {urlparse(self.base).hostname} refused the token "
                    "(HTTP 401): either the token expired (copy a fresh one from "
                    "web.plaud.ai) or your account lives in another region (set "
                    f"PLAUD_API_BASE to one of {', '.join('https://' + h for h in REGION_HOSTS)})")
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
        data = body.get("data")
        domains = data.get("domains") if isinstance(data, dict) else None
        host = domains.get("api") if isinstance(domains, dict) else None
        if self._switched or not isinstance(host, str) or not host:
            raise PlaudUpstreamError("The Plaud web API keeps redirecting between regions "
                                     "(redirect loop); check PLAUD_API_BASE")
        base = region_host(host, self.base)
        if base is None:  # the token would go wherever the answer points: never
            raise PlaudUpstreamError(
                f"The Plaud web API asked to switch region to {ascii(host[:80])}, which is "
                "not an https *.plaud.ai host; refused (the token is not sent there). Set "
                "PLAUD_API_BASE to your region's host")
        self.base = base
        self._switched = True
        log.info("Plaud web API: switching to the account's region %s", urlparse(base).hostname)

    def folders(self) -> list[dict[str, Any]]:
        """The account's folders (``GET /filetag/``: id, name), read once per client; a
        failure leaves recordings without folders rather than failing the walk."""
        if self._tags is None:
            try:
                tags = self._call("/filetag/").get("data_filetag_list")
            except (PlaudUpstreamError, RecordingGoneError) as exc:
                log.warning("Cannot read the Plaud folders (%s); recordings are indexed "
                            "without them", exc)
                tags = []
            self._tags = [t for t in tags if isinstance(t, dict)] \
                if isinstance(tags, list) else []
        return self._tags

    def list_files(self, tail_hint: str | None = None) -> list[dict[str, Any]]:
        seen: dict[str, dict[str, Any]] = {}
        self._tags = None  # folders are read again with each walk
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
                    row = {"id": item["id"], "name": item.get("filename") or ""}
                    if isinstance(item.get("filetag_id_list"), list):  # a move is a change
                        row.update(filetag_id_list=item["filetag_id_list"],
                                   filetag_list=self.folders())
                    seen.setdefault(item["id"], row)
            skip += len(items)
            total = body.get("data_file_total")
            if len(items) < PAGE or (isinstance(total, int) and skip >= total):
                return list(seen.values())

    def get_file(self, file_id: str) -> dict[str, Any]:
        data = self._call(f"/file/detail/{quote(file_id, safe='')}").get("data")
        if not isinstance(data, dict):
            raise PlaudUpstreamError(f"The Plaud web API's detail for {file_id} has no data")
        data["filetag_list"] = self.folders()  # the names its filetag_id_list points at
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
