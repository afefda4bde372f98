"""What the remote sign-in of ``serve --http --public-url`` keeps on this machine, and the
access tokens it signs. I/O on two files of the home, and pure token signing.

- ``remote-key`` (0600): 32 random bytes made once; access tokens are HMAC-signed with it,
  so no token list is kept and a restart keeps them valid.
- ``remote-clients.json`` (0600): registered clients (when approved, revoked, when their
  tokens were revoked) and refresh tokens, stored as their SHA-256 only. Another process
  changes it (``serve --revoke``), so a reader rereads it whenever it was replaced.

Bounded (``prune``, on every write): a client never approved is forgotten after a day,
and at most ``MAX_WAITING`` wait at once (``remote_auth`` refuses more); at most
``MAX_KEPT`` approved or revoked clients are kept (the longest revoked go first); a
client's used refresh tokens, kept to tell a replay, are its last ``USED_KEPT``; expired
ones go. With registrations of at most 8,000 characters that is under 4 MB, whatever
strangers do. A file that cannot be read (damaged, or over the size any state file may
have) is set aside under a new name and said, never read as "no client": every remote
client then asks the owner again.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import os
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..fsio import own_secret, read_state_file, write_json_atomic
from ..home import Home

log = logging.getLogger(__name__)

TOKEN_PREFIX = "pim1"  # bump when the claims change shape
MAX_WAITING = 100  # registered clients never approved, at once
WAITING_S = 24 * 3600  # how long a client nobody approved is remembered
MAX_KEPT = 200  # approved (or revoked) clients
USED_KEPT = 10  # a client's used refresh tokens remembered to tell a replay


def digest(token: str) -> str:
    """How a secret is remembered: never itself."""
    return hashlib.sha256(token.encode()).hexdigest()


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def signing_key(home: Path) -> bytes:
    """This home's token key, made on first use; a damaged one is replaced (that only
    signs remote clients out)."""
    return own_secret(Home(home).remote_key, lambda: secrets.token_bytes(32),
                      lambda held: len(held) == 32)


def sign(key: bytes, claims: dict[str, Any]) -> str:
    body = _b64(json.dumps(claims, separators=(",", ":")).encode())
    return f"{TOKEN_PREFIX}.{body}.{_b64(hmac.new(key, body.encode(), 'sha256').digest())}"


def signed_claims(key: bytes, token: str) -> dict[str, Any] | None:
    """The claims of a token this key signed, unchecked otherwise; ``None`` for any other
    string."""
    try:
        prefix, body, signature = token.split(".")
        expected = _b64(hmac.new(key, body.encode(), "sha256").digest())
        if prefix != TOKEN_PREFIX or not hmac.compare_digest(signature.encode(),
                                                             expected.encode()):
            return None
        claims = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    except (ValueError, UnicodeError):
        return None
    return claims if isinstance(claims, dict) else None


VERSION = 1


def _when(value: object) -> float | None:
    """A recorded instant (seconds since the epoch), or ``None`` for none."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"not an instant: {value!r}")
    return float(value)


@dataclass
class ClientRecord:
    """A remote client: its registration (or its metadata document, read), and when the
    owner approved it, revoked it, or revoked the tokens it held."""
    info: dict[str, Any]  # its ``OAuthClientInformationFull``, as JSON
    registered: float
    approved: float | None = None
    revoked: float | None = None
    tokens_revoked: float | None = None  # tokens issued before this stop working
    document: bool = False  # named by its metadata document's URL (CIMD)

    @property
    def waiting(self) -> bool:
        """Registered and never approved (nor revoked)."""
        return not self.approved and not self.revoked

    @property
    def name(self) -> str | None:
        return str(self.info.get("client_name") or "")[:100] or None

    @classmethod
    def from_json(cls, data: object) -> ClientRecord:
        if not isinstance(data, dict) or not isinstance(data.get("info"), dict):
            raise ValueError("not a client record")
        return cls(info=data["info"], registered=_when(data.get("registered")) or 0.0,
                   approved=_when(data.get("approved")), revoked=_when(data.get("revoked")),
                   tokens_revoked=_when(data.get("tokens_revoked")),
                   document=data.get("document") is True)

    def to_json(self) -> dict[str, Any]:
        return {"info": self.info, "registered": self.registered, "approved": self.approved,
                "revoked": self.revoked, "tokens_revoked": self.tokens_revoked,
                "document": self.document}


@dataclass
class RefreshRecord:
    """A refresh token, kept as its digest: whose it is, until when, for what; ``used``
    once it was exchanged (a second use is a replay)."""
    client_id: str
    expires: float
    scopes: list[str]
    resource: str | None = None
    used: float | None = None

    @classmethod
    def from_json(cls, data: object) -> RefreshRecord:
        if not isinstance(data, dict) or not isinstance(data.get("cid"), str) or \
                not isinstance(data.get("scp", []), list):
            raise ValueError("not a refresh token record")
        aud = data.get("aud")
        return cls(client_id=data["cid"], expires=_when(data.get("exp")) or 0.0,
                   scopes=[str(s) for s in data.get("scp", [])],
                   resource=aud if isinstance(aud, str) else None,
                   used=_when(data.get("used")))

    def to_json(self) -> dict[str, Any]:
        return {"cid": self.client_id, "exp": self.expires, "scp": self.scopes,
                "aud": self.resource, "used": self.used}


@dataclass
class Ledger:
    """What lasts across restarts: clients, their approval, their refresh tokens."""

    clients: dict[str, ClientRecord] = field(default_factory=dict)
    refresh: dict[str, RefreshRecord] = field(default_factory=dict)  # digest -> record


def waiting(ledger: Ledger) -> int:
    """Clients registered and never approved (nor revoked)."""
    return sum(1 for r in ledger.clients.values() if r.waiting)


def prune(ledger: Ledger, now: float) -> None:
    """Keep the ledger within its bounds (the module's docstring)."""
    clients = ledger.clients
    for cid in [c for c, r in clients.items() if r.waiting and now - r.registered > WAITING_S]:
        del clients[cid]
    kept = [c for c, r in clients.items() if not r.waiting]
    if len(kept) > MAX_KEPT:  # the longest revoked first, then the oldest approvals
        kept.sort(key=lambda c: (not clients[c].revoked,
                                 clients[c].revoked or clients[c].approved or 0.0))
        for cid in kept[:len(kept) - MAX_KEPT]:
            del clients[cid]
    refresh = {k: v for k, v in ledger.refresh.items()
               if v.client_id in clients and v.expires > now}
    used: dict[str, list[str]] = {}
    for key, record in sorted(refresh.items(), key=lambda kv: -(kv[1].used or 0.0)):
        if record.used:
            used.setdefault(record.client_id, []).append(key)
    for keys in used.values():
        for key in keys[USED_KEPT:]:
            del refresh[key]
    ledger.refresh = refresh


def _parse(data: object) -> Ledger:
    if not isinstance(data, dict) or not isinstance(data.get("clients", {}), dict) or \
            not isinstance(data.get("refresh", {}), dict):
        raise ValueError("not a ledger")
    if not isinstance(data.get("version", VERSION), int) or data.get("version", VERSION) > VERSION:
        raise ValueError("written by a newer version of plaud-index-mcp")
    return Ledger({str(k): ClientRecord.from_json(v) for k, v in data.get("clients", {}).items()},
                  {str(k): RefreshRecord.from_json(v)
                   for k, v in data.get("refresh", {}).items()})


def read_ledger(path: Path, clock: Callable[[], float] = time.time) -> tuple[Ledger, str | None]:
    """The ledger in ``path`` and, when it could not be read, what was done about it: the
    file set aside (never deleted, never taken for an empty ledger in silence)."""
    try:
        return _parse(json.loads(read_state_file(path))), None
    except FileNotFoundError:
        return Ledger(), None
    except (OSError, ValueError) as exc:
        aside = path.with_name(f"{path.name}.damaged-{int(clock())}")
        try:
            os.replace(path, aside)
        except OSError as again:
            problem = f"{path} cannot be read ({exc}) nor set aside ({again})"
        else:
            problem = (f"{path} could not be read ({exc}); it was set aside as {aside.name}, "
                       "and every remote client must now be approved again")
        log.error("%s", problem)
        return Ledger(), problem


class LedgerFile:
    """``remote-clients.json`` as one process sees it; callers hold their own lock."""

    def __init__(self, home: Path, clock: Callable[[], float] = time.time) -> None:
        self.path = Home(home).remote_clients
        self.clock = clock
        self.ledger = Ledger()
        self._stamp = -1.0

    def current(self) -> Ledger:
        """The ledger as the file has it now (reread only when it was replaced)."""
        try:
            stamp = self.path.stat().st_mtime
        except FileNotFoundError:
            return self.ledger
        if stamp != self._stamp:
            self.ledger, _ = read_ledger(self.path, self.clock)
            self._stamp = stamp
        return self.ledger

    def save(self) -> None:
        prune(self.ledger, self.clock())
        write_ledger(self.path, self.ledger)
        self._stamp = self.path.stat().st_mtime


def write_ledger(path: Path, ledger: Ledger) -> None:
    write_json_atomic(path, {"version": VERSION,
                             "clients": {k: v.to_json() for k, v in ledger.clients.items()},
                             "refresh": {k: v.to_json() for k, v in ledger.refresh.items()}})


def list_clients(home: Path) -> tuple[list[dict[str, Any]], str | None]:
    """Every registered client: id, name, approved, revoked (``serve --list-clients``), and
    what was wrong with the file, if anything (it is then set aside)."""
    ledger, problem = read_ledger(Home(home).remote_clients)
    return [{"client_id": cid, "name": record.name, "registered": record.registered,
             "approved": record.approved, "revoked": record.revoked}
            for cid, record in ledger.clients.items()], problem


def revoke_client(home: Path, client_id: str, clock: Callable[[], float] = time.time) -> bool:
    """``serve --revoke``: the client's approval and every token it holds end (a ledger
    that cannot be read is set aside first: then no client holds anything)."""
    path = Home(home).remote_clients
    ledger, _ = read_ledger(path, clock)
    record = ledger.clients.get(client_id)
    if record is None:
        return False
    record.revoked = clock()
    ledger.refresh = {k: v for k, v in ledger.refresh.items() if v.client_id != client_id}
    prune(ledger, clock())
    write_ledger(path, ledger)
    return True
