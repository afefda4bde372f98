"""Remote access (``serve --http --public-url``), loopback standing in for the tunnel: the
SDK's OAuth client registers and asks, and gets a token only once the owner approves (on
the loopback-only page, or with the one-time code ``serve`` printed); reaching the pages
grants nothing; a forged, expired, other-audience or revoked token, a replayed code or
refresh token and an unregistered redirect are all refused."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import secrets
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from helpers import http_server
from mcp.shared.auth import OAuthClientInformationFull
from oauth_client import (
    REDIRECT,
    Memory,
    approve_at_the_machine,
    bearer,
    oauth_client,
    request,
    search,
    token,
    two_free_ports,
)
from tunnel import PUBLIC, ThroughTunnel

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def remote(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """One remote-mode server for this module's tests. They all come from one sender
    (loopback), which may register and ask 10 times a minute each (http_guard): the tests
    on it stay under that (9 registrations); more need a server of their own."""
    port = two_free_ports()
    base = f"http://127.0.0.1:{port}"
    with http_server(tmp_path_factory.mktemp("remote"), port, "--public-url", base) as server:
        yield {**server, "base": base, "url": f"{base}/mcp",
               "admin": f"http://127.0.0.1:{port + 1}"}


def owner_sees(log: Path, after: int) -> tuple[str, str]:
    """What ``serve`` told the owner about the newest request: its approval link and
    one-time code."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        said = re.findall(r"on this machine: (\S+/approve/\S+) .*one-time code "
                          r"(\d{4} \d{4} \d{4})",
                          log.read_text()[after:])
        if said:
            return said[-1][0], said[-1][1].replace(" ", "")
        time.sleep(0.1)
    raise AssertionError(log.read_text()[-2000:])


@pytest.fixture(scope="module")
def sdk_approved(remote: dict[str, Any]) -> dict[str, Any]:
    return sdk_flow(remote)


def sdk_flow(remote: dict[str, Any], through: Any = None, transport: Any = None
             ) -> dict[str, Any]:
    """The SDK's OAuth client through the whole flow (``oauth_client``): its client, its
    tokens, what it listed and found, and what --list-clients said after."""
    storage = Memory()
    start = len(remote["log"].read_text())

    def owner() -> None:
        link, _ = owner_sees(remote["log"], start)
        approve_at_the_machine(link)

    provider = oauth_client(remote["url"], storage, owner, through or (lambda u: u))
    tools, top = search(remote["url"], provider, transport)
    listed = subprocess.run([sys.executable, "-m", "plaud_index", "serve", "--list-clients",
                             "--json"], capture_output=True, text=True, cwd=REPO,
                            env=remote["env"], timeout=60)
    return {"tools": tools, "top": top, "client": storage.client, "tokens": storage.tokens,
            "listed": json.loads(listed.stdout)}


def test_the_sdk_oauth_client_gets_a_token_only_after_the_owner_approves(
        sdk_approved: dict[str, Any]) -> None:
    assert "plaud_search" in sdk_approved["tools"] and sdk_approved["top"] == "Q3 budget review"
    tokens = sdk_approved["tokens"]
    assert tokens is not None and tokens.expires_in == 15 * 60
    named = [c for c in sdk_approved["listed"] if c["name"] == "Remote test client"]
    assert len(named) == 1 and named[0]["approved"]


def signed(remote: dict[str, Any], **claims: Any) -> str:
    """An access token signed with this server's key: what a thief of the key could make,
    or a token of another time or another server."""
    key = (remote["home"] / "remote-key").read_bytes()
    body = base64.urlsafe_b64encode(json.dumps(claims).encode()).decode().rstrip("=")
    mac = base64.urlsafe_b64encode(hmac.new(key, body.encode(), hashlib.sha256).digest())
    return f"pim1.{body}.{mac.decode().rstrip('=')}"


def test_forged_expired_and_other_audience_tokens_are_refused(
        remote: dict[str, Any], sdk_approved: dict[str, Any]) -> None:
    good = sdk_approved["tokens"].access_token
    assert bearer(remote, good) == 200
    client_id = sdk_approved["client"].client_id
    now = int(time.time())
    forged = good[:-4] + ("AAAA" if not good.endswith("AAAA") else "BBBB")
    assert bearer(remote, forged) == 401
    assert bearer(remote, "pim1." + secrets.token_urlsafe(40) + "." + secrets.token_urlsafe(32)) \
        == 401
    assert bearer(remote, signed(remote, cid=client_id, aud=remote["url"], exp=now - 1,
                                 iat=now - 901, jti="x", scp=[])) == 401
    assert bearer(remote, signed(remote, cid=client_id, aud="https://other.example/mcp",
                                 exp=now + 600, iat=now, jti="y", scp=[])) == 401
    assert bearer(remote, signed(remote, cid=client_id, aud=remote["url"], exp=now + 600,
                                 iat=time.time(), jti="z", scp=[])) == 200  # a check


def register(remote: dict[str, Any], name: str) -> dict[str, Any]:
    status, _, body = request(f"{remote['base']}/register", json.dumps({
        "client_name": name, "redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none",
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"]}).encode(), {"Content-Type": "application/json"})
    assert status == 201, body
    return dict(json.loads(body))


def authorize(remote: dict[str, Any], client_id: str, redirect: str = REDIRECT
              ) -> tuple[int, dict[str, str], str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()
                                         ).decode().rstrip("=")
    remote["verifier"] = verifier
    return request(f"{remote['base']}/authorize?" + urllib.parse.urlencode({
        "response_type": "code", "client_id": client_id, "redirect_uri": redirect,
        "code_challenge": challenge, "code_challenge_method": "S256", "state": "s1",
        "resource": remote["url"]}))


def test_the_one_time_code_approves_and_replays_are_refused(remote: dict[str, Any]) -> None:
    client = register(remote, "Phone")
    start = len(remote["log"].read_text())
    status, headers, _ = authorize(remote, client["client_id"])
    consent = headers["location"]
    _, code = owner_sees(remote["log"], start)
    wrong = str((int(code) + 1) % 10**12).zfill(12)
    assert request(consent, {"code": wrong})[0] == 200  # counted, nothing granted
    status, headers, _ = request(consent, {"code": code})
    assert status == 302
    granted = urllib.parse.parse_qs(urllib.parse.urlparse(headers["location"]).query)["code"][0]
    exchange = {"grant_type": "authorization_code", "code": granted, "client_id":
                client["client_id"], "redirect_uri": REDIRECT,
                "code_verifier": remote["verifier"]}
    status, first = token(remote, **exchange)
    assert status == 200 and first["access_token"] and first["refresh_token"]
    assert token(remote, **exchange)[0] == 400  # the code again: refused …
    assert bearer(remote, first["access_token"]) == 401  # … and what it gave, revoked
    # a fresh approval, then the refresh chain: each refresh token works once
    start = len(remote["log"].read_text())
    _, headers, _ = authorize(remote, client["client_id"])
    link, _ = owner_sees(remote["log"], start)
    approve_at_the_machine(link)
    query = urllib.parse.parse_qs(urllib.parse.urlparse(
        request(headers["location"])[1]["location"]).query)
    status, pair = token(remote, **{**exchange, "code": query["code"][0],
                                    "code_verifier": remote["verifier"]})
    assert status == 200
    refresh = {"grant_type": "refresh_token", "client_id": client["client_id"]}
    status, rotated = token(remote, **refresh, refresh_token=pair["refresh_token"])
    assert status == 200 and rotated["refresh_token"] != pair["refresh_token"]
    assert bearer(remote, rotated["access_token"]) == 200
    assert token(remote, **refresh, refresh_token=pair["refresh_token"])[0] == 400  # replay
    assert token(remote, **refresh, refresh_token=rotated["refresh_token"])[0] == 400
    assert bearer(remote, rotated["access_token"]) == 401  # the replay revoked the chain


def test_five_wrong_codes_deny_and_an_unregistered_redirect_is_refused(
        remote: dict[str, Any]) -> None:
    """Denied, the waiting page says so and sends the browser nowhere (it was a 302 to the
    client's address: a stranger's client made this host an open redirector)."""
    client = register(remote, "Guesser")
    start = len(remote["log"].read_text())
    _, headers, _ = authorize(remote, client["client_id"])
    _, code = owner_sees(remote["log"], start)
    wrong = str((int(code) + 7) % 10**12).zfill(12)
    for _ in range(4):
        assert request(headers["location"], {"code": wrong})[0] == 200
    status, denied, page = request(headers["location"], {"code": wrong})
    assert status == 403 and "location" not in {k.lower() for k in denied}
    assert "was not approved" in page
    status, after, _ = request(headers["location"], {"code": code})  # too late: decided
    assert status == 403 and "location" not in {k.lower() for k in after}
    assert request(headers["location"])[0] == 403
    status, where, _ = authorize(remote, client["client_id"], "https://evil.example/cb")
    assert status == 400 and "evil.example" not in where.get("location", "")


def registration(remote: dict[str, Any], **fields: Any) -> tuple[int, dict[str, Any]]:
    body = {"client_name": "x", "redirect_uris": [REDIRECT], "token_endpoint_auth_method":
            "none", "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"], **fields}
    status, _, text = request(f"{remote['base']}/register", json.dumps(body).encode(),
                              {"Content-Type": "application/json"})
    return status, json.loads(text)


@pytest.mark.parametrize("uris,why", [
    (["javascript:alert(1)"], "https, or http to a loopback"),
    (["data:text/html,hi"], "https, or http to a loopback"),
    (["http://evil.example/cb"], "https, or http to a loopback"),
    (["https://ok.example/cb#frag"], "without a fragment"),
    ([f"https://ok.example/{i}" for i in range(6)], "1 to 5 redirect URIs"),
    ([], "1 to 5 redirect URIs"),
    (["https://ok.example/" + "a" * 2001], "at most 2000 characters")])
def test_a_redirect_uri_is_https_or_loopback_http_and_a_few_of_them(
        uris: list[str], why: str) -> None:
    from mcp.server.auth.provider import RegistrationError

    from plaud_index.server.client_rules import check_registration

    info = OAuthClientInformationFull.model_validate({"client_id": "c", "client_name": "x",
                                                      "redirect_uris": uris})
    with pytest.raises(RegistrationError, match=re.escape(why)):
        check_registration(info)


@pytest.mark.parametrize("uri", ["https://app.example/callback", "http://127.0.0.1:43110/cb",
                                 "http://localhost:8080/cb", "http://[::1]:9/cb",
                                 "http://127.8.0.1/cb"])
def test_https_and_loopback_redirects_are_accepted(uri: str) -> None:
    from plaud_index.server.client_rules import check_registration

    check_registration(OAuthClientInformationFull.model_validate(
        {"client_id": "c", "client_name": "x", "redirect_uris": [uri]}))


def test_over_the_wire_a_stranger_redirect_and_a_huge_registration_are_refused_unlogged(
        remote: dict[str, Any]) -> None:
    """Registration took javascript: and http://evil.example as redirects, and twenty
    3.9 MB client names, each logged whole (78 MB of log)."""
    before = remote["log"].stat().st_size
    for uris in (["javascript:alert(1)"], ["http://evil.example/cb"]):
        status, answer = registration(remote, redirect_uris=uris)
        assert status == 400, answer
    status, answer = registration(remote, client_name="N" * 101)
    assert status == 400 and answer["error"] == "invalid_client_metadata"
    try:
        status, _ = registration(remote, client_name="N" * 3_900_000)
    except urllib.error.URLError:  # refused before it was all sent
        status = 413
    assert status in (400, 413)
    assert remote["log"].stat().st_size - before < 2000


def test_an_authorization_error_of_an_unapproved_client_is_not_a_redirect(
        remote: dict[str, Any]) -> None:
    """The SDK answers some bad requests with a redirect to the client's address: for a
    client nobody approved, that made this host a redirector to any https address."""
    status, client = registration(remote, client_name="Stranger",
                                  redirect_uris=["https://evil.example/cb"])
    assert status == 201
    status, headers, page = request(f"{remote['base']}/authorize?" + urllib.parse.urlencode({
        "response_type": "code", "client_id": client["client_id"],
        "redirect_uri": "https://evil.example/cb", "state": "s", "scope": "x",
        "code_challenge_method": "plain", "code_challenge": "c" * 43}))
    assert status == 400 and "evil.example" not in headers.get("location", ""), headers
    assert "not approved" in page


def test_a_revoked_client_loses_its_access(remote: dict[str, Any]) -> None:
    client = register(remote, "Revoked later")
    start = len(remote["log"].read_text())
    _, headers, _ = authorize(remote, client["client_id"])
    _, code = owner_sees(remote["log"], start)
    _, approved, _ = request(headers["location"], {"code": code})
    granted = urllib.parse.parse_qs(urllib.parse.urlparse(approved["location"]).query)
    status, pair = token(remote, grant_type="authorization_code", code=granted["code"][0],
                         client_id=client["client_id"], redirect_uri=REDIRECT,
                         code_verifier=remote["verifier"])
    assert status == 200 and bearer(remote, pair["access_token"]) == 200
    done = subprocess.run([sys.executable, "-m", "plaud_index", "serve", "--revoke",
                           client["client_id"]], capture_output=True, text=True, cwd=REPO,
                          env=remote["env"], timeout=60)
    assert done.returncode == 0, done.stderr
    assert bearer(remote, pair["access_token"]) == 401
    status, _ = token(remote, grant_type="refresh_token", client_id=client["client_id"],
                      refresh_token=pair["refresh_token"])
    assert status in (400, 401)


@pytest.fixture(scope="module")
def tunneled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """``serve --http --public-url https://PUBLIC`` behind a tunnel that keeps the public
    Host (``tunnel.py``); ``base`` is the tunnel, as a remote client reaches it."""
    from tunnel import tunnel

    port = two_free_ports()
    with http_server(tmp_path_factory.mktemp("tunneled"), port, "--public-url",
                     f"https://{PUBLIC}") as server, tunnel(port, PUBLIC) as entry:
        base = f"http://127.0.0.1:{entry}"
        yield {**server, "base": base, "url": f"https://{PUBLIC}/mcp", "port": port,
               "through": lambda url: url.replace(f"https://{PUBLIC}", base)}


def test_behind_a_tunnel_that_keeps_the_public_host_a_client_signs_in_searches_and_refreshes(
        tunneled: dict[str, Any]) -> None:
    """Issue 49: an approved client's POST /mcp with Host: <public host> got 421 from the
    SDK's own loopback-only check behind ours."""
    via = tunneled["through"]
    client = register(tunneled, "Phone behind a tunnel")
    start = len(tunneled["log"].read_text())
    status, headers, _ = authorize(tunneled, client["client_id"])
    assert status == 302 and headers["location"].startswith(f"https://{PUBLIC}/consent/")
    _, code = owner_sees(tunneled["log"], start)
    status, headers, _ = request(via(headers["location"]), {"code": code})
    assert status == 302 and headers["location"].startswith(REDIRECT)
    granted = urllib.parse.parse_qs(urllib.parse.urlparse(headers["location"]).query)["code"][0]
    status, pair = token(tunneled, grant_type="authorization_code", code=granted,
                         client_id=client["client_id"], redirect_uri=REDIRECT,
                         code_verifier=tunneled["verifier"])
    assert status == 200, pair
    mcp = f"{tunneled['base']}/mcp"
    assert bearer({"url": mcp}, pair["access_token"]) == 200  # 421 before
    status, rotated = token(tunneled, grant_type="refresh_token",
                            client_id=client["client_id"], refresh_token=pair["refresh_token"])
    assert status == 200 and bearer({"url": mcp}, rotated["access_token"]) == 200
    done = subprocess.run([sys.executable, "-m", "plaud_index", "serve", "--revoke",
                           client["client_id"]], capture_output=True, text=True, cwd=REPO,
                          env=tunneled["env"], timeout=60)
    assert done.returncode == 0, done.stderr
    assert bearer({"url": mcp}, rotated["access_token"]) == 401


def test_behind_a_tunnel_a_foreign_host_is_still_refused(tunneled: dict[str, Any]) -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
    for host in ("evil.example", f"{PUBLIC}.evil.example", "127.0.0.1.nip.io"):
        status, _, _ = request(f"http://127.0.0.1:{tunneled['port']}/mcp", body,
                               {"Host": host, "Authorization": f"Bearer {tunneled['token']}",
                                "Content-Type": "application/json",
                                "Accept": "application/json, text/event-stream"})
        assert status == 421, host


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "[::]"])
def test_a_wildcard_host_is_refused_in_one_line_that_says_what_it_would_expose(
        tmp_path: Path, host: str) -> None:
    done = subprocess.run([sys.executable, "-m", "plaud_index", "serve", "--http", "--host",
                           host, "--port", "1"], capture_output=True, text=True, cwd=REPO,
                          env={**_env(tmp_path)}, timeout=60)
    assert done.returncode == 1 and "every network this machine is on" in done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1


def _env(tmp_path: Path) -> dict[str, str]:
    import os

    return {**os.environ, "PLAUD_INDEX_HOME": str(tmp_path / "home"), "PLAUD_CLIENT": "mock",
            "PLAUD_EMBEDDER": "mock"}


def test_the_authorization_metadata_says_client_documents_are_read(
        remote: dict[str, Any]) -> None:
    """MCP 2026-07-28: a client that only names itself by its metadata document's URL looks
    for this before it tries (the SDK's client does, with client_metadata_url)."""
    status, headers, body = request(f"{remote['base']}/.well-known/oauth-authorization-server")
    metadata = json.loads(body)
    assert status == 200 and metadata["client_id_metadata_document_supported"] is True
    assert metadata["issuer"].rstrip("/") == remote["base"]
    assert metadata["registration_endpoint"].endswith("/register")  # registration stays
    assert int(headers["content-length"]) == len(body.encode())


# --- the pages, in a real browser ---------------------------------------------------------

@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A remote-mode server of their own for the browser tests (each registers a client:
    with the others' they would pass one sender's few a minute)."""
    port = two_free_ports()
    base = f"http://127.0.0.1:{port}"
    with http_server(tmp_path_factory.mktemp("pages"), port, "--public-url", base) as server:
        yield {**server, "base": base, "url": f"{base}/mcp"}


@pytest.fixture
def browser() -> Iterator[Any]:
    from browser import Browser

    chromium = Browser()
    try:
        yield chromium
    finally:
        chromium.close()


@contextmanager
def another_site(html: str) -> Iterator[str]:
    """A page of another origin (another port of this machine): what a site the owner
    visits could serve."""
    import http.server
    import threading

    class Page(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = html.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def asking(remote: dict[str, Any], name: str) -> tuple[str, str, str]:
    """A new client asks: its waiting page, the owner's approval link and the form's nonce."""
    client = register(remote, name)
    start = len(remote["log"].read_text())
    _, headers, _ = authorize(remote, client["client_id"])
    link, _ = owner_sees(remote["log"], start)
    nonce = re.search(r"name=nonce value=([\w-]+)", request(link)[2])
    assert nonce is not None
    return headers["location"], link, nonce.group(1)


def test_the_owner_approves_with_a_click_in_a_real_browser(pages: dict[str, Any],
                                                           browser: Any) -> None:
    remote = pages
    waiting, link, _ = asking(remote, "Clicked")
    assert request(waiting)[0] == 200  # waits
    browser.open(link)
    assert "Approve" in browser.evaluate("document.body.innerText")
    browser.evaluate("document.querySelector('button[value=approve]').click()")
    browser.until(lambda: "You approved" in str(browser.evaluate("document.body.innerText")))
    status, headers, _ = request(waiting)
    assert status == 302 and headers["location"].startswith(REDIRECT)


def test_a_form_posted_from_another_origin_grants_nothing(pages: dict[str, Any],
                                                          browser: Any) -> None:
    """Even with the request's nonce (the worst case: it leaked), a site the owner visits
    cannot approve for them: the browser sends its Origin, and the page refuses it."""
    remote = pages
    waiting, link, nonce = asking(remote, "Forged")
    form = (f'<form method=post action="{link}"><input name=nonce value="{nonce}">'
            '<input name=decision value=approve></form>'
            "<script>document.forms[0].submit()</script>")
    with another_site(form) as site:
        browser.open(site)
        browser.until(lambda: any(url.startswith(link) for url, _, _ in browser.responses()))
    refused = [s for url, s, _ in browser.responses() if url.startswith(link)]
    assert refused == [403], browser.responses()
    assert request(waiting)[0] == 200  # still waiting for the owner


@pytest.mark.parametrize("page", ["approval", "waiting"])
def test_the_pages_cannot_be_framed(pages: dict[str, Any], browser: Any, page: str) -> None:
    remote = pages
    waiting, link, _ = asking(remote, f"Framed {page}")
    target = link if page == "approval" else waiting
    with another_site(f'<iframe src="{target}"></iframe>') as site:
        browser.open(site)
        browser.until(lambda: any("X-Frame-Options" in said for said in browser.said()))
    shown = [(url, s, h) for url, s, h in browser.responses() if url.startswith(target)]
    assert shown and all(h.get("x-frame-options", h.get("X-Frame-Options")) == "DENY"
                         for _, _, h in shown), shown
    assert any("X-Frame-Options" in said for said in browser.said()), browser.said()
    assert request(waiting)[0] == 200


def test_behind_a_tunnel_strangers_cannot_throttle_the_owners_client_or_code(
        tunneled: dict[str, Any]) -> None:
    """Issue 49: behind a tunnel every request came from 127.0.0.1 and shared one bucket:
    eleven bogus POST /token made the approved client's refresh get 429, and the owner's
    correct one-time code got 429 too."""
    via = tunneled["through"]

    def as_stranger(n: int) -> dict[str, str]:
        return {"X-Test-Client-Ip": f"198.51.100.{n}"}

    owner = register(tunneled, "The owner's phone")
    start = len(tunneled["log"].read_text())
    _, headers, _ = authorize(tunneled, owner["client_id"])
    _, code = owner_sees(tunneled["log"], start)
    _, approved, _ = request(via(headers["location"]), {"code": code})
    granted = urllib.parse.parse_qs(urllib.parse.urlparse(approved["location"]).query)
    status, pair = token(tunneled, grant_type="authorization_code", code=granted["code"][0],
                         client_id=owner["client_id"], redirect_uri=REDIRECT,
                         code_verifier=tunneled["verifier"])
    assert status == 200
    for n in range(15):  # strangers' bogus refreshes, from one address and from many
        form = urllib.parse.urlencode({"grant_type": "refresh_token", "client_id":
                                       owner["client_id"], "refresh_token": f"bogus-{n}"})
        status, _, _ = request(f"{tunneled['base']}/token", form.encode(), {
            "Content-Type": "application/x-www-form-urlencoded",
            **as_stranger(7 if n < 12 else n)})
        assert status in (400, 401), status
    status, rotated = token(tunneled, grant_type="refresh_token",
                            client_id=owner["client_id"], refresh_token=pair["refresh_token"])
    assert status == 200, rotated  # never throttled by others' failures
    for _ in range(12):  # a stranger asking again and again is slowed down alone
        status, _, _ = request(f"{tunneled['base']}/authorize?client_id=x", None,
                               as_stranger(9))
    assert status == 429
    stranger = register(tunneled, "A stranger")
    start = len(tunneled["log"].read_text())
    _, theirs, _ = authorize(tunneled, stranger["client_id"])
    owner_sees(tunneled["log"], start)
    for _ in range(5):  # wrong codes on the stranger's own request: it is denied
        request(via(theirs["location"]), {"code": "0" * 12}, as_stranger(9))
    start = len(tunneled["log"].read_text())
    _, mine, _ = authorize(tunneled, owner["client_id"])
    _, code = owner_sees(tunneled["log"], start)
    status, approved, _ = request(via(mine["location"]), {"code": code})
    assert status == 302 and "code=" in approved["location"]  # the owner's code: never 429


def test_behind_a_tunnel_the_sdks_oauth_client_signs_in_and_searches(
        tunneled: dict[str, Any]) -> None:
    """The SDK's own OAuth client, as a remote app runs it: discovery, registration, the
    owner's approval, the token, a search, all through the tunnel with the public Host."""
    found = sdk_flow(tunneled, through=tunneled["through"],
                     transport=ThroughTunnel(PUBLIC, tunneled["base"]))
    assert found["top"] == "Q3 budget review" and "plaud_people" in found["tools"]
    assert found["tokens"] is not None and found["tokens"].refresh_token
    status, rotated = token(tunneled, grant_type="refresh_token",
                            client_id=found["client"].client_id,
                            refresh_token=found["tokens"].refresh_token)
    assert status == 200 and bearer({"url": f"{tunneled['base']}/mcp"},
                                    rotated["access_token"]) == 200
