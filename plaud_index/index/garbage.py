"""Removing what no manifest names: superseded segments and temp files of crashed writers.

Safe while readers run: a reader that opened a segment keeps its mappings, and one
that read an older manifest retries when a file it names is gone (``store.open_snapshot``).
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

from ..errors import IndexCorruptError
from .manifest import MANIFEST, STAGED, read_manifest

log = logging.getLogger(__name__)

STALE_TMP_S = 60  # a temp file this old belongs to no writer still running


def referenced_segments(directory: Path) -> set[str] | None:
    """Segments either manifest names; ``None`` if one cannot be read (then nothing it may
    name is touched until it is replaced)."""
    referenced: set[str] = set()
    for name in (MANIFEST, STAGED):
        try:
            manifest = read_manifest(directory / name)
        except IndexCorruptError:
            return None
        if manifest:
            referenced.update(s.name for s in manifest.segments)
    return referenced


def remove_unreferenced(directory: Path, referenced: set[str]) -> None:
    for path in directory.iterdir():
        stem = path.name.split(".", 1)[0]
        try:
            stale_tmp = path.name.startswith(".tmp-") and \
                time.time() - path.stat().st_mtime > STALE_TMP_S
            if (path.name.startswith("seg-") and stem not in referenced) or stale_tmp:
                path.rmdir() if path.is_dir() else path.unlink(missing_ok=True)
        except OSError as exc:  # leftovers are harmless; never fail a commit over them
            log.debug("Cannot remove %s: %s", path, exc)
