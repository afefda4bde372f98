"""The one interface the indexer sees: ``RecordingSource``, and ``make_source(config)``.

A source lists what it has (``Listed``: id and title) and hands over one
normalised ``Recording`` at a time. ``PlaudSource`` adapts any raw client (the
developer API, the web API, the mock corpus) that speaks Plaud's JSON, so
Plaud's field names stay inside this package.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import PlaudAuthError
from ..home import Home
from ..models import Listed, Recording
from .documents import normalize_listing, normalize_recording
from .settings import PlaudConfig

if TYPE_CHECKING:
    from .tokens import TokenStore


class RecordingSource(Protocol):
    def list_recordings(self, tail_hint: str | None = None) -> dict[str, Listed]:
        """Everything the source has, by id, in listing order (newest first)."""
        ...

    def get_recording(self, file_id: str) -> Recording:
        """One recording, normalised; raises for a recording that cannot be read."""
        ...

    def kept(self, known: Collection[str]) -> set[str]:
        """Of the indexed ``known`` ids, those the last listing left out only because part
        of the source could not be listed (an unmounted folder, an unreachable Plaud):
        never deleted."""
        ...

    def rejected(self) -> dict[str, str]:
        """Listing rows of the last ``list_recordings`` that cannot be a recording: a
        printable label → why (they are reported with the skipped recordings)."""
        ...

    def problems(self) -> list[Exception]:
        """Why parts of the last listing failed while the rest was indexed."""
        ...


class RawClient(Protocol):
    def list_files(self, tail_hint: str | None = None) -> list[dict[str, Any]]: ...

    def get_file(self, file_id: str) -> dict[str, Any]: ...


class PlaudSource:
    """A ``RecordingSource`` over a client that returns Plaud-shaped JSON."""

    def __init__(self, client: RawClient) -> None:
        self._rejected: dict[str, str] = {}
        self._remote: dict[str, str] = {}  # normal id -> the id as Plaud spells it
        self.client = client

    def list_recordings(self, tail_hint: str | None = None) -> dict[str, Listed]:
        listed, self._rejected = normalize_listing(self.client.list_files(tail_hint=tail_hint))
        self._remote = {k: v.remote_id for k, v in listed.items() if v.remote_id != k}
        return listed

    def rejected(self) -> dict[str, str]:
        from_client = getattr(self.client, "rejected_lines", None)  # the mock corpus's
        return {**(from_client() if callable(from_client) else {}), **self._rejected}

    def kept(self, known: Collection[str]) -> set[str]:
        return set()  # a Plaud listing either succeeds whole or raises

    def problems(self) -> list[Exception]:
        return []

    def get_recording(self, file_id: str) -> Recording:
        return normalize_recording(self.client.get_file(self._remote.get(file_id, file_id)))


def token_store(config: PlaudConfig) -> TokenStore:
    from .tokens import default_store

    return default_store(config.home)


def make_source(config: PlaudConfig) -> RecordingSource:
    """The mock corpus with ``PLAUD_CLIENT=mock``; the web API with ``PLAUD_API_TOKEN``;
    otherwise the signed-in Plaud account."""
    from .api import PlaudClient
    from .mock import MockClient
    from .refresh import TokenManager
    from .tokens import migrate_legacy
    from .transport import Transport
    from .web_api import WebClient

    if config.client == "mock":
        return PlaudSource(MockClient(config.mock_corpus))
    if config.web_token:  # the power-user web-API path; never used when unset
        return PlaudSource(WebClient(config.web_token, config.web_base))
    store = token_store(config)
    if config.legacy_tokens is not None:
        migrate_legacy(store, config.legacy_tokens)
    if store.load() is None:
        raise PlaudAuthError(PlaudAuthError.SIGNED_OUT)
    transport = Transport()
    tokens = TokenManager(store, config.plaud, transport, Home(config.home).refresh_lock)
    return PlaudSource(PlaudClient(config.plaud, tokens, transport,
                                   detail_interval=config.detail_interval_s))
