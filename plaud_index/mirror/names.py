"""File names in the mirror: ``2026-07-08 Q3 budget review.md``, safe everywhere. Pure.

A name is one path component that no title can turn into anything else: no
separators or ``..``, none of the characters Windows, macOS or Obsidian links
refuse, no control or invisible characters, no reserved device name, not hidden,
and at most ``MAX_NAME_BYTES`` of UTF-8 (file systems allow 255) with room left for
the suffixes below. Names are NFC, as macOS and the sync services store them.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable

from ..clock import UserZone
from ..models import Recording

SUFFIX = ".md"
MAX_TITLE_BYTES = 150  # the title's part; the date, a suffix and ".md" fit in 255
# Windows and Obsidian refuse these in names; "#^[]|" break [[wikilinks]]
_UNSAFE = re.compile(r'[\x00-\x1f\x7f-\x9f/\\:*?"<>|#^\[\]\u200b-\u200f\u202a-\u202e'
                     r"\u2028\u2029\u2060-\u2069\ufeff]")
_RESERVED = re.compile(r"^(con|prn|aux|nul|com\d|lpt\d)(\..*)?$", re.IGNORECASE)


def safe_title(title: str) -> str:
    """A title as the readable part of a file name; ``Untitled`` when nothing is left."""
    text = " ".join(_UNSAFE.sub(" ", unicodedata.normalize("NFC", title)).split())
    text = text.lstrip(".-").rstrip(". ")
    encoded = text.encode("utf-8")
    if len(encoded) > MAX_TITLE_BYTES:
        text = encoded[:MAX_TITLE_BYTES].decode("utf-8", "ignore").rstrip(". ")
    if not text or _RESERVED.match(text):
        text = f"{text}_" if text else "Untitled"
    return text


def base_stem(recording: Recording, zone: UserZone) -> str:
    """The name before any suffix: the local date of the recording, then its title."""
    day = zone.local(recording.created_at).date().isoformat()
    return f"{day} {safe_title(recording.title)}"


def sub_folder(recording: Recording) -> str:
    """The sub-folder a recording's file goes in: its (first) Plaud folder's name, made
    safe like a title; ``""`` (the mirror's top) for a recording in no folder."""
    return safe_title(recording.folders[0]) if recording.folders else ""


def mirror_stem(recording: Recording, zone: UserZone) -> str:
    """``Work/2026-07-08 Q3 budget review``: the sub-folder, then the base stem. When the
    recording moves to another Plaud folder its stem changes, so its file moves with it."""
    folder = sub_folder(recording)
    stem = base_stem(recording, zone)
    return f"{folder}/{stem}" if folder else stem


def pick_name(stem: str, file_id: str, taken: Callable[[str], bool],
              label: str = "") -> str:
    """``stem.md``, or ``stem (label).md``; on a clash the file id tells two recordings
    apart (``stem (a1b2c3).md``), and a counter anything else."""
    tag = f" ({label})" if label else ""
    ident = "".join(c for c in file_id if c.isalnum())[:8] or "id"
    candidates = [f"{stem}{tag}{SUFFIX}", f"{stem}{tag} ({ident}){SUFFIX}"]
    candidates += [f"{stem}{tag} ({ident} {n}){SUFFIX}" for n in range(2, 1000)]
    for name in candidates:
        if not taken(name):
            return name
    raise ValueError(f"no free name for {stem!r}")  # a thousand files with one title
