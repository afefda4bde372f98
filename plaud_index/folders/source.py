"""Local folders as a recording source: meeting files under configured roots only.

Safety: roots are resolved once (symlinks followed, ``..`` collapsed) and a file is
read only when its own resolved path is inside one of them, so a symlink pointing
out of a root is never followed out. Hidden folders (``.git``, ``.ssh``) are not
walked, credential-looking names are never read whatever their extension, files
over ``MAX_FILE_BYTES`` are skipped, and a file that cannot be read or decoded is
skipped with its reason (the indexer quarantines it like an odd Plaud recording).

Ids are ``folder:<root key>:<path key>``, stable for a resolved path. A root that
is missing or not a folder (an unmounted disk) is reported in ``unavailable`` so
that nothing of it is deleted from the index.
"""

from __future__ import annotations

import fnmatch
import hashlib
import logging
import os
from collections.abc import Collection, Iterator, Sequence
from datetime import datetime, timezone
from pathlib import Path

from ..errors import MalformedRecordingError, RecordingGoneError
from ..models import Listed, Recording
from .formats import FORMATS, parse_file

log = logging.getLogger(__name__)

PREFIX = "folder:"
MAX_FILE_BYTES = 20_000_000
DENYLIST = (".env*", ".netrc", "id_*", "*.pem", "*.key", "credentials.json", ".npmrc",
            ".pypirc", "*.kdbx")


def _key(text: str, size: int) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:size]


def root_prefix(root: Path) -> str:
    """Every id of a file under ``root`` starts with this."""
    return f"{PREFIX}{_key(str(root), 8)}:"


def denied(name: str) -> bool:
    return any(fnmatch.fnmatch(name.lower(), pattern) for pattern in DENYLIST)


class FolderSource:
    """``RecordingSource`` over meeting files under ``roots``."""

    def __init__(self, roots: Sequence[Path], exclude: Sequence[Path] = ()) -> None:
        """``exclude``: folders never read, wherever they are (the Markdown mirror, which
        holds the Plaud recordings that are indexed already)."""
        self.exclude = [Path(os.path.abspath(os.path.expanduser(p))).resolve()
                        for p in exclude]
        self.roots = []
        for root in (Path(os.path.abspath(os.path.expanduser(r))) for r in roots):
            if any(root.resolve().is_relative_to(x) for x in self.exclude):
                log.warning("Not indexing folder %s: it is in the Markdown mirror, whose "
                            "recordings are indexed from Plaud already", root)
            else:
                self.roots.append(root)
        self.unavailable: list[Path] = []  # roots missing at the last listing
        self._paths: dict[str, Path] = {}

    def list_recordings(self, tail_hint: str | None = None) -> dict[str, Listed]:
        listing: dict[str, Listed] = {}
        self.unavailable = []
        for root in self.roots:
            resolved = root.resolve()
            if not resolved.is_dir():
                log.warning("Folder %s is missing or not a folder (unmounted?): nothing of "
                            "it is deleted from the index", root)
                self.unavailable.append(resolved)
                continue
            for path in self._walk(resolved):
                file_id = root_prefix(resolved) + _key(str(path), 24)
                stat = path.stat()
                self._paths[file_id] = path
                listing[file_id] = Listed(file_id, "", version=f"{stat.st_mtime_ns}-"
                                          f"{stat.st_size}")
        return listing

    def kept(self, known: Collection[str]) -> set[str]:
        prefixes = tuple(root_prefix(root) for root in self.unavailable)
        return {fid for fid in known if prefixes and fid.startswith(prefixes)}

    def rejected(self) -> dict[str, str]:
        return {}  # every file gets an id from its path; unreadable ones are skipped later

    def problems(self) -> list[Exception]:
        return []  # a missing root is a warning: it may be a disk not plugged in

    def _walk(self, root: Path) -> Iterator[Path]:
        seen: set[tuple[int, int]] = set()
        for folder, dirs, files in os.walk(root, followlinks=True):
            here = Path(folder)
            try:
                st = here.stat()
            except OSError:
                dirs[:] = []
                continue
            if (st.st_dev, st.st_ino) in seen:  # a symlink loop
                dirs[:] = []
                continue
            seen.add((st.st_dev, st.st_ino))
            dirs[:] = sorted(d for d in dirs if not d.startswith(".") and
                             (here / d).resolve() not in self.exclude)
            for name in sorted(files):
                if name.startswith(".") or denied(name) or \
                        not name.lower().endswith(FORMATS):
                    continue
                path = (here / name).resolve()
                if path.is_relative_to(root) and path.is_file():
                    yield path

    def get_recording(self, file_id: str) -> Recording:
        path = self._paths.get(file_id)
        if path is None:
            self.list_recordings()
            path = self._paths.get(file_id)
        if path is None or not path.is_file():
            raise RecordingGoneError(f"{file_id} is no longer in the configured folders")
        if not any(path.is_relative_to(root.resolve()) for root in self.roots):
            raise MalformedRecordingError(f"{path} is outside the configured folders")
        try:
            size = path.stat().st_size
            if size > MAX_FILE_BYTES:
                raise MalformedRecordingError(f"{path} is {size} bytes; files over "
                                              f"{MAX_FILE_BYTES} are not read")
            data = path.read_bytes()
        except OSError as exc:
            raise MalformedRecordingError(f"{path} cannot be read: {exc.strerror}") from exc
        parsed = parse_file(path.name, data)
        mtime = datetime.fromtimestamp(path.stat().st_mtime, timezone.utc)
        ends = [u.end_ms for u in parsed.utterances]
        return Recording(file_id=file_id, title=parsed.title or path.stem,
                         created_at=parsed.created_at or mtime, start_at=None,
                         duration_ms=max(ends, default=0), utterances=parsed.utterances,
                         notes=parsed.notes, origin=str(path))
