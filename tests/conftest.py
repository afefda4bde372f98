"""Shared fixtures. One autouse fixture gives every test its own PLAUD_INDEX_HOME."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import subprocess
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_plaud import FakePlaud
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings

from plaud_index.config import ENV_VARS, Config, build_config
from plaud_index.embedding.embedder import HashEmbedder, OnnxEmbedder
from plaud_index.embedding.files import packaged
from plaud_index.plaud.auth import login
from plaud_index.plaud.settings import plaud_settings
from plaud_index.plaud.tokens import default_store
from plaud_index.plaud.transport import Transport

# The suite runs four workers on two cores beside other jobs: how fast hypothesis can draw
# inputs, and how long one example takes, are the machine's load, not the behaviour under
# test (a listing-row test once failed its health check at one input in 2 s under load).
hypothesis_settings.register_profile("busy machine", deadline=None,
                                     suppress_health_check=[HealthCheck.too_slow])
hypothesis_settings.load_profile("busy machine")

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def index_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    monkeypatch.setenv("PLAUD_INDEX_HOME", str(home))
    for var in ENV_VARS:  # the program's one list: nothing of the developer's shell leaks in
        if var != "PLAUD_INDEX_HOME":
            monkeypatch.delenv(var, raising=False)
    return home


@pytest.fixture(autouse=True)
def no_sync_outlives_its_test(tmp_path: Path) -> Iterator[None]:
    """A first sync runs in a process of its own that outlives the server or command that
    started it (by design): one a test left running is stopped with the test, so it never
    loads the machine under the next one."""
    yield
    from plaud_index.sync.lock import lock_holder

    for lock in tmp_path.rglob("indexer.lock"):
        holder = lock_holder(lock)
        pid = int(str(holder["pid"])) if holder and holder.get("pid") else None
        if pid is None or pid == os.getpid():
            continue
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


@pytest.fixture(autouse=True)
def no_secrets_in_logs(request: pytest.FixtureRequest, caplog: pytest.LogCaptureFixture
                       ) -> Iterator[None]:
    """Any test that talks to the fake Plaud: no token or code it minted is in any log line."""
    caplog.set_level(logging.DEBUG)
    fake = request.getfixturevalue("fake") if "fake" in request.fixturenames else None
    yield
    if fake is not None:
        # caplog.text would only hold this teardown phase: read setup and call records
        text = "\n".join(r.getMessage() for phase in ("setup", "call")
                         for r in caplog.get_records(phase))  # type: ignore[arg-type]
        secrets = [*fake.access, *fake.refresh, *fake.codes]
        leaked = [s[:6] for s in secrets if s in text]
        assert not leaked, f"secrets in logs: {leaked}"


@pytest.fixture
def config(index_home: Path) -> Config:
    return build_config({"PLAUD_INDEX_HOME": str(index_home), "PLAUD_CLIENT": "mock"}, None)


@pytest.fixture
def hash_embedder() -> HashEmbedder:
    return HashEmbedder()


@pytest.fixture(scope="session")
def real_embedder() -> Iterator[OnnxEmbedder]:
    """The real all-MiniLM-L6-v2 (int8 ONNX) from the PyPI packages, loaded once."""
    files = packaged()
    assert files is not None, (
        "the packaged model is required: pip install -e '.[test]' (bash .ci/setup does it)")
    yield OnnxEmbedder(files)


@pytest.fixture
def fake() -> Iterator[FakePlaud]:
    server = FakePlaud()
    server.start()
    yield server
    server.stop()


@pytest.fixture
def plaud_env(fake: FakePlaud, index_home: Path, monkeypatch: pytest.MonkeyPatch
              ) -> dict[str, str]:
    env = fake.env(f"http://localhost:{free_port()}/auth/callback")
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    settings = plaud_settings(os.environ)

    def browser(url: str) -> None:
        threading.Thread(target=lambda: urllib.request.urlopen(url, timeout=10).read(),
                         daemon=True).start()

    login(settings, default_store(index_home), Transport(), open_browser=browser, timeout=10)
    return {**env, "PLAUD_INDEX_HOME": str(index_home), "PLAUD_DETAIL_INTERVAL_MS": "0"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 2 MB tmpfs (root here and in CI): a disk that really fills up and can go read-only."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)],
                          capture_output=True, check=False)
    if done.returncode != 0:
        pytest.fail(f"this test needs a small tmpfs (root): {done.stderr!r}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill_disk(filler: Path) -> None:
    """Write ``filler`` until its disk is full, to the last block."""
    with filler.open("wb") as fh:
        try:
            while True:
                fh.write(b"\0" * 65536)
                fh.flush()
        except OSError:
            pass


# The modules whose tests take tens of seconds each (a first sync of real-length meetings,
# a daemon through a crash, a paced fake Plaud): run first, so the four workers end
# together instead of one finishing a long test after the others are idle.
LONG_FIRST = ("test_first_use.py", "test_daemon.py", "test_progress.py", "test_doctor.py",
              "test_plaud_e2e.py", "test_real_plaud_e2e.py", "test_hostile.py")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: item.path.name not in LONG_FIRST)  # stable: order kept
