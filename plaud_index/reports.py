"""What the set-up and sync commands report: sign-in, doctor's checks, health, status, a
cycle's and the mirror's reports. Frozen dataclasses, importing nothing of the package."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class AuthStatus:
    """``auth status``: who is signed in to Plaud, how, and whether Plaud accepts it."""

    signed_in: bool
    method: str  # "oauth" | "web token (PLAUD_API_TOKEN)" | "mock"
    account: str | None  # "Ada (ada@example.com)", remembered at sign-in
    api_base: str
    token_store: str  # where the token lives
    expires_at: str | None = None  # the access token's expiry, local time with offset
    refreshable: bool = False  # a refresh token renews it without a browser
    reachable: bool | None = None  # None: not checked (no network call made)
    problem: str | None = None  # what is wrong and what to do


@dataclass(frozen=True)
class Check:
    """One ``doctor`` check."""

    name: str
    status: str  # "ok" | "fail" | "warn" | "skip"
    detail: str
    fix: str | None = None  # what to do, for "fail" and "warn"


@dataclass(frozen=True)
class Health:
    ok: bool
    flags: tuple[str, ...]  # each a sentence a user can act on


@dataclass(frozen=True)
class MirrorReport:
    """What ``mirror --once`` did."""

    folder: str
    listed: int = 0
    written: int = 0
    unchanged: int = 0
    renamed: int = 0
    kept_edits: int = 0
    trashed: int = 0
    failed: int = 0  # writes that failed (the reason is in ``status``)
    skipped: int = 0  # recordings Plaud gave that cannot be read
    seconds: float = 0.0
    errors: tuple[str, ...] = ()


@dataclass(frozen=True)
class MirrorStatus:
    """The Markdown mirror: where it is, how many files it keeps, its last write."""

    folder: str
    files: int
    last_write: float | None
    kept_edits: int  # edited files left alone, the new version written beside
    last_error: str | None  # the last write that failed, until one succeeds


@dataclass(frozen=True)
class Status:
    """``status``: where the index is, what it holds, and whether it is being kept fresh."""

    home: str
    index: str
    recordings: int
    chunks: int
    generation: int
    model: dict[str, Any] | None
    last_commit: str | None
    last_success: float | None
    last_attempt: float | None
    last_error: str | None
    last_error_kind: str | None
    last_report: dict[str, Any] | None
    pending: int | None
    held_deletion: dict[str, Any] | None
    daemon: dict[str, Any] | None
    progress: dict[str, Any] | None
    skipped: dict[str, str]  # file_id -> why it cannot be indexed
    lock_holder: dict[str, Any] | None
    health: Health
    auth: AuthStatus | None = None  # the sign-in, as known locally (no network call)
    # set when most indexed text is in languages the index's model does not read
    language_advice: str | None = None
    mirror: MirrorStatus | None = None  # when a mirror folder is set
    # recordings Plaud keeps failing for: id -> since, tries, last, next (epoch s), error
    failing: dict[str, dict[str, Any]] | None = None
    empty_notes: dict[str, str] | None = None  # id -> the notes Plaud sent without text
    folders_note: str | None = None  # where the Plaud folders come from (or why not)


@dataclass(frozen=True)
class SyncReport:
    """What one indexer cycle did."""

    listed: int = 0
    fetched: int = 0
    added: int = 0
    updated: int = 0
    deleted: int = 0
    unchanged: int = 0
    skipped: int = 0
    chunks_embedded: int = 0
    chunks_reused: int = 0
    commits: int = 0
    mirrored: int = 0  # Markdown files written into the mirror
    seconds: float = 0.0
    errors: tuple[str, ...] = ()
    stopped: bool = False  # asked to stop (SIGTERM, session end) before it was through
