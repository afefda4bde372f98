"""Every configured source as one: the Plaud account and local folders, in one cycle.

Ids do not collide (folder ids start with ``folder:``), so the listing is the union.
One part failing does not stop the other: its recordings are kept in the index
(``kept``), its error is reported (``problems``), and the rest is indexed. A Plaud
sign-in that was never made is no failure when folders are configured: those users
index folders only.
"""

from __future__ import annotations

import logging
from collections.abc import Collection
from typing import TYPE_CHECKING

from .errors import PlaudAuthError, SourceError
from .folders.source import PREFIX, FolderSource
from .models import Listed, Recording
from .plaud import RecordingSource
from .plaud import make_source as make_plaud_source

if TYPE_CHECKING:
    from .config import Config

log = logging.getLogger(__name__)


class CombinedSource:
    def __init__(self, plaud: RecordingSource | None, folders: FolderSource) -> None:
        self.plaud = plaud
        self.folders = folders
        self._failed: list[tuple[str, Exception]] = []

    def _part(self, file_id: str) -> RecordingSource:
        if file_id.startswith(PREFIX) or self.plaud is None:
            return self.folders
        return self.plaud

    def list_recordings(self, tail_hint: str | None = None) -> dict[str, Listed]:
        self._failed = []
        listing: dict[str, Listed] = {}
        # folders first: the listing's last id stays Plaud's (its paging hint, list_tail)
        for kind, part in (("folders", self.folders), ("plaud", self.plaud)):
            if part is None:
                continue
            try:
                listing.update(part.list_recordings(tail_hint if kind == "plaud" else None))
            except SourceError as exc:
                log.warning("Listing %s failed (%s); indexing the other source", kind, exc)
                self._failed.append((kind, exc))
        return listing

    def get_recording(self, file_id: str) -> Recording:
        return self._part(file_id).get_recording(file_id)

    def kept(self, known: Collection[str]) -> set[str]:
        kept = self.folders.kept(known)
        for kind, _ in self._failed:
            folder = kind == "folders"
            kept |= {fid for fid in known if fid.startswith(PREFIX) is folder}
        return kept

    def rejected(self) -> dict[str, str]:
        return {**(self.plaud.rejected() if self.plaud is not None else {}),
                **self.folders.rejected()}

    def problems(self) -> list[Exception]:
        return [exc for _, exc in self._failed]


def make_source(config: Config) -> RecordingSource:
    """Plaud alone, or Plaud and the configured folders together."""
    if not config.folders:
        return make_plaud_source(config)
    try:
        plaud: RecordingSource | None = make_plaud_source(config)
    except PlaudAuthError as exc:
        log.info("Not indexing Plaud (%s); indexing the configured folders", exc)
        plaud = None
    return CombinedSource(plaud, folder_source(config))


def folder_source(config: Config) -> FolderSource:
    """The configured folders, the Markdown mirror left out (it would index every Plaud
    recording twice)."""
    mirror = config.mirror
    for root in config.folders if mirror else ():
        if mirror and mirror.resolve() != root.resolve() and \
                mirror.resolve().is_relative_to(root.resolve()):
            log.warning("The Markdown mirror %s is inside the indexed folder %s: it is "
                        "skipped there", mirror, root)
    return FolderSource(config.folders, exclude=[mirror] if mirror else [])
