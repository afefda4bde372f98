"""Is the index fresh? Flags for ``status`` from the sync state. Pure (time is passed in)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .config import format_interval


def health(state: Mapping[str, Any], now: float, interval_ms: int,
           daemon_alive: bool | None) -> dict[str, Any]:
    """``{"ok": bool, "flags": [...]}``; each flag is a sentence a user can act on."""
    interval = interval_ms / 1000
    flags: list[str] = []
    last = state.get("last_success")
    if last is None:
        flags.append("never synced: run `python -m plaud_index indexer --once`")
    elif now - float(last) > 3 * interval:
        flags.append(f"stale: no successful sync for {format_interval(int(now - last) * 1000)}"
                     f" (more than 3 intervals of {format_interval(interval_ms)})")
    if state.get("last_error_kind") == "PlaudAuthError":
        flags.append("auth expired: run `plaud-index-mcp login`")
    daemon = state.get("daemon") or {}
    if daemon.get("pid"):
        beat = float(daemon.get("heartbeat") or 0)
        if daemon_alive is False:
            flags.append(f"the indexer daemon (pid {daemon['pid']}) is not running")
        elif now - beat > 2 * float(daemon.get("interval_ms") or interval_ms) / 1000:
            flags.append(f"the indexer daemon's heartbeat is {int(now - beat)}s old")
    return {"ok": not flags, "flags": flags}
