"""The remote authorization's rules, unit by unit with a clock of the test's own: what a
stranger can ask for, how often, and what it can never cost the owner (issue 49)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.server.auth.provider import AuthorizationParams, AuthorizeError
from mcp.shared.auth import OAuthClientInformationFull
from pydantic import AnyUrl

from plaud_index.server.http_guard import EVERYONE_BURST, Guard, RateLimit, sender
from plaud_index.server.remote_auth import (
    CODE_DIGITS,
    CODE_TRIES,
    MAX_PENDING,
    WRONG_CODES_A_DAY,
    RemoteAuthority,
    spaced,
)

PUBLIC = "https://plaud.example.ts.net"


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def authority(tmp_path: Path, clock: Clock) -> tuple[RemoteAuthority, list[Any]]:
    told: list[Any] = []
    return RemoteAuthority(tmp_path, PUBLIC, told.append, "local-token" * 4, clock), told


def client(n: int = 0) -> OAuthClientInformationFull:
    return OAuthClientInformationFull.model_validate({
        "client_id": f"client-{n}", "client_name": f"App {n}",
        "redirect_uris": ["https://app.example/cb"]})


def params() -> AuthorizationParams:
    return AuthorizationParams(state="s", scopes=[], code_challenge="c" * 43,
                               redirect_uri=AnyUrl("https://app.example/cb"),
                               redirect_uri_provided_explicitly=True,
                               resource=f"{PUBLIC}/mcp")


def ask(authority: RemoteAuthority, n: int = 0) -> str:
    anyio.run(authority.register_client, client(n))
    return str(anyio.run(authority.authorize, client(n), params())).rsplit("/", 1)[-1]


def test_the_one_time_code_is_twelve_digits_shown_in_fours(
        authority: tuple[RemoteAuthority, list[Any]]) -> None:
    auth, told = authority
    ask(auth)
    code = told[0].code
    assert len(code) == CODE_DIGITS == 12 and code.isdigit()
    assert spaced(code) == f"{code[:4]} {code[4:8]} {code[8:]}"
    assert auth.try_code(told[0].ident, spaced(code)).decision == "approved"  # spaces too


def test_a_days_wrong_codes_pause_every_code_and_the_loopback_page_still_approves(
        authority: tuple[RemoteAuthority, list[Any]], clock: Clock) -> None:
    """At most WRONG_CODES_A_DAY wrong guesses a day: 18,250 a year against 10^12 codes,
    under one in a million a year (docs/remote.md)."""
    auth, told = authority
    assert WRONG_CODES_A_DAY * 365 / 10**CODE_DIGITS < 1e-6
    for n in range(WRONG_CODES_A_DAY // CODE_TRIES):
        ident = ask(auth, n)
        for _ in range(CODE_TRIES):
            auth.try_code(ident, "0" * 12 if told[-1].code != "0" * 12 else "1" * 12)
        clock.now += 60
    owner = ask(auth, 999)
    assert auth.paused()
    right = told[-1].code
    assert auth.try_code(owner, right).decision is None  # even the right code, today
    assert auth.decide(owner, True).decision == "approved"  # the owner at the machine
    clock.now += 24 * 3600 + 1
    later = ask(auth, 1000)
    assert not auth.paused() and auth.try_code(later, told[-1].code).decision == "approved"


def test_pending_requests_are_bounded_and_no_code_is_shown_past_the_bound(
        authority: tuple[RemoteAuthority, list[Any]]) -> None:
    auth, told = authority
    for n in range(MAX_PENDING):
        ask(auth, n)
    with pytest.raises(AuthorizeError):
        ask(auth, MAX_PENDING)
    assert len(told) == MAX_PENDING


def test_only_our_page_or_an_approved_client_is_redirected_to(
        authority: tuple[RemoteAuthority, list[Any]]) -> None:
    auth, told = authority
    ident = ask(auth, 1)
    assert auth.may_redirect("client-1", f"{PUBLIC}/consent/{ident}")
    assert not auth.may_redirect("client-1", "https://app.example/cb?error=invalid_request")
    auth.try_code(ident, told[-1].code)
    assert auth.may_redirect("client-1", "https://app.example/cb?code=x")
    assert not auth.may_redirect("client-2", "https://app.example/cb")


def scope(peer: str, forwarded: str | None = None) -> dict[str, Any]:
    headers = [(b"x-forwarded-for", forwarded.encode())] if forwarded else []
    return {"type": "http", "client": (peer, 5000), "headers": headers}


def test_behind_a_tunnel_the_sender_is_what_the_tunnel_appended() -> None:
    assert sender(scope("127.0.0.1", "203.0.113.7"), behind_tunnel=True) == "203.0.113.7"
    # what the sender wrote itself comes first; the tunnel's word is the last
    assert sender(scope("127.0.0.1", "127.0.0.1, 198.51.100.2"), True) == "198.51.100.2"
    assert sender(scope("127.0.0.1", "203.0.113.7"), behind_tunnel=False) == "127.0.0.1"
    assert sender(scope("192.0.2.9", "203.0.113.7"), behind_tunnel=True) == "192.0.2.9"


def test_each_sender_asks_a_few_times_a_minute_and_everyone_within_one_budget(
        clock: Clock) -> None:
    async def app(*args: Any) -> None:
        pass

    async def never(token: str) -> bool:
        return False

    guard = Guard(app, hosts=set(), origins=set(), verify=never,
                  limit=RateLimit(clock=clock), behind_tunnel=True)
    for _ in range(9):  # one stranger's burst: its own bucket
        assert guard._may_ask("203.0.113.7", "register")
    owner_first = guard._may_ask("198.51.100.2", "register")
    assert owner_first
    for n in range(EVERYONE_BURST):  # a thousand strangers share one budget
        guard._may_ask(f"10.0.{n // 250}.{n % 250}", "register")
    assert not guard._may_ask("198.51.100.2", "register")  # the budget of everyone
    clock.now += 61
    assert guard._may_ask("198.51.100.2", "register")
    small = RateLimit(burst=1, keys=3, clock=clock)
    for n in range(100):
        small.allow(f"sender-{n}")
    assert len(small._seen) == 3


# --- the ledger: bounded, and never read as empty in silence ------------------------------

def test_waiting_clients_are_capped_and_forgotten_after_a_day(
        authority: tuple[RemoteAuthority, list[Any]], clock: Clock) -> None:
    from mcp.server.auth.provider import RegistrationError

    from plaud_index.server.remote_ledger import MAX_WAITING

    auth, _ = authority
    for n in range(MAX_WAITING):
        anyio.run(auth.register_client, client(n))
    with pytest.raises(RegistrationError, match="wait for the owner"):
        anyio.run(auth.register_client, client(MAX_WAITING))
    clock.now += 24 * 3600 + 1
    anyio.run(auth.register_client, client(MAX_WAITING))  # the stale ones are gone
    assert len(auth.ledger.clients) == 1


def test_a_clients_used_refresh_tokens_are_its_last_few(clock: Clock) -> None:
    from plaud_index.server.remote_ledger import (
        USED_KEPT,
        ClientRecord,
        Ledger,
        RefreshRecord,
        prune,
    )

    ledger = Ledger({"c": ClientRecord({}, registered=1.0, approved=1.0)},
                    {f"r{i}": RefreshRecord("c", clock.now + 99, [], used=float(i + 1))
                     for i in range(50)} | {"live": RefreshRecord("c", clock.now + 99, []),
                                            "old": RefreshRecord("c", clock.now - 1, [])})
    prune(ledger, clock.now)
    used = sorted(k for k, v in ledger.refresh.items() if v.used is not None)
    assert len(used) == USED_KEPT and "r49" in used and "r0" not in used
    assert "live" in ledger.refresh and "old" not in ledger.refresh


@pytest.mark.parametrize("damage", ["garbage", "oversized", "not a ledger"])
def test_list_clients_and_revoke_report_and_repair_a_ledger_that_cannot_be_read(
        tmp_path: Path, damage: str) -> None:
    """Past 64 MiB the ledger was not read: --list-clients said "No remote client has
    registered." and --revoke exited 1 with nothing said."""
    import json
    import os
    import subprocess
    import sys

    from plaud_index.home import Home

    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    ledger = Home(home).remote_clients
    if damage == "oversized":
        with ledger.open("wb") as fh:
            fh.truncate(65 * 1024 * 1024)  # sparse: the size, not the disk
    else:
        ledger.write_text("{\x00 not json" if damage == "garbage" else json.dumps([1, 2]))
    env = {**os.environ, "PLAUD_INDEX_HOME": str(home), "PLAUD_CLIENT": "mock"}
    listed = subprocess.run([sys.executable, "-m", "plaud_index", "serve", "--list-clients"],
                            capture_output=True, text=True, env=env, timeout=60)
    assert listed.returncode == 0
    assert "could not be read" in listed.stderr and "set aside as" in listed.stderr
    assert listed.stdout.strip() == "No remote client is registered now."
    assert not ledger.exists() and list(home.glob(f"{ledger.name}.damaged-*"))
    revoked = subprocess.run([sys.executable, "-m", "plaud_index", "serve", "--revoke", "x"],
                             capture_output=True, text=True, env=env, timeout=60)
    assert revoked.returncode == 1 and "No remote client 'x'" in revoked.stderr


# --- Client ID Metadata Documents -----------------------------------------------------------

DOC_URL = "https://app.example/oauth/client.json"


def document(**fields: Any) -> bytes:
    import json

    return json.dumps({"client_id": DOC_URL, "client_name": "Example app",
                       "redirect_uris": ["https://app.example/cb"], **fields}).encode()


@pytest.mark.parametrize("client_id,named", [
    (DOC_URL, True), ("https://app.example/", False), ("https://app.example", False),
    ("http://app.example/client.json", False), ("client-7f3a", False)])
def test_a_client_id_is_a_document_url_when_it_is_https_with_a_path(
        client_id: str, named: bool) -> None:
    from plaud_index.server.client_documents import is_document_id

    assert is_document_id(client_id) is named


@pytest.mark.parametrize("addresses", [["127.0.0.1"], ["10.0.0.5"], ["192.168.1.20"],
                                       ["169.254.169.254"], ["::1"], ["fd00::1"],
                                       ["::ffff:192.168.1.1"], ["100.64.0.1"], ["0.0.0.0"],
                                       ["93.184.216.34", "10.0.0.1"], []])
def test_a_document_is_never_fetched_from_this_machine_or_a_private_network(
        addresses: list[str]) -> None:
    from plaud_index.server.client_documents import DocumentError, public_addresses

    with pytest.raises(DocumentError):
        public_addresses("app.example", 443, lambda host, port: addresses)


def test_a_document_is_fetched_from_its_checked_address_once_and_must_name_itself() -> None:
    from plaud_index.server.client_documents import MAX_BYTES, ClientDocuments

    asked: list[tuple[str, str, int, str]] = []
    answers = {"/oauth/client.json": document(),
               "/other.json": document(),  # names another URL than its own
               "/evil.json": json_doc(redirect_uris=["javascript:alert(1)"]),
               "/huge.json": b" " * (MAX_BYTES + 1)}

    def fetcher(host: str, address: str, port: int, path: str) -> bytes:
        asked.append((host, address, port, path))
        return answers[path]

    documents = ClientDocuments(resolver=lambda h, p: ["93.184.216.34"], fetcher=fetcher)
    info = documents.client(DOC_URL)
    assert info is not None and info.client_name == "Example app"
    assert str(info.client_id) == DOC_URL and info.token_endpoint_auth_method == "none"
    assert documents.client(DOC_URL) is info and len(asked) == 1  # kept
    assert asked == [("app.example", "93.184.216.34", 443, "/oauth/client.json")]
    for path in ("/other.json", "/evil.json", "/huge.json"):
        assert documents.client(f"https://app.example{path}") is None, path


def json_doc(**fields: Any) -> bytes:
    import json

    return json.dumps({"client_id": "https://app.example/evil.json", **fields}).encode()


def test_a_document_client_waits_for_the_owner_like_any_other(
        tmp_path: Path, clock: Clock) -> None:
    from plaud_index.server.client_documents import ClientDocuments

    told: list[Any] = []
    documents = ClientDocuments(resolver=lambda h, p: ["93.184.216.34"],
                                fetcher=lambda h, a, p, path: document())
    auth = RemoteAuthority(tmp_path, PUBLIC, told.append, "local-token" * 4, clock, documents)
    info = anyio.run(auth.get_client, DOC_URL)
    assert info is not None and auth.ledger.clients[DOC_URL].approved is None
    params = AuthorizationParams(state="s", scopes=[], code_challenge="c" * 43,
                                 redirect_uri=AnyUrl("https://app.example/cb"),
                                 redirect_uri_provided_explicitly=True,
                                 resource=f"{PUBLIC}/mcp")
    anyio.run(auth.authorize, info, params)
    assert not auth.may_redirect(DOC_URL, "https://app.example/cb?code=x")
    assert auth.try_code(told[0].ident, told[0].code).decision == "approved"
    assert auth.may_redirect(DOC_URL, "https://app.example/cb?code=x")
    auth.ledger.clients[DOC_URL].revoked = clock()
    auth._save()
    assert anyio.run(auth.get_client, DOC_URL) is None


def test_the_ledger_is_typed_versioned_records_and_reads_what_the_last_version_wrote(
        tmp_path: Path, clock: Clock) -> None:
    """Issue 52: the ledger was ``dict[str, Any]`` with keys like "cid", "exp", "used"."""
    import json

    from plaud_index.server.remote_ledger import (
        VERSION,
        ClientRecord,
        Ledger,
        RefreshRecord,
        read_ledger,
        write_ledger,
    )

    path = tmp_path / "remote-clients.json"
    ledger = Ledger({"c": ClientRecord({"client_name": "Phone"}, 1.0, approved=2.0)},
                    {"d": RefreshRecord("c", 99.0, ["s"], "https://x/mcp", used=3.0)})
    write_ledger(path, ledger)
    assert json.loads(path.read_text())["version"] == VERSION
    assert read_ledger(path) == (ledger, None)
    path.write_text(json.dumps({  # as the version before wrote it: no version, no flags
        "clients": {"c": {"info": {"client_name": "Phone"}, "registered": 1,
                          "approved": 2, "revoked": None}},
        "refresh": {"d": {"cid": "c", "exp": 99, "scp": [], "aud": None, "used": None}}}))
    old, problem = read_ledger(path)
    assert problem is None and old.clients["c"].approved == 2.0 and not old.clients["c"].document
    assert old.refresh["d"] == RefreshRecord("c", 99.0, [])
    path.write_text(json.dumps({"clients": {"c": {"info": {}, "approved": "yes"}}}))
    broken, problem = read_ledger(path, clock)
    assert broken == Ledger() and problem is not None and "set aside" in problem
