"""The OAuth 2.1 authorization server of ``serve --http --public-url``: for remote clients
(Claude on the web or the phone, ChatGPT) that reach this machine through the person's own
tunnel. It implements the SDK's provider protocol; the SDK serves the endpoints
(metadata, dynamic registration, authorize, token, revoke) and checks PKCE (S256).

The rule that matters: registering and asking grant nothing. An authorization waits
(``Pending``) until the owner approves it on this machine (``consent``: a page on a
listener bound to loopback, which no tunnel forwards) or types the one-time code that
``serve`` printed in their terminal and log. Then:
- access tokens live 15 minutes, are signed (HMAC, a key of this home) and bound to this
  server's URL (audience): a forged, expired or other-audience token is refused;
- refresh tokens are single use: each use gives a new pair, and a used one presented
  again (a replay) revokes everything that client holds;
- an authorization code works once; presented again it revokes what it gave.
Clients, approvals and refresh tokens (hashed) live in ``<home>/remote-clients.json``
(0600, ``remote_ledger``); ``serve --list-clients`` shows them, ``--revoke`` ends one.
"""

from __future__ import annotations

import hmac
import logging
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    AuthorizeError,
    RefreshToken,
    RegistrationError,
    TokenError,
    construct_redirect_uri,
)
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

from .client_documents import ClientDocuments, is_document_id
from .client_rules import MAX_NAME_CHARS, check_registration
from .http_guard import same
from .remote_ledger import (
    MAX_WAITING,
    ClientRecord,
    Ledger,
    LedgerFile,
    RefreshRecord,
    digest,
    prune,
    sign,
    signed_claims,
    signing_key,
    waiting,
)

log = logging.getLogger(__name__)

ACCESS_S = 15 * 60
REFRESH_S = 30 * 24 * 3600
CODE_S = 5 * 60
PENDING_S = 10 * 60
CODE_TRIES = 5  # wrong one-time codes that deny one request
CODE_DIGITS = 12
# Wrong one-time codes of all requests together in a day; past them a code approves nothing
# until the day has passed, and the owner approves on the loopback page. At most 50 wrong
# guesses a day is 18,250 a year against 10^12 codes: 1 in 55 million a year.
WRONG_CODES_A_DAY = 50
MAX_PENDING = 20  # requests waiting for the owner at once; more are refused, no code printed
@dataclass
class Pending:
    """An authorization waiting for the owner."""

    ident: str
    client_id: str
    client_name: str
    params: AuthorizationParams
    code: str  # the one-time code the owner can type
    nonce: str  # the loopback approval form's
    created: float
    tries: int = 0
    decision: str | None = None  # "approved" | "denied"
    redirect: str | None = None  # where the browser goes once decided


def new_code() -> str:
    return f"{secrets.randbelow(10**CODE_DIGITS):0{CODE_DIGITS}d}"


def spaced(code: str) -> str:
    """A code as a person reads it: groups of four digits."""
    return " ".join(code[i:i + 4] for i in range(0, len(code), 4))


class RemoteAuthority:
    def __init__(self, home: Path, public_url: str, announce: Callable[[Pending], None],
                 local_token: str, clock: Callable[[], float] = time.time,
                 documents: ClientDocuments | None = None) -> None:
        self.home, self.clock, self.announce = home, clock, announce
        self.local_token = local_token  # the machine's own clients keep working
        self.issuer = public_url.rstrip("/")
        self.resource = f"{self.issuer}/mcp"
        self.key = signing_key(home)
        self.pending: dict[str, Pending] = {}
        self.wrong_codes: list[float] = []  # when each wrong one-time code came, a day's
        self.codes: dict[str, AuthorizationCode] = {}
        self.used_codes: dict[str, str] = {}  # code digest -> client id
        self._lock = threading.Lock()
        self._file = LedgerFile(home, clock)
        self.documents = documents or ClientDocuments()

    @property
    def ledger(self) -> Ledger:
        return self._file.ledger

    def _load(self) -> None:
        """The ledger as the file has it (``--revoke`` from another process changes it)."""
        self._file.current()

    def _save(self) -> None:
        self._file.save()

    # -- registration ----------------------------------------------------------------
    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        if is_document_id(client_id):
            return await self._document_client(client_id)
        with self._lock:
            self._load()
            record = self.ledger.clients.get(client_id)
        if record is None or record.revoked:
            return None
        return OAuthClientInformationFull.model_validate(record.info)

    async def _document_client(self, url: str) -> OAuthClientInformationFull | None:
        """A client named by its metadata document's URL (``client_documents``): fetched
        (off the event loop), then remembered in the ledger like a registered one, so the
        owner's approval, ``--list-clients`` and ``--revoke`` work the same."""
        info = await anyio.to_thread.run_sync(self.documents.client, url)
        if info is None:
            return None
        with self._lock:
            self._load()
            record = self.ledger.clients.get(url)
            if record is not None and record.revoked:
                return None
            if record is None:
                prune(self.ledger, self.clock())
                if waiting(self.ledger) >= MAX_WAITING:
                    return None
                self.ledger.clients[url] = ClientRecord(
                    info.model_dump(mode="json", exclude_none=True), self.clock(),
                    document=True)
                self._save()
                log.info("A client named by its metadata document asks: %r (nothing is "
                         "granted until you approve it)", (info.client_name or "")[:100])
        return info

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        check_registration(client_info)
        with self._lock:
            self._load()
            prune(self.ledger, self.clock())
            if waiting(self.ledger) >= MAX_WAITING:
                raise RegistrationError("invalid_client_metadata", f"{MAX_WAITING} clients "
                                        "wait for the owner's approval already; try later")
            self.ledger.clients[str(client_info.client_id)] = ClientRecord(
                client_info.model_dump(mode="json", exclude_none=True), self.clock())
            self._save()
        log.info("A client registered: %r (nothing is granted until you approve it)",
                 (client_info.client_name or "")[:MAX_NAME_CHARS])

    # -- authorization: waits for the owner ----------------------------------------------
    async def authorize(self, client: OAuthClientInformationFull,
                        params: AuthorizationParams) -> str:
        name = (client.client_name or str(client.client_id))[:80]
        pending = Pending(secrets.token_urlsafe(16), str(client.client_id), name, params,
                          new_code(), secrets.token_urlsafe(16), self.clock())
        with self._lock:
            self._expire()
            if sum(p.decision is None for p in self.pending.values()) >= MAX_PENDING:
                log.warning("%d requests wait for your approval already: a new one was "
                            "refused (no code is shown for it)", MAX_PENDING)
                raise AuthorizeError("temporarily_unavailable",
                                     "Too many requests wait for the owner; try later")
            self.pending[pending.ident] = pending
        self.announce(pending)
        return f"{self.issuer}/consent/{pending.ident}"

    def may_redirect(self, client_id: str, location: str) -> bool:
        """Where ``/authorize`` may send a browser: our own waiting page, or the registered
        address of a client the owner has approved (never a stranger's)."""
        if location.startswith(f"{self.issuer}/consent/"):
            return True
        with self._lock:
            self._load()
            record = self.ledger.clients.get(client_id)
        return record is not None and bool(record.approved) and not record.revoked

    def _expire(self) -> None:
        now = self.clock()
        for ident in [i for i, p in self.pending.items() if now - p.created > PENDING_S]:
            del self.pending[ident]

    def decide(self, ident: str, approve: bool) -> Pending | None:
        """The owner's answer (from the loopback page, or a correct one-time code)."""
        with self._lock:
            self._expire()
            pending = self.pending.get(ident)
            if pending is None or pending.decision is not None:
                return pending
            params = pending.params
            if not approve:
                pending.decision = "denied"
                pending.redirect = construct_redirect_uri(
                    str(params.redirect_uri), error="access_denied",
                    error_description="The owner of this server did not approve it",
                    state=params.state)
                return pending
            code = secrets.token_urlsafe(32)
            self.codes[code] = AuthorizationCode(
                code=code, scopes=params.scopes or [], expires_at=self.clock() + CODE_S,
                client_id=pending.client_id, code_challenge=params.code_challenge,
                redirect_uri=params.redirect_uri,
                redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
                resource=params.resource or self.resource)
            self._load()
            record = self.ledger.clients.get(pending.client_id)
            if record is not None:
                record.approved = self.clock()
                self._save()
            pending.decision = "approved"
            pending.redirect = construct_redirect_uri(str(params.redirect_uri), code=code,
                                                      state=params.state)
        log.info("You approved %r: it can now use this server's tools", pending.client_name)
        return pending

    def paused(self) -> bool:
        with self._lock:
            return self.codes_paused()

    def codes_paused(self) -> bool:
        """Past a day's wrong one-time codes: only the loopback page approves. Lock held."""
        now = self.clock()
        self.wrong_codes = [t for t in self.wrong_codes if now - t < 24 * 3600]
        return len(self.wrong_codes) >= WRONG_CODES_A_DAY

    def try_code(self, ident: str, code: str) -> Pending | None:
        """A one-time code typed on the public page: right approves, wrong counts (five
        wrong ones deny the request; a day's ``WRONG_CODES_A_DAY`` pause every code)."""
        with self._lock:
            pending = self.pending.get(ident)
            if pending is None or pending.decision is not None or self.codes_paused():
                return pending
            pending.tries += 1
            typed = "".join(code.split())
            right = hmac.compare_digest(typed.encode(), pending.code.encode())
            if not right:
                self.wrong_codes.append(self.clock())
                if self.codes_paused():
                    log.warning("%d wrong one-time codes today: codes approve nothing until "
                                "tomorrow; approve on this machine's page", WRONG_CODES_A_DAY)
            tries = pending.tries
        if right:
            return self.decide(ident, True)
        return self.decide(ident, False) if tries >= CODE_TRIES else None

    # -- tokens ----------------------------------------------------------------------------
    async def load_authorization_code(self, client: OAuthClientInformationFull,
                                      authorization_code: str) -> AuthorizationCode | None:
        with self._lock:
            code = self.codes.get(authorization_code)
            if code is None and digest(authorization_code) in self.used_codes:
                replayed = self.used_codes[digest(authorization_code)]
                log.warning("An authorization code was presented twice: everything it gave "
                            "is revoked")
                self._revoke_client_tokens(replayed)
        if code is None or code.client_id != client.client_id or \
                code.expires_at < self.clock():
            return None
        return code

    async def exchange_authorization_code(self, client: OAuthClientInformationFull,
                                          authorization_code: AuthorizationCode) -> OAuthToken:
        with self._lock:
            if self.codes.pop(authorization_code.code, None) is None:
                raise TokenError("invalid_grant", "authorization code already used")
            self.used_codes[digest(authorization_code.code)] = str(client.client_id)
            return self._issue(str(client.client_id), authorization_code.scopes,
                               authorization_code.resource or self.resource)

    def _issue(self, client_id: str, scopes: list[str], resource: str) -> OAuthToken:
        """A new access token (signed) and refresh token (stored hashed). Lock held."""
        now = int(self.clock())
        claims = {"cid": client_id, "aud": resource, "exp": now + ACCESS_S,
                  "iat": self.clock(), "jti": secrets.token_urlsafe(8), "scp": scopes}
        access = sign(self.key, claims)
        refresh = secrets.token_urlsafe(32)
        self._load()
        self.ledger.refresh[digest(refresh)] = RefreshRecord(client_id, now + REFRESH_S,
                                                             scopes, resource)
        self._save()
        return OAuthToken(access_token=access, expires_in=ACCESS_S, refresh_token=refresh,
                          scope=" ".join(scopes) or None)

    async def load_refresh_token(self, client: OAuthClientInformationFull,
                                 refresh_token: str) -> RefreshToken | None:
        with self._lock:
            self._load()
            record = self.ledger.refresh.get(digest(refresh_token))
            if record is None or record.client_id != client.client_id:
                return None
            if record.used:  # a replay: someone else holds this chain
                log.warning("A used refresh token came back: %r loses its sign-in",
                            client.client_name)
                self._revoke_client_tokens(str(client.client_id))
                return None
            if record.expires < self.clock():
                return None
        return RefreshToken(token=refresh_token, client_id=record.client_id,
                            scopes=list(record.scopes), expires_at=int(record.expires),
                            resource=record.resource)

    async def exchange_refresh_token(self, client: OAuthClientInformationFull,
                                     refresh_token: RefreshToken,
                                     scopes: list[str]) -> OAuthToken:
        with self._lock:
            self._load()
            record = self.ledger.refresh.get(digest(refresh_token.token))
            if record is None or record.used:
                raise TokenError("invalid_grant", "refresh token already used")
            record.used = self.clock()  # rotated: single use
            return self._issue(str(client.client_id), scopes or refresh_token.scopes,
                               refresh_token.resource or self.resource)

    async def load_access_token(self, token: str) -> AccessToken | None:
        if same(token, self.local_token):
            return AccessToken(token=token, client_id="local", scopes=[],
                               resource=self.resource)
        claims = self.claims(token)
        if claims is None:
            return None
        return AccessToken(token=token, client_id=claims["cid"], scopes=list(claims["scp"]),
                           expires_at=int(claims["exp"]), resource=claims["aud"])

    def claims(self, token: str) -> dict[str, Any] | None:
        """A valid access token's claims: our signature, not expired, for this server, its
        client still authorised; ``None`` for anything else."""
        claims = signed_claims(self.key, token)
        if claims is None or claims.get("aud") != self.resource or \
                not isinstance(claims.get("exp"), int) or claims["exp"] < self.clock():
            return None
        with self._lock:
            self._load()
            record = self.ledger.clients.get(str(claims.get("cid")))
        if record is None or record.revoked or not record.approved:
            return None
        issued = claims.get("iat")
        if not isinstance(issued, (int, float)) or (record.tokens_revoked or 0) >= issued:
            return None  # issued before its tokens were revoked
        return claims

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        with self._lock:
            self._revoke_client_tokens(token.client_id)

    def _revoke_client_tokens(self, client_id: str) -> None:
        """Every refresh token of the client goes, and access tokens issued until now stop
        working (the client may ask the owner again). Lock held."""
        self._load()
        self.ledger.refresh = {k: v for k, v in self.ledger.refresh.items()
                               if v.client_id != client_id}
        record = self.ledger.clients.get(client_id)
        if record is not None:
            record.tokens_revoked = self.clock()
        self._save()

