"""Our home folder (``~/.plaud-index-mcp``, or ``PLAUD_INDEX_HOME``) and every file in it,
named here once. Pure: names, no reads.

Every module asks ``Home(config.home)`` for the path it needs instead of joining a file
name to the home itself (``tests/test_architecture.py`` holds that), so what the home
holds is this one list: what ``status``, ``uninstall`` and a reader of the code see.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import overload


class _File:
    """A file of the home: ``Home(root).x`` is its path, ``Home.x.name`` its name."""

    def __init__(self, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, home: None, owner: type | None = None) -> _File: ...

    @overload
    def __get__(self, home: Home, owner: type | None = None) -> Path: ...

    def __get__(self, home: Home | None, owner: type | None = None) -> Path | _File:
        return self if home is None else home.root / self.name


@dataclass(frozen=True)
class Home:
    root: Path

    # signing in to Plaud
    tokens = _File("tokens.json")  # where the Keychain is not (Linux, tests)
    refresh_lock = _File("refresh.lock")  # one token refresh at a time, across processes
    account = _File("account.json")  # which account signed in (no secret)
    sign_in_pending = _File("sign-in-pending.json")  # a sign-in a client started
    # the settings, the model, the index
    config = _File("config.json")
    models = _File("models")
    index = _File("vector-index")
    indexer_lock = _File("indexer.lock")  # one writer of the index at a time
    # the sync
    sync_state = _File("sync-state.json")
    sync_state_lock = _File("sync-state.lock")
    sync_failed = _File("sync-failed.json")  # a first sync's failure, for the readers
    disk_reserve = _File(".disk-reserve")  # freed to record a full disk
    read_damage = _File("read-damage.json")  # damage a reader met, for the next cycle
    sync_log = _File("background-sync.log")  # the first sync's own log (a detached process)
    mirror_state = _File("mirror-state.json")
    # the person's own names for speakers
    speaker_names = _File("speaker-names.json")
    speaker_names_lock = _File("speaker-names.lock")
    # the shared server (serve --http) and its remote clients
    http_server = _File("http-server.json")  # where it serves, while it runs
    http_token = _File("http-token")  # the local clients' bearer token (0600)
    remote_key = _File("remote-key")  # signs remote clients' access tokens (0600)
    remote_clients = _File("remote-clients.json")  # the ledger of remote clients

    @classmethod
    def names(cls) -> dict[str, str]:
        """Every file the home may hold: attribute, file name."""
        return {k: v.name for k, v in vars(cls).items() if isinstance(v, _File)}
