"""The real Plaud client against the fake Plaud server over loopback (FAKE_SERVER.md §10)."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import stat
import threading
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from conftest import free_port
from fake_plaud import FakePlaud, Rule

from plaud_index.errors import (
    ConfigError,
    LoginError,
    PlaudAuthError,
    PlaudRateLimitedError,
    PlaudTransientError,
    PlaudUnreachableError,
    PlaudUpstreamError,
)
from plaud_index.plaud.api import PlaudClient
from plaud_index.plaud.auth import authorize_url, exchange_code, login
from plaud_index.plaud.documents import normalize_recording
from plaud_index.plaud.refresh import TokenManager
from plaud_index.plaud.settings import PlaudSettings, plaud_settings
from plaud_index.plaud.tokens import FileTokenStore, Tokens, migrate_legacy
from plaud_index.plaud.transport import Transport


@pytest.fixture
def settings(fake: FakePlaud, monkeypatch: pytest.MonkeyPatch) -> PlaudSettings:
    for key, value in fake.env(f"http://localhost:{free_port()}/auth/callback").items():
        monkeypatch.setenv(key, value)
    return plaud_settings(os.environ)


class Sleeps(list[float]):
    def __call__(self, seconds: float) -> None:
        self.append(seconds)


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
def transport(fake: FakePlaud, sleeps: Sleeps) -> Transport:
    return Transport(sleep=sleeps, clock=fake.clock.time, timeout=5)


@pytest.fixture
def store(tmp_path: Path) -> FileTokenStore:
    return FileTokenStore(tmp_path / "tokens" / "tokens.json")


def browser(url: str) -> None:
    """The test "browser": follow the authorize redirect to the loopback callback."""
    def visit() -> None:
        with contextlib.suppress(OSError):  # a 400 page (denied) is still a visit
            urllib.request.urlopen(url, timeout=10).read()

    threading.Thread(target=visit, daemon=True).start()


def signed_in(settings: PlaudSettings, store: FileTokenStore, transport: Transport,
              fake: FakePlaud) -> Tokens:
    return login(settings, store, transport, open_browser=browser, timeout=10,
                 clock=fake.clock.time)


def client(settings: PlaudSettings, store: FileTokenStore, transport: Transport,
           tmp_path: Path, fake: FakePlaud) -> PlaudClient:
    manager = TokenManager(store, settings, transport, tmp_path / "refresh.lock",
                           clock=fake.clock.time)
    return PlaudClient(settings, manager, transport, detail_interval=0)


@pytest.fixture
def api(settings: PlaudSettings, store: FileTokenStore, transport: Transport, tmp_path: Path,
        fake: FakePlaud) -> PlaudClient:
    signed_in(settings, store, transport, fake)
    return client(settings, store, transport, tmp_path, fake)


# 1. login happy path -------------------------------------------------------------------
def test_login_happy_path(settings: PlaudSettings, store: FileTokenStore,
                          transport: Transport, fake: FakePlaud, api: PlaudClient) -> None:
    authorize = fake.requests("/platform/oauth")[0]["query"]
    assert authorize["client_id"] == settings.client_id
    assert authorize["redirect_uri"] == settings.callback_url
    assert authorize["response_type"] == "code" and authorize["code_challenge_method"] == "S256"
    assert authorize["state"] and "scope" not in authorize
    exchange = fake.requests("/access-token", "POST")[0]
    assert exchange["headers"]["authorization"].startswith("Basic ")
    assert exchange["headers"]["content-type"] == "application/x-www-form-urlencoded"
    assert set(exchange["form"]) == {"code", "redirect_uri", "code_verifier", "state"}
    tokens = store.load()
    assert tokens is not None and tokens.token_type == "Bearer"
    assert tokens.expires_at == int(fake.clock.time() * 1000) + 86_400_000
    assert stat.S_IMODE(store.path.stat().st_mode) == 0o600
    assert api.current_user()["nickname"] == "Tester"


# 2. login failures ---------------------------------------------------------------------
def test_login_denied_says_so_and_never_exchanges(settings: PlaudSettings, store:
                                                 FileTokenStore, transport: Transport,
                                                 fake: FakePlaud) -> None:
    fake.config.authorize_mode = "deny"
    with pytest.raises(LoginError, match="denied"):
        signed_in(settings, store, transport, fake)
    assert not fake.requests("/access-token") and store.load() is None


@pytest.mark.parametrize("mode", ["wrong_state", "no_code", "hang"])
def test_login_without_a_valid_callback_times_out_without_exchanging(
        mode: str, settings: PlaudSettings, store: FileTokenStore, transport: Transport,
        fake: FakePlaud) -> None:
    fake.config.authorize_mode = mode
    with pytest.raises(LoginError, match="No sign-in arrived") as failure:
        login(settings, store, transport, open_browser=browser, timeout=1.5)
    assert not fake.requests("/access-token")
    assert ("wrong state were ignored" in str(failure.value)) == (mode == "wrong_state")


def test_reused_code_and_bad_verifier_are_refused(settings: PlaudSettings,
                                                  transport: Transport, fake: FakePlaud) -> None:
    from plaud_index.plaud.auth import challenge_for, make_state, make_verifier

    verifier, state = make_verifier(), make_state()
    url = authorize_url(settings, challenge_for(verifier), state)
    opener = urllib.request.build_opener(NoFollow)
    location = opener.open(url).headers["Location"]
    code = urllib.parse.parse_qs(urllib.parse.urlparse(location).query)["code"][0]
    with pytest.raises(LoginError):
        exchange_code(settings, transport, code, make_verifier(), state, 0)  # wrong verifier
    entry = fake.codes[code]
    entry["used"] = False
    exchange_code(settings, transport, code, verifier, state, 0)
    with pytest.raises(LoginError, match="refused"):
        exchange_code(settings, transport, code, verifier, state, 0)  # reused


class NoFollow(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None

    def http_error_302(self, req: Any, fp: Any, code: int, msg: str, headers: Any) -> Any:
        return fp


def test_login_with_the_port_busy_says_what_to_do(settings: PlaudSettings,
                                                  store: FileTokenStore,
                                                  transport: Transport) -> None:
    port = urllib.parse.urlparse(settings.callback_url).port
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", port))
        busy.listen()
        with pytest.raises(LoginError, match="another Plaud login may still be running"):
            login(settings, store, transport, open_browser=None, timeout=1)


# 3. legacy import ----------------------------------------------------------------------
def test_legacy_token_file_is_imported_once(settings: PlaudSettings, store: FileTokenStore,
                                            transport: Transport, fake: FakePlaud,
                                            tmp_path: Path) -> None:
    other = FileTokenStore(tmp_path / "elsewhere.json")
    signed_in(settings, other, transport, fake)
    legacy = tmp_path / ".plaud" / "tokens-mcp.json"
    legacy.parent.mkdir()
    legacy.write_text(json.dumps({**other.load().to_json(), "client": "mcp"}))  # type: ignore[union-attr]
    assert migrate_legacy(store, legacy)
    assert not migrate_legacy(store, legacy)  # only once
    assert client(settings, store, transport, tmp_path, fake).list_files() == []


# 4-7. refresh --------------------------------------------------------------------------
def test_proactive_refresh_rotates_and_persists_before_use(
        settings: PlaudSettings, store: FileTokenStore, transport: Transport, fake: FakePlaud,
        tmp_path: Path) -> None:
    fake.config.access_ttl = 5
    signed_in(settings, store, transport, fake)
    before = store.load()
    fake.clock.advance(10)
    api = client(settings, store, transport, tmp_path, fake)
    api.list_files()
    after = store.load()
    assert before and after and after.refresh_token != before.refresh_token
    refreshes = fake.requests("/access-token/refresh")
    assert len(refreshes) == 1 and fake.log.index(refreshes[0]) < fake.log.index(
        fake.requests("/files/")[0])
    reuse = transport.request("POST", settings.refresh_url, retry=False,
                              data=f"refresh_token={before.refresh_token}".encode(),
                              headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert reuse.status == 401  # the old refresh token is dead


def test_reactive_refresh_once_for_many_concurrent_401s(api: PlaudClient, fake: FakePlaud,
                                                        store: FileTokenStore) -> None:
    fake.seed(5)
    token = store.load()
    assert token is not None
    fake.access[token.access_token]["revoked"] = True  # expire_access_now
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda _: len(api.list_files()), range(8)))
    assert results == [5] * 8
    assert len(fake.requests("/access-token/refresh")) == 1


def test_rejected_refresh_says_re_login_without_a_storm(api: PlaudClient, fake: FakePlaud,
                                                        store: FileTokenStore) -> None:
    fake.config.refresh_mode = "reject"
    fake.access[store.load().access_token]["revoked"] = True  # type: ignore[union-attr]
    for _ in range(3):
        with pytest.raises(PlaudAuthError, match="plaud-index-mcp login"):
            api.list_files()
    assert len(fake.requests("/access-token/refresh")) == 1
    assert store.load() is not None  # kept for inspection; login replaces them


def test_refresh_expires_after_seven_idle_days(api: PlaudClient, fake: FakePlaud) -> None:
    fake.config.refresh_mode = "expire_after_idle"
    fake.clock.advance(8 * 86400)
    with pytest.raises(PlaudAuthError, match="plaud-index-mcp login"):
        api.list_files()


def test_transient_refresh_failure_keeps_tokens(settings: PlaudSettings, store: FileTokenStore,
                                                transport: Transport, fake: FakePlaud,
                                                tmp_path: Path) -> None:
    signed_in(settings, store, transport, fake)
    fake.config.refresh_mode, fake.config.transient_left = "transient", 3
    fake.clock.advance(86400)
    kept = store.load()
    for _ in range(3):
        with pytest.raises(PlaudTransientError):
            client(settings, store, transport, tmp_path, fake).list_files()
        assert store.load() == kept
    assert client(settings, store, transport, tmp_path, fake).list_files() == []


# 8-9. list walk ------------------------------------------------------------------------
def test_full_list_walk_stops_on_the_short_page(api: PlaudClient, fake: FakePlaud) -> None:
    fake.seed(237)
    files = api.list_files()
    assert len(files) == 237 and len({f["id"] for f in files}) == 237
    pages = [r["query"] for r in fake.requests("/files/")]
    assert [p["page"] for p in pages] == ["1", "2", "3"]
    assert all(10 <= int(p["page_size"]) <= 100 for p in pages)


def test_list_walk_honours_a_capped_page_size(api: PlaudClient, fake: FakePlaud) -> None:
    fake.seed(120)
    fake.config.cap_page_size = 50
    assert len(api.list_files()) == 120
    assert len(fake.requests("/files/")) == 3


def test_list_walk_dedups_inserts_during_the_walk(api: PlaudClient, fake: FakePlaud) -> None:
    fake.seed(150)
    fake.config.insert_during_walk = 5
    files = api.list_files()
    assert len(files) == len({f["id"] for f in files})
    assert len(api.list_files()) == 155  # the next walk sees everything


def test_repeating_pages_end_with_an_error(api: PlaudClient, fake: FakePlaud) -> None:
    fake.seed(150)
    fake.config.repeat_pages = True
    with pytest.raises(PlaudUpstreamError, match="Pagination repeated"):
        api.list_files()


def test_forced_422_is_surfaced_with_loc_and_msg(api: PlaudClient, fake: FakePlaud) -> None:
    api.page_size = 5  # bypass the client's own clamp to provoke the server
    with pytest.raises(PlaudUpstreamError, match="query.page_size: Input should be greater"):
        api.list_files()


# 10-11. details and links --------------------------------------------------------------
@pytest.mark.parametrize("encoding", ["gzip_header", "gzip_raw", "plain"])
def test_link_only_blocks_are_fetched_without_auth_and_normalised(
        encoding: str, api: PlaudClient, fake: FakePlaud) -> None:
    fake.config.link_encoding = encoding
    linked = fake.add_file(1, link_only=True, topic="warehouse robots")
    inline = fake.add_file(2, topic="office move")
    for f in (linked, inline):
        recording = normalize_recording(api.get_file(f["id"]))
        assert len(recording.utterances) == 6 and recording.utterances[0].start_ms == 0
        assert recording.notes and recording.created_at.tzinfo is not None
    assert "warehouse robots" in normalize_recording(api.get_file(linked["id"])).notes[0].text
    assert all("authorization" not in r["headers"] for r in fake.requests("/s3/"))


def test_expired_link_refetches_the_detail_once(api: PlaudClient, fake: FakePlaud) -> None:
    f = fake.add_file(1, link_only=True)
    fake.faults.append(Rule(path="^/s3/content/", action="status", times=1,
                            args={"code": 403}))
    assert normalize_recording(api.get_file(f["id"])).utterances
    assert len(fake.requests(f"/files/{f['id']}")) == 2


def test_oversized_link_body_is_refused(settings: PlaudSettings, store: FileTokenStore,
                                        fake: FakePlaud, tmp_path: Path) -> None:
    signed_in(settings, store, Transport(), fake)
    small = Transport(sleep=lambda s: None, max_bytes=300)
    f = fake.add_file(1, link_only=True, topic="x" * 2000)
    fake.config.link_encoding = "plain"
    with pytest.raises(PlaudUpstreamError, match="larger than"):
        client(settings, store, small, tmp_path, fake).get_file(f["id"])


def test_unknown_recording_is_a_clear_error(api: PlaudClient) -> None:
    from plaud_index.errors import RecordingGoneError

    with pytest.raises(RecordingGoneError):
        api.get_file("0" * 32)


# 12-13. rate limits, 5xx, network faults ------------------------------------------------
def test_429_waits_for_retry_after(api: PlaudClient, fake: FakePlaud, sleeps: Sleeps) -> None:
    fake.faults.append(Rule(path="/files/", action="status", args={"code": 429,
                                                                   "retry_after": 2}))
    api.list_files()
    assert sleeps == [2.0]


def test_429_http_date_and_plain_backoff(api: PlaudClient, fake: FakePlaud,
                                         sleeps: Sleeps) -> None:
    import email.utils

    when = email.utils.formatdate(fake.clock.time() + 7, usegmt=True)
    fake.faults += [Rule(path="/files/", action="status", args={"code": 429,
                                                                "retry_after": when}),
                    Rule(path="/files/", action="status", times=2, args={"code": 429})]
    api.list_files()
    assert sleeps[0] == pytest.approx(7, abs=1) and sleeps[1:] == [2.0, 4.0]


def test_persistent_429_gives_up_for_this_cycle(api: PlaudClient, fake: FakePlaud) -> None:
    fake.faults.append(Rule(path="/files/", action="status", times=None, args={"code": 429}))
    with pytest.raises(PlaudRateLimitedError, match="rate-limiting.*sign-in is fine"):
        api.list_files()


def test_persistent_5xx_blames_plauds_side(api: PlaudClient, fake: FakePlaud) -> None:
    fake.faults.append(Rule(path="/files/", action="status", times=None, args={"code": 503}))
    with pytest.raises(PlaudTransientError, match="HTTP 503.*Plaud's side") as caught:
        api.list_files()
    assert not isinstance(caught.value, (PlaudRateLimitedError, PlaudUnreachableError))


def test_an_unreachable_plaud_is_not_called_a_sign_in_problem(
        settings: PlaudSettings, store: FileTokenStore, fake: FakePlaud, tmp_path: Path) -> None:
    quick = Transport(sleep=lambda s: None)
    signed_in(settings, store, quick, fake)
    api = client(settings, store, quick, tmp_path, fake)
    fake.stop()  # nothing listens on that port any more
    with pytest.raises(PlaudUnreachableError, match="Cannot reach Plaud.*sign-in is kept"):
        api.list_files()


@pytest.mark.parametrize("action,args", [("status", {"code": 503}), ("status", {"code": 502}),
                                         ("drop", {}), ("reset_mid_body", {})])
def test_5xx_and_broken_connections_are_retried(api: PlaudClient, fake: FakePlaud,
                                                action: str, args: dict[str, Any]) -> None:
    fake.seed(3)
    fake.faults.append(Rule(path="/files/", action=action, times=3, args=args))
    assert len(api.list_files()) == 3


def test_timeouts_are_retried(settings: PlaudSettings, store: FileTokenStore, fake: FakePlaud,
                              tmp_path: Path) -> None:
    quick = Transport(sleep=lambda s: None, timeout=0.5)
    signed_in(settings, store, quick, fake)
    fake.faults.append(Rule(path="/files/", action="delay", args={"seconds": 1.5}))
    assert client(settings, store, quick, tmp_path, fake).list_files() == []


# 14-15. malformed answers, Cloudflare, the User-Agent -----------------------------------
@pytest.mark.parametrize("action,args", [
    ("truncated", {}), ("html", {}), ("empty", {}), ("wrong_shape", {}),
    ("wrong_shape", {"body": []}), ("wrong_shape", {"body": {"data": None}}),
    ("cloudflare_403", {}), ("redirect", {"to": "http://evil.example/steal"}),
])
def test_malformed_answers_are_explicit_upstream_errors(api: PlaudClient, fake: FakePlaud,
                                                        action: str,
                                                        args: dict[str, Any]) -> None:
    fake.seed(3)
    fake.faults.append(Rule(path="/files/", action=action, args=args))
    with pytest.raises(PlaudUpstreamError):
        api.list_files()


def test_the_default_urllib_user_agent_is_blocked_ours_is_not(api: PlaudClient,
                                                              fake: FakePlaud) -> None:
    request = urllib.request.Request(f"{fake.base_url}/developer/api/open/third-party/files/")
    with pytest.raises(urllib.error.HTTPError) as blocked:
        urllib.request.urlopen(request)
    assert blocked.value.code == 403
    assert api.list_files() == []


# 16. revoke ----------------------------------------------------------------------------
def test_after_revoke_the_client_says_re_login(api: PlaudClient, fake: FakePlaud) -> None:
    api.revoke()
    with pytest.raises(PlaudAuthError, match="plaud-index-mcp login"):
        api.list_files()
    assert fake.requests("/access-token/refresh")[-1]["status"] == 401


@pytest.mark.parametrize(("name", "check"), [
    ("inline_full", lambda r: len(r.utterances) == 6 and r.notes[0].text.startswith("Discussed")),
    ("note_json_wrapped", lambda r: r.notes[0].heading == "Summary"),
    ("link_only_transcript", lambda r: len(r.utterances) == 6),
    ("link_only_polish", lambda r: r.utterances[0].text.startswith("Point 0")),
    ("gzip_raw_link", lambda r: len(r.utterances) == 6),
    ("unprocessed", lambda r: not r.has_content and r.duration_ms == 0),
    ("null_speakers", lambda r: [(u.speaker, u.end_ms) for u in r.utterances] == [
        ("Speaker 1", 1000), ("Speaker 2", 2000), ("Speaker 1", 2000)]),
    ("multi_notes", lambda r: [n.note_title for n in r.notes] == [
        "Summary", "Meeting Minutes", "Custom"]),
    ("note_error", lambda r: [n.error_code for n in r.notes] == [10] and
     len(r.utterances) == 6),
    ("unicode", lambda r: r.utterances[0].text == "会议 🎉 שלום" and "🎉" in r.title),
    ("long", lambda r: len(r.utterances) == 5000),
    ("weird_id", lambda r: r.file_id == "id with/slash?&%"),
    ("micro_ts", lambda r: r.start_at is not None and r.start_at.microsecond == 123456
     and r.created_at.tzinfo is not None),
    ("string_duration", lambda r: r.duration_ms == 600_000),
    ("no_serial", lambda r: r.created_at.tzinfo is not None),
])
def test_every_special_fixture_normalises(name: str, check: Any, api: PlaudClient,
                                          fake: FakePlaud) -> None:
    f = fake.add_special(name)
    assert check(normalize_recording(api.get_file(f["id"])))


def test_pacer_starts_near_one_per_second_speeds_up_and_backs_off() -> None:
    from plaud_index.plaud.api import Pacer

    now = [0.0]
    waits: list[float] = []
    pressure = [0]

    def sleep(seconds: float) -> None:
        waits.append(round(seconds, 3))
        now[0] += seconds

    pacer = Pacer(1.0, pressure=lambda: pressure[0], sleep=sleep, clock=lambda: now[0])
    for _ in range(31):
        pacer.wait()
    assert waits[0] == 1.0 and waits[-1] < 0.7  # faster while nothing is retried
    pressure[0] += 1  # the transport had to retry (a 429, a 5xx)
    pacer.wait()
    assert waits[-1] > waits[-2] * 1.9


def test_list_walk_picks_up_a_deletion_during_the_walk_next_cycle(api: PlaudClient,
                                                                  fake: FakePlaud) -> None:
    fake.seed(150)
    fake.config.delete_during_walk = 5
    first = {f["id"] for f in api.list_files()}
    second = {f["id"] for f in api.list_files()}
    assert second == {f["id"] for f in fake.files} and len(second) == 145
    assert len(first) >= 140  # a shifted page may miss a few; the next walk is exact


@pytest.mark.parametrize("body", [
    {"type": "files", "data": [], "page": 1, "page_size": 100},
    {"data": [], "page": 1},
    {"data": {"data": []}},
])
def test_list_envelope_variants_are_accepted(api: PlaudClient, fake: FakePlaud,
                                             body: dict[str, Any]) -> None:
    fake.faults.append(Rule(path="/files/$", action="wrong_shape", args={"body": body}))
    assert api.list_files() == []


def test_string_durations_in_the_list_are_tolerated(api: PlaudClient, fake: FakePlaud) -> None:
    f = fake.add_file(1)
    f["duration"] = "83000"
    assert api.list_files()[0]["duration"] == "83000"
    assert normalize_recording(api.get_file(f["id"])).duration_ms == 83000


# login: what the browser is told, and a listener nothing can block -------------------
def wait_for(condition: Any, seconds: float = 30) -> None:
    """Poll a condition that another thread makes true (the browser reading its page)."""
    done = threading.Event()
    for _ in range(int(seconds / 0.02)):
        if condition():
            return
        done.wait(0.02)
    pytest.fail("the condition never became true")


def page_browser(pages: list[tuple[int, str]]) -> Any:
    """A test browser that records the page the callback answers (status, text)."""
    def open_browser(url: str) -> None:
        def visit() -> None:
            try:
                with urllib.request.urlopen(url, timeout=30) as response:
                    pages.append((response.status, response.read().decode()))
            except urllib.error.HTTPError as error:
                pages.append((error.code, error.read().decode()))

        threading.Thread(target=visit, daemon=True).start()

    return open_browser


def test_the_browser_says_signed_in_only_after_the_exchange(
        settings: PlaudSettings, store: FileTokenStore, transport: Transport,
        fake: FakePlaud) -> None:
    pages: list[tuple[int, str]] = []
    login(settings, store, transport, open_browser=page_browser(pages), timeout=10)
    # login() returns only after the listener closed, which waits for the page to be sent
    wait_for(lambda: bool(pages))
    assert pages[0][0] == 200 and "Signed in" in pages[0][1]


def test_a_failed_exchange_shows_the_failure_page(settings: PlaudSettings,
                                                  store: FileTokenStore,
                                                  fake: FakePlaud) -> None:
    fake.faults.append(Rule(path="/access-token$", action="status", args={"code": 400}))
    pages: list[tuple[int, str]] = []
    with pytest.raises(LoginError):
        login(settings, store, Transport(sleep=lambda s: None),
              open_browser=page_browser(pages), timeout=10)
    wait_for(lambda: bool(pages))
    assert pages[0][0] == 502 and "Sign-in failed" in pages[0][1]
    assert "Signed in" not in pages[0][1] and store.load() is None


def test_an_idle_connection_does_not_block_the_real_callback(
        settings: PlaudSettings, store: FileTokenStore, transport: Transport,
        fake: FakePlaud) -> None:
    port = urllib.parse.urlparse(settings.callback_url).port
    idle: list[socket.socket] = []

    def open_browser(url: str) -> None:
        idle.append(socket.create_connection(("127.0.0.1", port)))  # connects, says nothing
        browser(url)

    try:
        tokens = login(settings, store, transport, open_browser=open_browser, timeout=10)
    finally:
        for sock in idle:
            sock.close()
    assert tokens.access_token and store.load() is not None


def test_an_ipv6_callback_listens_on_ipv6(fake: FakePlaud, store: FileTokenStore,
                                          transport: Transport) -> None:
    if not socket.has_ipv6:
        pytest.fail("this machine has no IPv6 loopback")
    settings = plaud_settings({**fake.env(f"http://[::1]:{free_port()}/auth/callback")})
    tokens = login(settings, store, transport, open_browser=browser, timeout=10)
    assert tokens.access_token


@pytest.mark.parametrize("url", ["http://localhost:99999/cb", "http://localhost:abc/cb",
                                 "https://localhost:8199/cb", "http://example.com:8199/cb"])
def test_a_bad_callback_url_is_a_clear_error(fake: FakePlaud, store: FileTokenStore,
                                             transport: Transport, url: str) -> None:
    settings = plaud_settings({**fake.env(url)})
    with pytest.raises(ConfigError, match="PLAUD_CALLBACK_URL must be"):
        login(settings, store, transport, open_browser=browser, timeout=1)


@pytest.mark.parametrize(("region", "base", "header"), [
    (None, "https://platform.plaud.ai/developer/api", None),
    ("eu", "https://platform-eu.plaud.ai/developer/api", "eu"),
    ("EU ", "https://platform-eu.plaud.ai/developer/api", "eu"),
    ("us", "https://platform.plaud.ai/developer/api", "us"),
    ("mars", "https://platform.plaud.ai/developer/api", None),  # unknown: the default
])
def test_a_region_picks_plauds_host_for_it(region: str | None, base: str,
                                           header: str | None) -> None:
    settings = plaud_settings({"PLAUD_REGION": region} if region else {})
    assert settings.api_base == base and settings.region == header
    assert settings.token_url == f"{base}/oauth/third-party/access-token"


def test_a_region_is_sent_as_plauds_routing_header(fake: FakePlaud, settings: PlaudSettings,
                                                   store: FileTokenStore, transport: Transport,
                                                   tmp_path: Path) -> None:
    from dataclasses import replace

    signed_in(settings, store, transport, fake)
    client(replace(settings, region="eu"), store, transport, tmp_path, fake).current_user()
    assert fake.requests("/users/current")[-1]["headers"].get("x-pld-region") == "eu"
