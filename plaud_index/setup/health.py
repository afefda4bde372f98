"""Is the index fresh? Flags for ``status`` from the sync state. Pure (time is passed in)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..intervals import format_interval
from ..models import UNREADABLE_FOLDER
from ..reports import Health
from ..sync.progress import SyncProgress, ago

if TYPE_CHECKING:  # the shape only: this module reads no file
    from ..sync.state import SyncState


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def health(state: SyncState, now: float, interval_ms: int,
           daemon_alive: bool | None, writable: str | None = None,
           syncing: bool = False, signed_out: str | None = None,
           mirror_error: str | None = None, indexed: int = 0,
           damage: str | None = None, sync_log: str | None = None) -> Health:
    """Each flag is a sentence a user can act on; no flags means ok. ``writable`` names
    the home when it cannot be written (a read-only disk: no sync can save anything);
    ``signed_out`` says why Plaud cannot be synced when it is a source but nobody is
    signed in (the index may still answer, but it can no longer stay fresh);
    ``mirror_error`` why the Markdown mirror's last write failed; ``indexed`` how many
    recordings the index holds (an index with recordings was synced, whatever the state
    file says); ``damage`` what a reader met since the last successful cycle; ``sync_log``
    why the background sync's log cannot be used."""
    interval = interval_ms / 1000
    flags: list[str] = []
    if writable:
        flags.append(f"{writable} cannot be written (read-only disk or permissions): no sync "
                     "can be saved until it can")
    last = state.last_success
    progress = SyncProgress.from_state(state.progress)
    if signed_out:
        flags.append(signed_out)
    if last is None and syncing:
        flags.append("first sync running: " + (progress.describe(now, searchable=indexed)
                                               if progress else "starting"))
    elif last is None and progress is not None:
        flags.append(f"the first sync {progress.describe_stopped(now, indexed)}: the index is "
                     "partial until `plaud-index-mcp indexer` (or the next search) resumes it")
    elif last is None and indexed:
        flags.append(f"no successful sync on record, though the index holds {indexed} "
                     "recording(s): the sync state was lost or cannot be written; run "
                     "`plaud-index-mcp indexer --once` (and `doctor` if it fails)")
    elif last is None:
        flags.append("never synced: run `plaud-index-mcp indexer --once`")
    elif now - float(last) > 3 * interval:
        flags.append(f"stale: the last successful sync was {ago(now - last)} (more than 3 "
                     f"intervals of {format_interval(interval_ms)})")
    listed = (state.last_report or {}).get("listed")
    listed = listed if isinstance(listed, int) else 0  # a hand-edited state file: no flag
    if last is not None and not indexed and not syncing and listed > len(state.skipped):
        flags.append(f"the index is empty, though the last sync listed {listed} recording(s) "
                     "(its folder was deleted or its manifest lost): the next cycle "
                     "fills it again; `plaud-index-mcp indexer --once` does it now")
    if state.last_error_kind == "PlaudAuthError" and state.last_error:
        flags.append(f"sign-in: {state.last_error}")
    elif state.last_error_kind == "PlaudAuthError":
        flags.append("auth expired: run `plaud-index-mcp login`")
    elif state.last_error and (last is None or (state.last_attempt or 0) >= float(last)):
        flags.append(f"the last sync failed: {state.last_error}")
    if damage:
        flags.append(f"a search met damage: {damage} (the next indexer cycle rebuilds it: "
                     "`plaud-index-mcp indexer --once`)")
    if state.failing:
        worst = sorted(state.failing.items(), key=lambda kv: kv[1]["since"])
        named = ", ".join(f"{fid} (since {ago(now - entry['since'])}, {int(entry['tries'])} "
                          f"tries)" for fid, entry in worst[:3])
        more = f" and {len(worst) - 3} more" if len(worst) > 3 else ""
        flags.append(f"{_count(len(worst), 'recording')} keep failing on Plaud's side: "
                     f"{named}{more}; every other recording is indexed, and these are tried "
                     "again with backoff (`status --json` has the errors)")
    folders = {k: v for k, v in state.skipped.items() if k.startswith(UNREADABLE_FOLDER)}
    flags += [f"{label.removeprefix('unreadable ')} {why}" for label, why in folders.items()]
    if len(state.skipped) > len(folders):
        flags.append(f"{len(state.skipped) - len(folders)} recording(s) skipped because they "
                     "cannot be read (see `status --json`); they are retried every few hours")
    if sync_log:
        flags.append(sync_log)
    if mirror_error:
        flags.append(f"the Markdown mirror cannot be written ({mirror_error}); indexing goes "
                     "on, and the mirror catches up once it can")
    daemon = state.daemon or {}
    if daemon.get("pid"):
        beat = float(daemon.get("heartbeat") or 0)
        if daemon_alive is False:
            flags.append(f"the indexer daemon (pid {daemon['pid']}) is not running")
        elif now - beat > 2 * float(daemon.get("interval_ms") or interval_ms) / 1000:
            flags.append(f"the indexer daemon's last heartbeat was {ago(now - beat)}")
    # each flag a clause: "signed out; never synced", not "signed out.; never synced"
    return Health(ok=not flags, flags=tuple(f.rstrip(".") for f in flags))
