"""Local folders as a recording source: meeting files under configured roots only.

Safety, on the resolved path of everything: roots are resolved once (symlinks
followed, ``..`` collapsed). A link (to a file or a folder) is followed only when
what it points at is inside the same root, and the rules hold for every component of
that target as well as the link's own name: nothing hidden (``.env``, ``.ssh/…``),
no credential-looking name (``*.pem``, ``id_*``, …), so a link cannot reach what the
walk would never read. A link out of the root (to ``/``, say) is resolved by name and
opened never; the walk does not cross into another file system. Files over
``MAX_FILE_BYTES``, binary files and files that cannot be read or decoded are skipped
with their reason (the indexer quarantines them like an odd Plaud recording), and
everything read is cleaned (``cleaning``) like Plaud's text.

Ids are ``folder:<root key>:<path key>``, stable for a resolved path. A root that
is missing or not a folder (an unmounted disk) is reported in ``unavailable``, and a
root or sub-folder that cannot be read in ``unreadable``: nothing of either is deleted
from the index while it lasts.
"""

from __future__ import annotations

import fnmatch
import hashlib
import logging
import os
from collections.abc import Collection, Iterator, Sequence
from datetime import datetime, timezone
from pathlib import Path
from stat import S_ISDIR, S_ISREG

from ..cleaning import clean_line, clean_text
from ..errors import MalformedRecordingError, RecordingGoneError
from ..models import UNREADABLE_FOLDER, Listed, NoteSection, Recording, Utterance
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


def allowed(name: str) -> bool:
    """A name the walk may read or enter: not hidden, not credential-looking."""
    return not name.startswith(".") and not denied(name)


def within(path: Path, root: Path) -> bool:
    """``path`` (resolved) is inside ``root`` and every part of it below the root is
    ``allowed``: a link to ``.env`` or ``.ssh/notes.txt`` fails here like the file would."""
    return path.is_relative_to(root) and all(allowed(p) for p in path.relative_to(root).parts)


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
        # folders (roots or below) the last listing could not read: folder -> why
        self.unreadable: dict[Path, str] = {}
        self._paths: dict[str, Path] = {}

    def list_recordings(self, tail_hint: str | None = None) -> dict[str, Listed]:
        listing: dict[str, Listed] = {}
        self.unavailable, self.unreadable = [], {}
        for root in self.roots:
            resolved = root.resolve()
            if not resolved.is_dir():
                log.warning("Folder %s is missing or not a folder (unmounted?): nothing of "
                            "it is deleted from the index", root)
                self.unavailable.append(resolved)
                continue
            for path, stat in self._walk(resolved):
                file_id = root_prefix(resolved) + _key(str(path), 24)
                self._paths[file_id] = path
                listing[file_id] = Listed(file_id, "", version=f"{stat.st_mtime_ns}-"
                                          f"{stat.st_size}")
        return listing

    def kept(self, known: Collection[str]) -> set[str]:
        """Everything indexed of a root that is missing, or that has a folder which could
        not be read (ids are hashes of paths: which of them were in that folder cannot be
        told, so the whole root is kept until it can be read again)."""
        roots = [*self.unavailable, *(self._root_of(folder) for folder in self.unreadable)]
        prefixes = tuple(root_prefix(root) for root in roots)
        return {fid for fid in known if prefixes and fid.startswith(prefixes)}

    def _root_of(self, folder: Path) -> Path:
        return next(r.resolve() for r in self.roots if folder.is_relative_to(r.resolve()))

    def rejected(self) -> dict[str, str]:
        """The folders that could not be read, with why and what to do (they are reported
        with the skipped recordings)."""
        return {f"{UNREADABLE_FOLDER}{folder}": f"cannot be read ({why}): what was indexed "
                f"from it is kept; give this user read access to it (chmod u+rx \"{folder}\")"
                for folder, why in self.unreadable.items()}

    def problems(self) -> list[Exception]:
        return []  # a missing root is a warning: it may be a disk not plugged in

    def _walk(self, root: Path) -> Iterator[tuple[Path, os.stat_result]]:
        """Meeting files under ``root`` with their stat, by resolved path, each once."""
        seen: set[tuple[int, int]] = set()
        device = root.stat().st_dev
        stack = [root]
        while stack:
            here = stack.pop()
            try:
                with os.scandir(here) as scan:
                    entries = sorted(scan, key=lambda e: e.name, reverse=True)
                identity = here.stat()
            except OSError as exc:
                self.unreadable[here] = exc.strerror or type(exc).__name__
                log.warning("Cannot read folder %s (%s): what was indexed from it is kept",
                            here, self.unreadable[here])
                continue
            if (identity.st_dev, identity.st_ino) in seen:  # reached twice through links
                continue
            seen.add((identity.st_dev, identity.st_ino))
            for entry in entries:
                found = self._entry(entry, root)
                if found is None:
                    continue
                path, stat = found
                if S_ISDIR(stat.st_mode):
                    if stat.st_dev == device and path not in self.exclude:
                        stack.append(path)
                elif S_ISREG(stat.st_mode) and path.name.lower().endswith(FORMATS) and \
                        entry.name.lower().endswith(FORMATS):
                    yield path, stat

    def _entry(self, entry: os.DirEntry[str], root: Path
               ) -> tuple[Path, os.stat_result] | None:
        """What an entry is, by its resolved path, if the walk may go there: its own name
        and every part of its target inside ``root`` pass the rules. A link's target is
        resolved by name first (no file is opened), so a link out of the root costs
        nothing and reaches nothing."""
        if not allowed(entry.name):
            return None
        path = Path(entry.path)
        if entry.is_symlink():
            path = Path(os.path.realpath(entry.path))
            if not within(path, root):
                return None
        try:
            return path, path.stat()
        except OSError:
            return None

    def get_recording(self, file_id: str) -> Recording:
        path = self._paths.get(file_id)
        if path is None:
            self.list_recordings()
            path = self._paths.get(file_id)
        if path is None or not path.is_file():
            raise RecordingGoneError(f"{file_id} is no longer in the configured folders")
        if not any(within(path, root.resolve()) for root in self.roots):
            raise MalformedRecordingError(f"{path} is outside the configured folders")
        data, mtime = read_regular(path)
        parsed = parse_file(path.name, data)
        ends = [u.end_ms for u in parsed.utterances]
        return Recording(file_id=file_id,
                         title=clean_line(parsed.title or path.stem, 500) or "Untitled",
                         created_at=parsed.created_at or mtime, start_at=None,
                         duration_ms=max(ends, default=0),
                         utterances=tuple(_clean_utterance(u) for u in parsed.utterances),
                         notes=tuple(_clean_note(n) for n in parsed.notes),
                         origin=clean_line(str(path), 4096))


def read_regular(path: Path) -> tuple[bytes, datetime]:
    """A regular file's bytes and mtime, opened without following a link put in its place
    since the listing (nor blocking on a FIFO), and at most ``MAX_FILE_BYTES``."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        raise MalformedRecordingError(f"{path} cannot be read: {exc.strerror}") from exc
    with os.fdopen(fd, "rb") as fh:
        stat = os.fstat(fd)
        if not S_ISREG(stat.st_mode):
            raise MalformedRecordingError(f"{path} is not a regular file")
        if stat.st_size > MAX_FILE_BYTES:
            raise MalformedRecordingError(f"{path} is {stat.st_size} bytes; files over "
                                          f"{MAX_FILE_BYTES} are not read")
        try:
            data = fh.read(MAX_FILE_BYTES + 1)
        except OSError as exc:
            raise MalformedRecordingError(f"{path} cannot be read: {exc.strerror}") from exc
    return data, datetime.fromtimestamp(stat.st_mtime, timezone.utc)


def _clean_utterance(u: Utterance) -> Utterance:
    return Utterance(" ".join(clean_text(u.text).split()), u.start_ms, u.end_ms,
                     clean_line(u.speaker, 200))


def _clean_note(n: NoteSection) -> NoteSection:
    return NoteSection(clean_line(n.note_title, 500), clean_line(n.heading, 500),
                       clean_text(n.text).strip())
