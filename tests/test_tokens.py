"""Token storage: the Keychain code through a fake ``security`` on PATH, the file store."""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
from pathlib import Path

import pytest

from plaud_index.errors import TokenStoreError
from plaud_index.plaud.tokens import (
    FileTokenStore,
    KeychainTokenStore,
    Tokens,
    default_store,
    migrate_legacy,
)

FAKE_SECURITY = r'''#!PYTHON
"""A stand-in for /usr/bin/security: records argv and stdin, keeps items in a JSON file."""
import json, os, shlex, sys
state = os.environ["FAKE_SECURITY_STATE"]
with open(state + ".argv", "a") as log:
    log.write(json.dumps(sys.argv[1:]) + "\n")
if os.environ.get("FAKE_SECURITY_LOCKED"):
    sys.stderr.write("security: SecKeychainItemCopyContent: User interaction is not allowed.\n")
    sys.exit(36)
items = json.load(open(state)) if os.path.exists(state) else {}
def opt(args, flag):
    return args[args.index(flag) + 1] if flag in args else None
def run(args):
    key = f"{opt(args, '-s')}/{opt(args, '-a')}"
    if args[0] == "find-generic-password":
        if key not in items:
            sys.stderr.write("The specified item could not be found in the keychain.\n")
            return 44
        print(items[key])
    elif args[0] == "add-generic-password":
        secret = opt(args, "-w") or bytes.fromhex(opt(args, "-X")).decode()
        items[key] = secret
    elif args[0] == "delete-generic-password":
        if key not in items:
            return 44
        del items[key]
    json.dump(items, open(state, "w"))
    return 0
if sys.argv[1:] == ["-i"]:
    stdin = sys.stdin.read()
    with open(state + ".stdin", "a") as log:
        log.write(stdin)
    codes = [run(shlex.split(line)) for line in stdin.splitlines() if line.strip()]
    sys.exit(max(codes or [0]))
sys.exit(run(sys.argv[1:]))
'''

TOKENS = Tokens("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1XzEifQ.c2lnbmF0dXJl-test", "rt_secret_value_123",
                "Bearer", 1_790_000_000_000)


@pytest.fixture
def security(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "security"
    script.write_text(FAKE_SECURITY.replace("PYTHON", sys.executable))
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_SECURITY_STATE", str(tmp_path / "keychain.json"))
    return tmp_path / "keychain.json"


def argv_log(state: Path) -> str:
    return state.with_name(state.name + ".argv").read_text()


def test_keychain_round_trip_never_puts_the_secret_on_argv(security: Path) -> None:
    store = KeychainTokenStore(shutil.which("security") or "")
    assert store.load() is None
    store.save(TOKENS)
    assert store.load() == TOKENS
    argv = argv_log(security)
    for secret in (TOKENS.access_token, TOKENS.refresh_token, TOKENS.to_json()["access_token"],
                   json.dumps(TOKENS.to_json()).encode().hex()):
        assert secret not in argv
    assert '"-s", "plaud-index-mcp"' in argv and '"-a", "plaud-mcp"' in argv
    store.delete()
    assert store.load() is None


def test_locked_keychain_is_a_temporary_error_that_deletes_nothing(
        security: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = KeychainTokenStore(shutil.which("security") or "")
    store.save(TOKENS)
    monkeypatch.setenv("FAKE_SECURITY_LOCKED", "1")
    with pytest.raises(TokenStoreError, match="locked"):
        store.load()
    with pytest.raises(TokenStoreError, match="locked"):
        store.save(TOKENS)
    monkeypatch.delenv("FAKE_SECURITY_LOCKED")
    assert store.load() == TOKENS


def test_default_store_is_the_keychain_on_macos_and_a_file_elsewhere(
        security: Path, tmp_path: Path) -> None:
    fake = shutil.which("security") or ""
    assert isinstance(default_store(tmp_path, "darwin", fake), KeychainTokenStore)
    assert isinstance(default_store(tmp_path, "linux", fake), FileTokenStore)
    assert isinstance(default_store(tmp_path, "darwin", str(tmp_path / "none")), FileTokenStore)


def test_file_store_is_0600_and_atomic(tmp_path: Path) -> None:
    store = FileTokenStore(tmp_path / "home" / "tokens.json")
    store.save(TOKENS)
    assert stat.S_IMODE(store.path.stat().st_mode) == 0o600
    assert store.load() == TOKENS
    assert [p.name for p in store.path.parent.iterdir()] == ["tokens.json"]
    store.delete()
    assert store.load() is None


def test_tokens_never_show_secrets_in_repr() -> None:
    assert TOKENS.refresh_token not in repr(TOKENS) and TOKENS.access_token not in repr(TOKENS)


def test_refresh_response_without_refresh_token_keeps_the_old_one() -> None:
    new = Tokens.from_response({"access_token": "a2", "expires_in": 60}, 1000, previous=TOKENS)
    assert new.refresh_token == TOKENS.refresh_token and new.expires_at == 61_000


def test_unreadable_file_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    path.write_text("{not json")
    with pytest.raises(TokenStoreError, match="Cannot read"):
        FileTokenStore(path).load()


def test_broken_legacy_file_is_ignored(tmp_path: Path) -> None:
    legacy = tmp_path / "tokens-mcp.json"
    legacy.write_text("[]")
    assert not migrate_legacy(FileTokenStore(tmp_path / "t.json"), legacy)
