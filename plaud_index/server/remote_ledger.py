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

log = logging.getLogger(__name__)

STATE_FILE = "remote-clients.json"
KEY_FILE = "remote-key"
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
    return own_secret(home / KEY_FILE, lambda: secrets.token_bytes(32),
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


@dataclass
class Ledger:
    """What lasts across restarts: clients, their approval, their refresh tokens."""

    clients: dict[str, dict[str, Any]] = field(default_factory=dict)
    refresh: dict[str, dict[str, Any]] = field(default_factory=dict)  # digest -> record


def waiting(ledger: Ledger) -> int:
    """Clients registered and never approved (nor revoked)."""
    return sum(1 for r in ledger.clients.values()
               if not r.get("approved") and not r.get("revoked"))


def prune(ledger: Ledger, now: float) -> None:
    """Keep the ledger within its bounds (the module's docstring)."""
    clients = ledger.clients
    for cid in [c for c, r in clients.items() if not r.get("approved") and not
                r.get("revoked") and now - float(r.get("registered") or 0) > WAITING_S]:
        del clients[cid]
    kept = [c for c, r in clients.items() if r.get("approved") or r.get("revoked")]
    if len(kept) > MAX_KEPT:  # the longest revoked first, then the oldest approvals
        kept.sort(key=lambda c: (not clients[c].get("revoked"),
                                 float(clients[c].get("revoked") or
                                       clients[c].get("approved") or 0)))
        for cid in kept[:len(kept) - MAX_KEPT]:
            del clients[cid]
    refresh = {k: v for k, v in ledger.refresh.items()
               if v.get("cid") in clients and float(v.get("exp") or 0) > now}
    used: dict[str, list[str]] = {}
    for key, record in sorted(refresh.items(), key=lambda kv: -float(kv[1].get("used") or 0)):
        if record.get("used"):
            used.setdefault(str(record["cid"]), []).append(key)
    for keys in used.values():
        for key in keys[USED_KEPT:]:
            del refresh[key]
    ledger.refresh = refresh


def _parse(data: object) -> Ledger:
    if not isinstance(data, dict) or not isinstance(data.get("clients", {}), dict) or \
            not isinstance(data.get("refresh", {}), dict):
        raise ValueError("not a ledger")
    clients = {str(k): v for k, v in data.get("clients", {}).items() if isinstance(v, dict)}
    refresh = {str(k): v for k, v in data.get("refresh", {}).items() if isinstance(v, dict)}
    return Ledger(clients, refresh)


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
        self.path = home / STATE_FILE
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
    write_json_atomic(path, {"clients": ledger.clients, "refresh": ledger.refresh})


def list_clients(home: Path) -> tuple[list[dict[str, Any]], str | None]:
    """Every registered client: id, name, approved, revoked (``serve --list-clients``), and
    what was wrong with the file, if anything (it is then set aside)."""
    ledger, problem = read_ledger(home / STATE_FILE)
    return [{"client_id": cid, "name": str((record.get("info") or {}).get("client_name")
                                            or "")[:100] or None,
             "registered": record.get("registered"), "approved": record.get("approved"),
             "revoked": record.get("revoked")}
            for cid, record in ledger.clients.items()], problem


def revoke_client(home: Path, client_id: str, clock: Callable[[], float] = time.time) -> bool:
    """``serve --revoke``: the client's approval and every token it holds end (a ledger
    that cannot be read is set aside first: then no client holds anything)."""
    path = home / STATE_FILE
    ledger, _ = read_ledger(path, clock)
    record = ledger.clients.get(client_id)
    if record is None:
        return False
    record["revoked"] = clock()
    ledger.refresh = {k: v for k, v in ledger.refresh.items() if v.get("cid") != client_id}
    prune(ledger, clock())
    write_ledger(path, ledger)
    return True
