"""A secret of the home (the HTTP token, the remote token key): made once, 0600, kept,
replaced when damaged, never written through a link."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from plaud_index.fsio import own_secret


def make() -> bytes:
    return os.urandom(32)


def whole(held: bytes) -> bool:
    return len(held) == 32


def test_a_secret_is_made_once_private_and_then_read_back(tmp_path: Path) -> None:
    path = tmp_path / "home" / "remote-key"
    first = own_secret(path, make, whole)
    assert own_secret(path, make, whole) == first
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700


def test_a_damaged_secret_is_replaced(tmp_path: Path) -> None:
    path = tmp_path / "remote-key"
    path.write_bytes(b"cut short")
    fresh = own_secret(path, make, whole)
    assert len(fresh) == 32 and path.read_bytes() == fresh


def test_a_link_at_the_secrets_place_is_never_followed(tmp_path: Path) -> None:
    outside = tmp_path / "users-file.txt"
    outside.write_bytes(b"the user's own words")
    path = tmp_path / "home" / "http-token"
    path.parent.mkdir()
    path.symlink_to(outside)
    with pytest.raises(OSError):
        own_secret(path, make, whole)
    assert outside.read_bytes() == b"the user's own words"
