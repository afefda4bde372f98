"""Where the Plaud tokens live: the macOS Keychain, or a 0600 file elsewhere.

Keychain: service ``plaud-index-mcp``, account ``plaud-mcp``, through
``/usr/bin/security``. The secret never appears on an argv: writes go through
``security -i`` reading its command from stdin, with the JSON hex-encoded
(``-X``) so no quoting can break. A locked keychain ("User interaction is not
allowed") is a temporary ``TokenStoreError``; it never deletes anything.
Elsewhere: ``<home>/tokens.json``, written atomically with mode 0600.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

from ..errors import TokenStoreError
from ..fsio import write_json_atomic
from ..home import Home
from ..redact import remember

log = logging.getLogger(__name__)

SERVICE = "plaud-index-mcp"
ACCOUNT = "plaud-mcp"
SECURITY = "/usr/bin/security"
NOT_FOUND = 44  # security's exit status for "The specified item could not be found"

Runner = Callable[..., subprocess.CompletedProcess[str]]


TOKENS_VERSION = 1


@dataclass(frozen=True)
class Tokens:
    access_token: str
    refresh_token: str
    token_type: str = "Bearer"
    expires_at: int = 0  # epoch milliseconds

    def __repr__(self) -> str:  # never print a secret by accident
        return f"Tokens(expires_at={self.expires_at})"

    def __post_init__(self) -> None:  # read from a store or an answer: hidden from now on
        remember(self.access_token, self.refresh_token)

    def to_json(self) -> dict[str, Any]:
        return {"version": TOKENS_VERSION, **asdict(self)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Tokens:
        """The stored shape; files of @plaud-ai/mcp have no version and read as version 1."""
        version = data.get("version", TOKENS_VERSION) if isinstance(data, Mapping) else 0
        if isinstance(version, int) and version > TOKENS_VERSION:
            raise TokenStoreError("The stored Plaud tokens were written by a newer "
                                  "plaud-index-mcp; upgrade it, or run `plaud-index-mcp "
                                  "login` again.")
        try:
            return cls(str(data["access_token"]), str(data.get("refresh_token") or ""),
                       "Bearer", int(data.get("expires_at") or 0))
        except (KeyError, TypeError, ValueError) as exc:
            raise TokenStoreError("The stored Plaud tokens are unreadable; run "
                                  "`plaud-index-mcp login` again.") from exc

    @classmethod
    def from_response(cls, data: Mapping[str, Any], now_ms: int,
                      previous: Tokens | None = None) -> Tokens:
        """A token endpoint's JSON → tokens; a missing refresh_token keeps the old one."""
        access = data.get("access_token")
        if not isinstance(access, str) or not access:
            raise TokenStoreError("Plaud's token response has no access_token")
        refresh = data.get("refresh_token") or (previous.refresh_token if previous else "")
        expires_in = data.get("expires_in")
        seconds = int(expires_in) if isinstance(expires_in, (int, float, str)) and \
            str(expires_in).isdigit() else 86400
        return cls(access, str(refresh), "Bearer", now_ms + seconds * 1000)


class TokenStore(Protocol):
    @property
    def where(self) -> str:
        """For people: "macOS Keychain (…)" or the file's path and mode."""
        ...

    def load(self) -> Tokens | None: ...

    def save(self, tokens: Tokens) -> None: ...

    def delete(self) -> None: ...


class FileTokenStore:
    def __init__(self, path: Path) -> None:
        self.path = path

    @property
    def where(self) -> str:
        """The file and its real mode; a file not yet written says so."""
        try:
            mode = self.path.stat().st_mode & 0o777
        except FileNotFoundError:
            return f"{self.path} (not written yet: `plaud-index-mcp login` creates it)"
        except OSError as exc:
            return f"{self.path} (cannot be read: {exc.strerror})"
        return f"{self.path} (mode {mode:04o})"

    def load(self) -> Tokens | None:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            raise TokenStoreError(f"Cannot read {self.path}: {exc.__class__.__name__}") from None
        return Tokens.from_json(data)

    def save(self, tokens: Tokens) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        write_json_atomic(self.path, tokens.to_json())  # temp file is created 0600

    def delete(self) -> None:
        self.path.unlink(missing_ok=True)


class KeychainTokenStore:
    def __init__(self, security: str = SECURITY, run: Runner = subprocess.run) -> None:
        self.security = security
        self.run = run
        self.where = f"macOS Keychain (service {SERVICE}, account {ACCOUNT})"

    def _call(self, args: list[str], stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        try:
            return self.run([self.security, *args], input=stdin, capture_output=True,
                            text=True, timeout=30, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise TokenStoreError(f"Cannot run {self.security}: {exc.__class__.__name__}") \
                from None

    def _fail(self, result: subprocess.CompletedProcess[str], action: str) -> TokenStoreError:
        if "interaction is not allowed" in (result.stderr or "").lower():
            return TokenStoreError(f"The login keychain is locked, so Plaud tokens cannot be "
                                   f"{action}; unlock it (log in to the Mac) and try again.")
        return TokenStoreError(f"Keychain refused to {action.rstrip('d')} the Plaud tokens "
                               f"(security exit {result.returncode}).")

    def load(self) -> Tokens | None:
        result = self._call(["find-generic-password", "-s", SERVICE, "-a", ACCOUNT, "-w"])
        if result.returncode == NOT_FOUND:
            return None
        if result.returncode != 0:
            raise self._fail(result, "read")
        try:
            return Tokens.from_json(json.loads(result.stdout))
        except ValueError:
            raise TokenStoreError("The Plaud tokens in the Keychain are unreadable; run "
                                  "`plaud-index-mcp login` again.") from None

    def save(self, tokens: Tokens) -> None:
        secret = json.dumps(tokens.to_json()).encode().hex()
        command = f"add-generic-password -U -s {SERVICE} -a {ACCOUNT} -X {secret}\n"
        result = self._call(["-i"], stdin=command)  # the secret travels on stdin only
        if result.returncode != 0:
            raise self._fail(result, "saved")

    def delete(self) -> None:
        result = self._call(["delete-generic-password", "-s", SERVICE, "-a", ACCOUNT])
        if result.returncode not in (0, NOT_FOUND):
            raise self._fail(result, "deleted")


def default_store(home: Path, platform: str = sys.platform,
                  security: str = SECURITY) -> TokenStore:
    if platform == "darwin" and os.path.exists(security):
        return KeychainTokenStore(security)
    return FileTokenStore(Home(home).tokens)


def migrate_legacy(store: TokenStore, legacy: Path) -> bool:
    """Import ``~/.plaud/tokens-mcp.json`` once, if the store is empty. True if imported."""
    if store.load() is not None or not legacy.is_file():
        return False
    try:
        tokens = Tokens.from_json(json.loads(legacy.read_text(encoding="utf-8")))
    except (OSError, ValueError, TokenStoreError):
        log.warning("Ignoring unreadable legacy token file %s", legacy)
        return False
    store.save(tokens)
    log.info("Imported Plaud sign-in from %s", legacy)
    return True
