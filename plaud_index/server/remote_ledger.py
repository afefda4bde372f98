"""What the remote sign-in of ``serve --http --public-url`` keeps on this machine, and the
access tokens it signs. I/O on two files of the home, and pure token signing.

- ``remote-key`` (0600): 32 random bytes made once; access tokens are HMAC-signed with it,
  so no token list is kept and a restart keeps them valid.
- ``remote-clients.json`` (0600): registered clients (when approved, revoked, when their
  tokens were revoked) and refresh tokens, stored as their SHA-256 only. Another process
  changes it (``serve --revoke``), so a reader rereads it whenever it was replaced.
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


class LedgerFile:
    """``remote-clients.json`` as one process sees it; callers hold their own lock."""

    def __init__(self, home: Path) -> None:
        self.path = home / STATE_FILE
        self.ledger = Ledger()
        self._stamp = -1.0

    def current(self) -> Ledger:
        """The ledger as the file has it now (reread only when it was replaced)."""
        try:
            stamp = self.path.stat().st_mtime
        except FileNotFoundError:
            return self.ledger
        if stamp != self._stamp:
            try:
                data = json.loads(read_state_file(self.path))
                self.ledger = Ledger(dict(data.get("clients", {})),
                                     dict(data.get("refresh", {})))
            except (OSError, ValueError, AttributeError) as exc:
                log.warning("Cannot read %s (%s): no remote client is authorised",
                            self.path, exc)
                self.ledger = Ledger()
            self._stamp = stamp
        return self.ledger

    def save(self) -> None:
        write_json_atomic(self.path, {"clients": self.ledger.clients,
                                      "refresh": self.ledger.refresh})
        os.chmod(self.path, 0o600)
        self._stamp = self.path.stat().st_mtime


def list_clients(home: Path) -> list[dict[str, Any]]:
    """Every registered client: id, name, approved, revoked (``serve --list-clients``)."""
    try:
        data = json.loads(read_state_file(home / STATE_FILE))
    except (OSError, ValueError):
        return []
    return [{"client_id": cid, "name": record.get("info", {}).get("client_name"),
             "registered": record.get("registered"), "approved": record.get("approved"),
             "revoked": record.get("revoked")}
            for cid, record in dict(data.get("clients", {})).items()]


def revoke_client(home: Path, client_id: str, clock: Callable[[], float] = time.time) -> bool:
    """``serve --revoke``: the client's approval and every token it holds end."""
    path = home / STATE_FILE
    try:
        data = json.loads(read_state_file(path))
    except (OSError, ValueError):
        return False
    record = data.get("clients", {}).get(client_id)
    if record is None:
        return False
    record["revoked"] = clock()
    data["refresh"] = {k: v for k, v in data.get("refresh", {}).items()
                       if v.get("cid") != client_id}
    write_json_atomic(path, data)
    os.chmod(path, 0o600)
    return True
