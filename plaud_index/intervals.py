"""The index interval: how often the indexer syncs, as people write it. Pure.

``"30s"``, ``"5m"``, ``"1h"``, ``"1500ms"`` or a bare number of milliseconds, from the
environment or the config file (the environment wins). A value that is no interval warns
and the next source is used; one outside ``MIN_INTERVAL_MS``..``MAX_INTERVAL_MS`` is
clamped, with a warning. ``config`` puts the result in ``Config``.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping

log = logging.getLogger(__name__)

DEFAULT_INTERVAL_MS = 5 * 60_000
MIN_INTERVAL_MS = 30_000
MAX_INTERVAL_MS = 6 * 3_600_000

_UNITS_MS = {"ms": 1, "s": 1_000, "m": 60_000, "h": 3_600_000}
_INTERVAL_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$", re.IGNORECASE)


def parse_interval(value: object) -> int:
    """``"30s"``, ``"5m"``, ``"1h"``, ``"1500ms"`` or a bare number of ms → ms.

    Raises ``ValueError`` for anything else (booleans, negatives, junk).
    """
    if isinstance(value, bool):
        raise ValueError(f"not an interval: {value!r}")
    if isinstance(value, (int, float)):
        if value <= 0:
            raise ValueError(f"interval must be positive: {value!r}")
        return int(value)
    if not isinstance(value, str):
        raise ValueError(f"not an interval: {value!r}")
    match = _INTERVAL_RE.match(value)
    if not match:
        raise ValueError(f"not an interval: {value!r}")
    number, unit = float(match.group(1)), (match.group(2) or "ms").lower()
    ms = int(number * _UNITS_MS[unit])
    if ms <= 0:
        raise ValueError(f"interval must be positive: {value!r}")
    return ms


def format_interval(ms: int) -> str:
    """The shortest exact human form: 300000 → ``"5m"``, 90000 → ``"90s"``."""
    for unit in ("h", "m", "s"):
        if ms % _UNITS_MS[unit] == 0:
            return f"{ms // _UNITS_MS[unit]}{unit}"
    return f"{ms}ms"


def clamp_interval(ms: int, source: str) -> int:
    clamped = min(max(ms, MIN_INTERVAL_MS), MAX_INTERVAL_MS)
    if clamped != ms:
        log.warning(
            "Index interval %s from %s is outside %s..%s; using %s",
            format_interval(ms), source, format_interval(MIN_INTERVAL_MS),
            format_interval(MAX_INTERVAL_MS), format_interval(clamped),
        )
    return clamped


def resolve_interval(
    env: Mapping[str, str], file_values: Mapping[str, object], file_label: str
) -> tuple[int, str]:
    """Env over the config file over the default; a bad value warns and falls through."""
    candidates: list[tuple[str, object, str]] = [
        ("env", env.get("INDEX_INTERVAL_MS"), "INDEX_INTERVAL_MS"),
        ("env", env.get("PLAUD_INDEX_INTERVAL"), "PLAUD_INDEX_INTERVAL"),
        ("config", file_values.get("indexIntervalMs"), f"{file_label} indexIntervalMs"),
        ("config", file_values.get("indexInterval"), f"{file_label} indexInterval"),
    ]
    for source, raw, label in candidates:
        if raw is None or raw == "":
            continue
        try:
            ms = parse_interval(raw)
        except ValueError:
            log.warning("Ignoring invalid index interval %r in %s", raw, label)
            continue
        return clamp_interval(ms, label), source
    return DEFAULT_INTERVAL_MS, "default"
