"""The mirror folder: one Markdown file per Plaud recording, written from what a cycle
fetched, never fetched again for it.

Each file is written atomically (temp file, fsync, rename), and only when its text
differs from what was last written there or the file is gone, so an unchanged account
rewrites nothing and mtimes mean "Plaud changed this". A file the user edited is left
alone and the new version goes beside it (``… (updated).md``). A recording deleted in
Plaud moves its file into ``.trash/`` (never deleted), and only when the index's
deletion guard trusts the listing. A recording in a Plaud folder is filed in the
sub-folder of that name, and moves when it moves. The trash and the sub-folders must be
real folders: a symbolic link there is refused and named, never followed. A failure to
write (disk full, read-only) is recorded for ``status`` and logged; it never stops
indexing.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import logging
import os
import stat
import time
from collections import Counter
from collections.abc import Callable, Collection, Iterable
from pathlib import Path

from ..clock import UserZone
from ..fsio import atomic_file, fsync_dir
from ..models import Recording
from .document import render_document
from .names import mirror_stem, pick_name
from .state import Entry, MirrorState, read_mirror_state, write_mirror_state

log = logging.getLogger(__name__)

TRASH = ".trash"
SAVE_S = 2.0  # the state is saved at least this often while files are written


def file_sha(path: Path) -> str | None:
    """The SHA-256 of a regular file; ``None`` when nothing is there. Opened without
    blocking, so a FIFO put in its place is refused rather than waited on."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except FileNotFoundError:
        return None
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        digest = hashlib.sha256()
        while block := fh.read(1 << 20):
            digest.update(block)
        return digest.hexdigest()


class Mirror:
    """The mirror in ``folder``; its state in ``home``. Counts what it did in ``counts``
    (written, unchanged, renamed, kept_edits, trashed, failed)."""

    def __init__(self, folder: Path, home: Path, zone: UserZone,
                 clock: Callable[[], float] = time.time) -> None:
        self.folder = folder
        self.home = home
        self.zone = zone
        self.clock = clock
        self.state: MirrorState = read_mirror_state(home, folder)
        self.counts: Counter[str] = Counter()
        self._dirty = False
        self._saved = clock()

    def ids(self) -> set[str]:
        return set(self.state.files)

    def missing(self, file_ids: Iterable[str]) -> list[str]:
        """Of ``file_ids``, those the mirror has no file for. None while writing fails
        (a read-only folder must not make every cycle fetch everything again)."""
        return [] if self.state.last_error else \
            [fid for fid in file_ids if fid not in self.state.files]

    def put(self, recording: Recording) -> None:
        """Write ``recording``'s file if it changed or is gone; never raises for the disk."""
        if recording.origin:  # a local folder's file: the user has it already
            return
        try:
            self._put(recording)
        except OSError as exc:
            self._failed(f"{exc.filename or self.folder}: {exc.strerror or exc}")
        except ValueError as exc:  # no free name: a thousand files of one date and title
            self._failed(str(exc))

    def _put(self, recording: Recording) -> None:
        data = render_document(recording, self.zone).encode("utf-8")
        sha = hashlib.sha256(data).hexdigest()
        entry = self.state.files.get(recording.file_id)
        stem = mirror_stem(recording, self.zone)
        if entry is not None and entry.stem == stem and entry.sha256 == sha and \
                (self.folder / entry.name).is_file():
            self.counts["unchanged"] += 1
            return
        self._ensure_folder()
        on_disk = file_sha(self.folder / entry.name) if entry else None
        edited = on_disk is not None and entry is not None and on_disk != entry.sha256
        if entry is not None and entry.stem == stem and not edited:
            name = entry.name  # the same name, new text (or the file was removed)
        else:
            name = pick_name(stem, recording.file_id, self._taken_for(recording.file_id, sha),
                             label="updated" if edited and entry and entry.stem == stem else "")
            if (self.folder / name).is_file():  # these very bytes: ours, from a lost state
                self._record(recording.file_id, Entry(name, stem, sha, self.clock()))
                self.counts["unchanged"] += 1
                return
        self._write(self.folder / name, data)
        if edited and entry is not None:
            self.state.kept_edits += 1
            self.counts["kept_edits"] += 1
            log.warning("Mirror: %s was edited since it was written; it is left as it is and "
                        "the new version is %s", entry.name, name)
        elif entry is not None and entry.name != name and on_disk is not None:
            (self.folder / entry.name).unlink(missing_ok=True)  # our own, unedited copy
            self._drop_if_empty((self.folder / entry.name).parent)
            self.counts["renamed"] += 1
        self.counts["written"] += 1
        self._record(recording.file_id, Entry(name, stem, sha, self.clock()))

    def seen(self, file_id: str) -> None:
        """``file_id``'s file was just put, written or found as it should be: its time moves
        on (so what asked for it again, a speaker's new local name, is settled)."""
        entry = self.state.files.get(file_id)
        if entry is not None:
            entry.written = max(entry.written, self.clock())
            self._dirty = True

    def _taken_for(self, file_id: str, sha: str) -> Callable[[str], bool]:
        """A name is taken when another recording's file has it (whatever the case: macOS
        and Windows fold it) or anything but these very bytes is there: a file of the
        user's is never overwritten, and one identical to ours is ours (a lost state)."""
        others = {e.name.casefold() for fid, e in self.state.files.items() if fid != file_id}

        def taken(name: str) -> bool:
            if name.casefold() in others:
                return True
            try:
                return file_sha(self.folder / name) not in (None, sha)
            except OSError:  # a folder, a FIFO, unreadable: not ours to replace
                return True

        return taken

    def remove(self, file_ids: Collection[str]) -> None:
        """Move the files of recordings deleted in Plaud into ``.trash/``."""
        trash = self.folder / TRASH
        for file_id in sorted(set(file_ids) & set(self.state.files)):
            entry = self.state.files[file_id]
            try:
                if (self.folder / entry.name).is_file():
                    self._real_dir(trash)
                    stem = Path(entry.name).name.removesuffix(".md")  # sub-folders flattened
                    target = pick_name(stem, file_id, lambda n: (trash / n).exists())
                    os.rename(self.folder / entry.name, trash / target)
                    self.counts["trashed"] += 1
                    log.info("Mirror: %s was deleted in Plaud; moved to %s/", entry.name,
                             TRASH)
            except OSError as exc:
                self._failed(f"{exc.filename or self.folder}: {exc.strerror or exc}")
                continue
            del self.state.files[file_id]
            self._dirty = True

    def save(self) -> None:
        """Keep the state (and the folder's new names) on disk; a failure is logged."""
        if not self._dirty:
            return
        try:
            if self.folder.is_dir():
                fsync_dir(self.folder)
            write_mirror_state(self.home, self.state)
        except OSError as exc:
            log.error("Cannot save the mirror's state in %s: %s", self.home, exc)
            return
        self._dirty, self._saved = False, self.clock()

    def _ensure_folder(self) -> None:
        if not self.folder.is_dir():
            self.folder.mkdir(parents=True, mode=0o700)
            log.info("Mirror: created %s", self.folder)

    def _write(self, path: Path, data: bytes) -> None:
        self._real_dir(path.parent)
        with atomic_file(path) as fh:
            fh.write(data)

    def _drop_if_empty(self, path: Path) -> None:
        """A sub-folder the last file moved out of (a recording moved in Plaud) goes too."""
        if path != self.folder and path.parent == self.folder:
            with contextlib.suppress(OSError):  # only when empty: the user's files keep it
                path.rmdir()

    def _real_dir(self, path: Path) -> None:
        """``path`` made (0700) if missing, and refused unless it is a real folder inside the
        mirror: a symlink there would carry our writes (or the trash) out of the mirror."""
        for part in [path, *path.parents]:
            if part == self.folder:
                break
            if part.is_symlink():
                raise OSError(errno.ELOOP, "a symbolic link where the mirror keeps a folder; "
                              "move it away", str(part))
        path.mkdir(parents=True, mode=0o700, exist_ok=True)

    def _record(self, file_id: str, entry: Entry) -> None:
        self.state.files[file_id] = entry
        self.state.last_write = entry.written
        self.state.last_error = self.state.last_error_at = None
        self._dirty = True
        if self.clock() - self._saved >= SAVE_S:
            self.save()

    def _failed(self, message: str) -> None:
        if not self.counts["failed"]:
            log.warning("Mirror: cannot write %s; indexing goes on", message)
        self.counts["failed"] += 1
        self.state.last_error, self.state.last_error_at = message, self.clock()
        self._dirty = True
