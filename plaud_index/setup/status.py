"""``status``: the index, the sync state, the lock and the sign-in, as one ``Status``."""

from __future__ import annotations

import os
import time
from pathlib import Path

from ..answers.index import IndexReader
from ..config import Config
from ..embedding.languages import index_advice
from ..fsio import process_alive
from ..index.snapshot import Snapshot
from ..mirror.state import read_mirror_state
from ..plaud import auth_status
from ..reports import MirrorStatus, Status
from ..sync.detached import sync_log_problem
from ..sync.lock import lock_holder
from ..sync.state import SyncState, read_damage
from .health import health


def service_status(reader: IndexReader) -> Status:
    """``status`` of the index ``reader`` reads: its config, the sync state, its snapshot."""
    return build_status(reader.config, reader.state.read(), reader.snapshot())


def build_status(config: Config, state: SyncState, snap: Snapshot | None) -> Status:
    """Everything ``status`` shows, from the sync state, the index and the lock."""
    daemon_pid = (state.daemon or {}).get("pid")
    holder = lock_holder(config.lock_path)
    auth = auth_status(config)
    # folders-only users need no sign-in; everyone else's index can no longer stay fresh
    signed_out = None if auth.signed_in or config.folders else \
        (auth.problem or "not signed in: run `plaud-index-mcp login`")
    mirror = mirror_status(config)
    return Status(
        home=str(config.home), index=str(config.index_dir),
        recordings=len(snap.recordings) if snap else 0,
        chunks=snap.live_chunks if snap else 0,
        generation=snap.generation if snap else 0,
        model=snap.model.to_json() if snap else None,
        last_commit=snap.manifest.updated_at if snap else None,
        last_success=state.last_success, last_attempt=state.last_attempt,
        last_error=state.last_error, last_error_kind=state.last_error_kind,
        last_report=state.last_report, pending=state.processing,
        held_deletion=state.held_deletion, daemon=state.daemon, progress=state.progress,
        skipped=state.skipped,
        lock_holder=holder, auth=auth, language_advice=index_advice(snap), mirror=mirror,
        failing=state.failing or None, empty_notes=state.empty_notes or None,
        folders_note=folders_note(config),
        health=health(state, time.time(), config.interval_ms, process_alive(daemon_pid),
                      writable=None if _writable(config.home) else
                      str(config.home), syncing=holder is not None,
                      signed_out=signed_out, mirror_error=mirror.last_error if mirror else None,
                      indexed=len(snap.recordings) if snap else 0,
                      damage=read_damage(config.home, state.last_success),
                      sync_log=sync_log_problem(config.home)),
    )


def folders_note(config: Config) -> str | None:
    """Whether Plaud's folders can be known: only the web API lists them."""
    if config.client == "mock" or config.web_token:
        return None
    return ("Plaud folders: the developer API does not say which folder a recording is in; "
            "sign in with a web token (PLAUD_API_TOKEN) to filter by folder")


def mirror_status(config: Config) -> MirrorStatus | None:
    if config.mirror is None:
        return None
    state = read_mirror_state(config.home, config.mirror)
    return MirrorStatus(str(config.mirror), len(state.files), state.last_write,
                        state.kept_edits, state.last_error)


def _writable(home: Path) -> bool:
    return not home.exists() or os.access(home, os.W_OK)
