"""Reading one index file as the manifest recorded it: sizes, checksums, arrays.

Every file a reader opens may be damaged: any failure to read one, a size that
differs from the manifest's record, or a checksum that does not match is an
``IndexCorruptError`` naming the file; the indexer then rebuilds from the source.
"""

from __future__ import annotations

import mmap
import threading
import zlib
from pathlib import Path
from tokenize import TokenError
from typing import Any

import numpy as np

from ..errors import IndexCorruptError
from .manifest import SegmentEntry

REBUILD = "the indexer rebuilds it from Plaud on its next cycle (or delete the folder)"
# numpy parses .npy headers with ast.literal_eval, and CPython 3.11's AST constructor is
# not thread-safe (concurrent calls raise "SystemError: AST constructor recursion depth
# mismatch"): readers on several threads take turns for that moment.
NPY_HEADERS = threading.Lock()
# What reading a damaged .npy raises: numpy parses its header text with tokenize and
# ast.literal_eval, so a flipped header byte can end in TokenError or SyntaxError (or a
# dict of the wrong shape: TypeError, KeyError), besides numpy's own ValueError.
NPY_DAMAGE = (OSError, ValueError, EOFError, SyntaxError, TokenError, TypeError, KeyError,
              RecursionError, OverflowError)


def damaged(path: Path | str, why: object) -> IndexCorruptError:
    return IndexCorruptError(f"The index file {path} is damaged ({why}); {REBUILD}.")


def crc32_of(path: Path) -> int:
    crc = 0
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            crc = zlib.crc32(block, crc)
    return crc


def check_sizes(directory: Path, entry: SegmentEntry) -> None:
    for suffix, (expected, _) in entry.files.items():
        path = directory / f"{entry.name}{suffix}"
        size = path.stat().st_size  # FileNotFoundError: the caller decides (a race or damage)
        if size != expected:
            raise damaged(path, f"{size} bytes, the manifest recorded {expected}")


def verify_checksums(directory: Path, entry: SegmentEntry) -> None:
    """Read every byte of a segment's files against the manifest's CRC-32: a flipped byte
    in a vector file is otherwise invisible."""
    for suffix, (_, expected) in entry.files.items():
        path = directory / f"{entry.name}{suffix}"
        if crc32_of(path) != expected:
            raise damaged(path, "its checksum does not match the manifest")


def map_npy(path: Path) -> np.ndarray:
    """A ``.npy`` file memory-mapped read-only (nothing is read until used)."""
    try:
        with NPY_HEADERS:
            array: np.ndarray = np.load(path, mmap_mode="r")
    except FileNotFoundError:
        raise
    except NPY_DAMAGE as exc:
        raise damaged(path, f"{type(exc).__name__}: {exc}") from exc
    return array


def map_bytes(path: Path) -> Any:
    """A whole file memory-mapped read-only; stays valid after the file is removed."""
    try:
        with path.open("rb") as fh:
            if not path.stat().st_size:
                return b""
            return mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    except FileNotFoundError:
        raise
    except (OSError, ValueError) as exc:
        raise damaged(path, f"{type(exc).__name__}: {exc}") from exc
