"""sync_policy: what a cycle re-fetches and when it may delete."""

from __future__ import annotations

import math

from helpers import indexed

from plaud_index.models import Listed
from plaud_index.sync.policy import REVALIDATE_PERIOD_S, decide_deletions, plan_fetches

NOW = 1_790_000_000.0  # 2026-09-21
OLD = "2026-01-01T00:00:00+00:00"
RECENT = "2026-09-19T00:00:00+00:00"


def known(n: int, created: str = OLD, chunks: int = 3) -> dict[str, object]:
    return {f"r{i}": indexed(f"r{i}", chunks, title=f"T{i}", created_at=created)
            for i in range(n)}


def rows(ids: object) -> dict[str, Listed]:
    return {i: Listed(i, f"T{i[1:]}") for i in ids}  # type: ignore[attr-defined]


def test_new_processing_renamed_and_recent_are_fetched_every_cycle() -> None:
    index = {**known(3), "p": indexed("p", 0, title="Tp"),
             "fresh": indexed("fresh", 3, title="Tfresh", created_at=RECENT)}
    listing = {**rows(["r0", "r1", "r2"]), "p": Listed("p", "Tp"),
               "fresh": Listed("fresh", "Tfresh"), "brand-new": Listed("brand-new", "x")}
    listing["r1"] = Listed("r1", "Renamed")
    plan = plan_fetches(listing, index, {}, NOW, 300)  # type: ignore[arg-type]
    assert plan.ids[:4] == ["brand-new", "p", "r1", "fresh"]
    assert (plan.new, plan.processing, plan.renamed, plan.recent) == (1, 1, 1, 1)


def test_old_recordings_are_rechecked_least_recent_first_within_a_daily_budget() -> None:
    index = known(1000)
    checked = {f"r{i}": NOW - i for i in range(1000)}  # r999 was checked longest ago
    plan = plan_fetches(rows(index), index, checked, NOW, 300)  # type: ignore[arg-type]
    budget = math.ceil(1000 * 300 / REVALIDATE_PERIOD_S)
    assert plan.rolling == budget == 4 and plan.ids == ["r999", "r998", "r997", "r996"]


def test_the_rolling_window_covers_everything_within_a_day() -> None:
    index = known(500)
    checked: dict[str, float] = {}
    seen: set[str] = set()
    now = NOW
    for _ in range(int(REVALIDATE_PERIOD_S / 300)):  # one day of 5-minute cycles
        plan = plan_fetches(rows(index), index, checked, now, 300)  # type: ignore[arg-type]
        seen.update(plan.ids)
        checked.update({fid: now for fid in plan.ids})
        now += 300
    assert seen == set(index)


def test_deletions_from_a_healthy_listing_apply_at_once() -> None:
    decision = decide_deletions({"a", "b", "c"}, {"a", "b", "c", "d"}, None)
    assert decision.delete == ["d"] and decision.hold is None


def test_an_empty_listing_never_deletes() -> None:
    for _ in range(3):
        decision = decide_deletions(set(), {"a", "b"}, {"fingerprint": "x"})
        assert decision.delete == [] and "never deletes" in str(decision.warning)


def test_a_shrunken_listing_deletes_only_when_it_repeats() -> None:
    index = {f"r{i}" for i in range(10)}
    first = decide_deletions({"r0", "r1"}, index, None)
    assert first.delete == [] and first.hold and "unless the same listing repeats" in \
        str(first.warning)
    other = decide_deletions({"r0", "r2"}, index, first.hold)
    assert other.delete == []  # a different small listing: still nothing
    again = decide_deletions({"r0", "r2"}, index, other.hold)
    assert len(again.delete) == 8 and again.hold is None
