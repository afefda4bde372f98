"""The user's clock: which time zone is theirs, and what "today" and a local day mean.

Plaud stores instants in UTC; a person thinks in their own days. A meeting at
21:30 on 8 July in New York is 01:30 on 9 July in UTC, and "--to 2026-07-08"
must still include it. Zones are ``zoneinfo`` zones, so daylight-saving changes
land on the right day; which zone is the user's is decided in ``config``. Pure.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from .results import Today


@dataclass(frozen=True)
class UserZone:
    """A resolved zone and the name a person (or model) would recognise."""

    name: str
    tz: tzinfo

    def local(self, instant: datetime) -> datetime:
        """``instant`` (aware; naive means UTC) on this zone's wall clock."""
        if instant.tzinfo is None:
            instant = instant.replace(tzinfo=timezone.utc)
        return instant.astimezone(self.tz)

    def offset(self, instant: datetime) -> str:
        """``-04:00`` (``+00:00`` for UTC): the offset at that instant, DST included."""
        return self.local(instant).isoformat()[-6:]


UTC = UserZone("UTC", timezone.utc)


def zone_named(name: str) -> tzinfo | None:
    """The zone an IANA name (or UTC/GMT/Z) names; ``None`` for one this machine lacks."""
    name = name.strip().lstrip(":")
    if not name:
        return None
    if name.upper() in ("UTC", "Z", "GMT"):
        return timezone.utc
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return None


def today(zone: UserZone, now: datetime) -> Today:
    """What every answer says about the user's clock at ``now``."""
    local = zone.local(now)
    return Today(date=local.date().isoformat(), weekday=local.strftime("%A"),
                 timezone=zone.name, utc_offset=zone.offset(now),
                 now=local.isoformat(timespec="seconds"))


def stamps(zone: UserZone, iso: str) -> tuple[str, str]:
    """An ISO instant from the index → (local with offset, UTC), both to the second."""
    instant = datetime.fromisoformat(iso)
    if instant.tzinfo is None:
        instant = instant.replace(tzinfo=timezone.utc)
    return (zone.local(instant).isoformat(timespec="seconds"),
            instant.astimezone(timezone.utc).isoformat(timespec="seconds"))


def format_clock(ms: int | None) -> str:
    """Milliseconds from a recording's start → ``hh:mm:ss`` (``""`` for none)."""
    if ms is None:
        return ""
    seconds = ms // 1000
    return f"{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
