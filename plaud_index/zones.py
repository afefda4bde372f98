"""Which time zone is the user's: a setting, else the system's. The edge beside ``clock``.

``PLAUD_TIMEZONE`` or ``timezone`` in config.json names it; otherwise the system's
(``TZ``, then the /etc/localtime link), so a server started by a client with a
bare environment still shows the Mac's own zone.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path

from .clock import UserZone, zone_named

log = logging.getLogger(__name__)


def system_zone(env: Mapping[str, str], localtime: Path = Path("/etc/localtime")
                ) -> UserZone:
    """The system's zone by name where it has one (``TZ``, the /etc/localtime link),
    else the fixed offset the C library reports now."""
    tz_name = env.get("TZ", "")
    if tz_name and (tz := zone_named(tz_name)) is not None:
        return UserZone(tz_name.strip().lstrip(":"), tz)
    try:
        target = os.readlink(localtime)
    except OSError:
        target = ""
    if "zoneinfo/" in target:
        name = target.split("zoneinfo/", 1)[1]
        if (tz := zone_named(name)) is not None:
            return UserZone(name, tz)
    now = datetime.now().astimezone()
    fixed = now.tzinfo or timezone.utc
    return UserZone(now.tzname() or "local", fixed)


def resolve_zone(setting: str | None, env: Mapping[str, str], label: str) -> UserZone:
    """The zone named by ``setting`` (from ``label``), or the system's when it is unset or
    names no zone this machine knows (a warning says so)."""
    if setting:
        tz = zone_named(setting)
        if tz is not None:
            return UserZone(setting.strip(), tz)
        log.warning("Ignoring unknown time zone %r in %s (use an IANA name such as "
                    "Europe/Berlin); using the system's", setting, label)
    return system_zone(env)
