"""Other processes of ours, seen from outside: is one still alive."""

from __future__ import annotations

import os


def process_alive(pid: object) -> bool | None:
    """Is ``pid`` a live process? ``None`` when it is no pid at all."""
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's: alive
        return True
    return True
