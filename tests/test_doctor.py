"""doctor and auth status: each part checked, each failure named with its fix."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from dataclasses import replace
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
from conftest import free_port
from fake_plaud import FakePlaud, Rule

from plaud_index.config import Config, load_config
from plaud_index.plaud import auth_status
from plaud_index.plaud.tokens import default_store
from plaud_index.setup.doctor import (
    check_callback_port,
    check_folders,
    check_plaud,
    check_sign_in,
    run_checks,
)

REPO = Path(__file__).resolve().parent.parent


def by_name(config: Config) -> dict[str, tuple[str, str, str | None]]:
    return {c.name: (c.status, c.detail, c.fix) for c in run_checks(config)}


def test_signed_in_and_reachable(fake: FakePlaud, plaud_env: dict[str, str],
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PLAUD_EMBEDDER", "mock")
    checks = by_name(load_config())
    assert checks["model"][0] == "ok"
    assert checks["sign-in"][0] == "ok" and "renews itself" in checks["sign-in"][1]
    assert checks["plaud"] == ("ok", f"{fake.base_url}/developer/api accepts the sign-in "
                               "(Tester (test@example.com))", None)
    assert checks["index"][0] == "fail" and "indexer --once" in str(checks["index"][2])


def test_an_unreachable_plaud_is_a_network_problem_not_a_sign_in_one(
        fake: FakePlaud, plaud_env: dict[str, str]) -> None:
    fake.stop()
    config = load_config()
    assert check_sign_in(config).status == "ok"  # the sign-in itself is fine
    plaud = check_plaud(config)
    assert plaud.status == "fail" and plaud.detail.startswith("Cannot reach Plaud")
    assert plaud.fix is not None and "network" in plaud.fix
    assert auth_status(config, online=True).signed_in


def test_doctor_asks_a_failing_plaud_twice_not_for_half_a_minute(
        fake: FakePlaud, plaud_env: dict[str, str]) -> None:
    """Someone waits on doctor: one retry, where a sync's five tries ride out a hiccup."""
    trouble = Rule(path="users/current", action="status", times=None, args={"code": 503})
    fake.faults.append(trouble)
    plaud = check_plaud(load_config())
    assert plaud.status == "fail" and "503" in plaud.detail
    assert plaud.fix == "wait and run doctor again"
    assert trouble.fired == 2


def test_an_expired_sign_in_says_log_in(fake: FakePlaud, plaud_env: dict[str, str],
                                        index_home: Path) -> None:
    fake.config.refresh_mode = "reject"
    tokens = default_store(index_home).load()
    assert tokens is not None
    fake.access[tokens.access_token]["revoked"] = True
    plaud = check_plaud(load_config())
    assert plaud.status == "fail" and "auth expired" in plaud.detail
    assert plaud.fix == "run `plaud-index-mcp login`"


def test_no_sign_in_fails_with_the_login_command(config: Config) -> None:
    check = check_sign_in(replace(config, client="plaud"))
    assert check.status == "fail" and check.fix == "run `plaud-index-mcp login`"


def test_a_busy_login_port_is_named(config: Config) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        taken = replace(config, plaud=replace(
            config.plaud, callback_url=f"http://127.0.0.1:{port}/auth/callback"))
        check = check_callback_port(taken)
    assert check.status == "fail" and f"port {port}" in check.detail
    assert check.fix is not None and f"lsof -i :{port}" in check.fix


def test_doctor_command_exit_code_and_json(tmp_path: Path) -> None:
    env = {**os.environ, "PLAUD_INDEX_HOME": str(tmp_path), "PLAUD_CLIENT": "mock",
           "PLAUD_EMBEDDER": "mock", "HOME": str(tmp_path),  # no client configs of the machine
           "PLAUD_CALLBACK_URL": f"http://localhost:{free_port()}/auth/callback"}

    def doctor(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "plaud_index", "doctor", *args],
                              capture_output=True, text=True, cwd=REPO, env=env, timeout=120)

    before = doctor()
    assert before.returncode == 1 and "[FAIL] index: no index yet" in before.stdout
    assert "fix: run `plaud-index-mcp indexer --once`" in before.stdout
    subprocess.run([sys.executable, "-m", "plaud_index", "indexer", "--once"], check=True,
                   capture_output=True, cwd=REPO, env=env, timeout=120)
    after = doctor("--json")
    assert after.returncode == 0, after.stdout
    checks = {c["name"]: c["status"] for c in json.loads(after.stdout)}
    assert checks == {"model": "ok", "sign-in": "skip", "plaud": "skip", "folders": "skip",
                      "login port": "ok", "indexer": "warn", "index": "ok", "mirror": "skip",
                      "clients": "skip"}


def test_folders_are_checked_and_folders_alone_need_no_sign_in(config: Config,
                                                              tmp_path: Path) -> None:
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "standup.md").write_text("# Standup\nAll good.")
    present = replace(config, client="plaud", folders=(tmp_path / "notes",))
    assert check_folders(present).status == "ok"
    assert "1 meeting files in 1 folder" in check_folders(present).detail
    assert check_sign_in(present).status == "warn"  # folders only is a valid set-up
    gone = replace(present, folders=(tmp_path / "notes", tmp_path / "usb"))
    check = check_folders(gone)
    assert check.status == "fail" and str(tmp_path / "usb") in check.detail


def test_the_port_a_login_just_used_is_free_though_a_socket_waits_in_time_wait(
        config: Config) -> None:
    from plaud_index.plaud.auth import _Listener

    listener = _Listener(("127.0.0.1", 0), BaseHTTPRequestHandler)  # as login binds it
    port = listener.server_address[1]
    client = socket.create_connection(("127.0.0.1", port))
    accepted, _ = listener.socket.accept()
    accepted.close()  # the callback's side closes first: its socket stays in TIME-WAIT
    client.close()
    listener.server_close()
    used = replace(config, plaud=replace(
        config.plaud, callback_url=f"http://127.0.0.1:{port}/auth/callback"))
    check = check_callback_port(used)
    assert check.status == "ok", check.detail


def test_a_cycle_failing_on_a_folder_in_its_locks_place_fails_the_index_check_with_the_fix(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from plaud_index.cli import main

    monkeypatch.setenv("PLAUD_CLIENT", "mock")
    monkeypatch.setenv("PLAUD_EMBEDDER", "mock")
    config = load_config()
    assert main(["indexer", "--once"]) == 0
    (config.home / "indexer.lock").unlink(missing_ok=True)
    (config.home / "indexer.lock").mkdir()
    assert main(["indexer", "--once"]) == 1
    status, detail, fix = by_name(config)["index"]
    assert status == "fail" and "indexer.lock is in the way" in detail and "move it away" in detail
    assert fix and "indexer --once" in fix
    (config.home / "indexer.lock").rmdir()
    assert main(["indexer", "--once"]) == 0
    assert by_name(config)["index"][0] == "ok"
