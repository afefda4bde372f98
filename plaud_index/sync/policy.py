"""What a cycle fetches and what it may delete, when the list has no change markers. Pure.

The developer API's list has ids and names but nothing that says "edited"
(API.md §3.1), so content changes are found by re-fetching details:
- new ids, renamed recordings, and recordings still being processed (no
  transcript or note yet) every cycle;
- recent recordings (created in the last ``RECENT_S``) every cycle: that is when
  notes get regenerated and speakers renamed;
- older ones in a rolling window, least recently checked first, sized so each is
  re-checked at least once per ``REVALIDATE_PERIOD_S`` without hammering the API;
- recordings that failed for a reason of their own (a payload we cannot read) in that
  same window, never more often than every ``SKIPPED_RETRY_S``.
Deletions: what a complete listing no longer has is deleted, except that an empty
listing deletes nothing, ever, and one smaller than half the index deletes only when the
very same listing comes back on a later cycle (a wrong-region token or a glitch must
never wipe the index).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..index.records import IndexedRecording
from ..models import Listed

RECENT_S = 7 * 86400
REVALIDATE_PERIOD_S = 86400
SKIPPED_RETRY_S = 6 * 3600
RETRY_FIRST_S = 60.0  # a recording Plaud failed for is tried again after this, then 4x longer
RETRY_MAX_S = 6 * 3600.0


def retry_delay(tries: int) -> float:
    """Seconds before a recording that failed ``tries`` times in a row is tried again."""
    return float(min(RETRY_FIRST_S * 4.0 ** max(tries - 1, 0), RETRY_MAX_S))


def failed_again(before: Mapping[str, Any] | None, now: float, reason: str) -> dict[str, Any]:
    """A recording's failure record after one more failure: since when it fails, how often
    in a row, when it is due again, and why."""
    tries = int((before or {}).get("tries", 0)) + 1
    return {"since": (before or {}).get("since", now), "tries": tries, "last": now,
            "next": now + retry_delay(tries), "error": reason}


@dataclass(frozen=True)
class FetchPlan:
    ids: list[str]
    new: int = 0
    processing: int = 0
    renamed: int = 0
    recent: int = 0
    rolling: int = 0
    retrying: int = 0  # recordings that failed on Plaud's side, due again (tried last)
    waiting: int = 0  # those not due yet


def _created(rec: IndexedRecording) -> float:
    try:
        return datetime.fromisoformat(rec.created_at).timestamp()
    except ValueError:
        return 0.0


def plan_fetches(listing: Mapping[str, Listed],
                 known: Mapping[str, IndexedRecording], checked: Mapping[str, float],
                 now: float, interval_s: float, forced: Collection[str] = (),
                 skipped: Collection[str] = (),
                 versions: Mapping[str, str] | None = None,
                 failing: Mapping[str, Mapping[str, Any]] | None = None) -> FetchPlan:
    """``skipped``: recordings that failed for a reason of their own. They are not new;
    they join the rolling window, once their last try is ``SKIPPED_RETRY_S`` old.
    ``failing``: recordings Plaud kept failing for (``failed_again``): each is tried again
    once its ``next`` is due, after everything else, so it never holds the others up.
    ``versions``: what a listing's change marker (a folder file's mtime and size) was when
    last read; an entry with a marker is fetched exactly when the marker moved."""
    new, processing, renamed, recent, old, retry = [], [], [], [], [], []
    versions, failing = versions or {}, failing or {}
    waiting = 0
    for file_id, row in listing.items():
        rec = known.get(file_id)
        if file_id in failing:
            due = now >= _number(failing[file_id].get("next"))
            retry.extend([file_id] if due else [])
            waiting += not due
            continue
        name = row.title
        if row.version is not None and (file_id not in skipped or
                                        versions.get(file_id) != row.version):
            if rec is None:
                new.append(file_id)
            elif versions.get(file_id) != row.version:
                renamed.append(file_id)  # changed on disk: the content hash decides
            continue
        if file_id in skipped and rec is None:
            if now - checked.get(file_id, 0.0) >= SKIPPED_RETRY_S:
                old.append(file_id)
        elif rec is None:
            new.append(file_id)
        elif rec.chunk_count == 0 or rec.partial:  # Plaud still working, or we were
            processing.append(file_id)
        elif name and name != rec.title or row.folders is not None and \
                row.folders != rec.folders:  # renamed, or moved to another Plaud folder
            renamed.append(file_id)
        elif file_id in forced or now - _created(rec) < RECENT_S:
            recent.append(file_id)
        else:
            old.append(file_id)
    budget = math.ceil(len(old) * interval_s / REVALIDATE_PERIOD_S)
    rolling = sorted(old, key=lambda fid: checked.get(fid, 0.0))[:budget]
    return FetchPlan(new + processing + renamed + recent + rolling + retry, len(new),
                     len(processing), len(renamed), len(recent), len(rolling), len(retry),
                     waiting)


def _number(value: object) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) \
        else 0.0


def listing_fingerprint(ids: Collection[str]) -> str:
    return hashlib.sha256("\n".join(sorted(ids)).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class DeletionDecision:
    delete: list[str]
    hold: dict[str, Any] | None  # remembered for the next cycle's decision
    warning: str | None


def decide_deletions(listing: Collection[str], known: Collection[str],
                     held: Mapping[str, Any] | None) -> DeletionDecision:
    missing = sorted(set(known) - set(listing))
    if not missing:
        return DeletionDecision([], None, None)
    if not listing:
        return DeletionDecision([], None, f"Plaud listed no recordings but the index has "
                                f"{len(known)}; deleting nothing (an empty listing never "
                                "deletes)")
    if len(listing) >= len(known) / 2:
        return DeletionDecision(missing, None, None)
    fingerprint = listing_fingerprint(listing)
    if held and held.get("fingerprint") == fingerprint:
        return DeletionDecision(missing, None, f"Plaud listed {len(listing)} recordings again "
                                f"(the index has {len(known)}); deleting {len(missing)} now "
                                "that the same listing repeated")
    return DeletionDecision([], {"fingerprint": fingerprint, "listed": len(listing),
                                 "indexed": len(known)},
                            f"Plaud listed only {len(listing)} recordings but the index has "
                            f"{len(known)}; deleting nothing unless the same listing repeats "
                            "next cycle")


def mirror_deletions(decision: DeletionDecision, present: Collection[str],
                     mirrored: Collection[str]) -> list[str]:
    """What the Markdown mirror moves to its trash: what the index deletes, and, when the
    guard trusts this listing (not empty, not short and waiting to repeat), what only
    the mirror still has."""
    trusted = bool(present) and decision.hold is None and \
        (bool(decision.delete) or decision.warning is None)
    gone = set(decision.delete) | ({fid for fid in mirrored if fid not in present}
                                   if trusted else set())
    return sorted(gone & set(mirrored))
