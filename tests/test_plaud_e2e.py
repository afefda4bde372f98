"""End to end against the fake Plaud: sign in, index 250 recordings, search; refresh races."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from conftest import free_port
from fake_plaud import FakePlaud, Rule

from plaud_index.embedding.embedder import HashEmbedder
from plaud_index.errors import PlaudUpstreamError
from plaud_index.index.store import open_snapshot
from plaud_index.plaud import PlaudSource
from plaud_index.plaud.api import PlaudClient
from plaud_index.plaud.refresh import TokenManager
from plaud_index.plaud.settings import plaud_settings
from plaud_index.plaud.tokens import default_store
from plaud_index.plaud.transport import Transport
from plaud_index.sync.indexer import Indexer

REPO = Path(__file__).resolve().parent.parent


def run(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "plaud_index", *args], capture_output=True,
                          text=True, cwd=REPO, timeout=300, env={**os.environ, **env})


def test_sign_in_index_250_recordings_and_search(fake: FakePlaud,
                                                 plaud_env: dict[str, str]) -> None:
    fake.seed(250)  # every third recording is link-only, served gzip
    fake.add_file(9999, link_only=True, name="Warehouse pilot", topic="autonomous forklifts")
    indexed = run("indexer", "--once", env=plaud_env)
    assert indexed.returncode == 0, indexed.stderr
    pages = [r["query"]["page"] for r in fake.log if r["path"].endswith("/files/")]
    assert pages == ["1", "2", "3"]
    assert len(fake.requests("/s3/content/")) == 2 * (84 + 1)  # transcript + note each
    result = json.loads(run("search", "autonomous forklifts", "--json", "--limit", "3",
                            env=plaud_env).stdout)
    assert result["index"]["recordings"] == 251
    assert result["results"][0]["title"] == "Warehouse pilot"
    status = json.loads(run("status", "--json", env=plaud_env).stdout)
    assert status["recordings"] == 251 and status["last_error"] is None


def test_expired_access_token_is_refreshed_once_while_processes_race(
        fake: FakePlaud, plaud_env: dict[str, str], index_home: Path) -> None:
    fake.seed(30)
    assert run("indexer", "--once", env={**plaud_env, "PLAUD_EMBEDDER": "mock"}).returncode == 0
    tokens = default_store(index_home).load()
    assert tokens is not None
    fake.access[tokens.access_token]["revoked"] = True  # the access token dies server-side
    before = len(fake.requests("/access-token/refresh"))
    # The search server's fallback and the CLI use exactly this path to reach Plaud.
    lister = ("from plaud_index.config import load_config; from plaud_index.plaud import "
              "make_source; print(len(make_source(load_config()).list_recordings()))")
    racers = [subprocess.Popen([sys.executable, "-c", lister], cwd=REPO, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               env={**os.environ, **plaud_env}) for _ in range(3)]
    cycle = run("indexer", "--once", env={**plaud_env, "PLAUD_EMBEDDER": "mock"})
    outputs = [p.communicate(timeout=120) for p in racers]
    assert cycle.returncode == 0, cycle.stderr
    assert [out.strip() for out, _ in outputs] == ["30"] * 3, outputs
    assert len(fake.requests("/access-token/refresh")) - before == 1


@pytest.mark.parametrize("fault", ["html", "truncated", "wrong_shape", "empty_listing"])
def test_a_bad_listing_never_deletes_indexed_recordings(
        fault: str, fake: FakePlaud, plaud_env: dict[str, str], index_home: Path) -> None:
    fake.seed(30)
    settings = plaud_settings(os.environ)
    transport = Transport(sleep=lambda s: None)

    def cycle() -> object:
        manager = TokenManager(default_store(index_home), settings, transport,
                               index_home / "refresh.lock")
        return Indexer(PlaudSource(PlaudClient(settings, manager, transport,
                                               detail_interval=0)),
                       HashEmbedder(), index_home).run_cycle()

    cycle()
    if fault == "empty_listing":
        fake.files.clear()
        cycle()  # completes, but deletes nothing
    else:
        fake.faults.append(Rule(path="/files/$", action=fault))
        with pytest.raises(PlaudUpstreamError):
            cycle()
    snap = open_snapshot(index_home / "vector-index")
    assert snap is not None and len(snap.recordings) == 30


def test_login_command_with_no_browser_prints_the_url_and_signs_in(
        fake: FakePlaud, index_home: Path) -> None:
    env = {**fake.env(f"http://localhost:{free_port()}/auth/callback"),
           "PLAUD_INDEX_HOME": str(index_home)}
    proc = subprocess.Popen([sys.executable, "-m", "plaud_index", "login", "--no-browser"],
                            cwd=REPO, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, **env})
    assert proc.stderr is not None
    lines: list[str] = []
    while not lines or not lines[-1].startswith("  http"):
        lines.append(proc.stderr.readline())
        assert lines[-1], "login exited before printing the URL"
    assert lines[0].startswith("Open this URL to sign in to Plaud:")  # plain, not a log line
    line = lines[-1]
    url = line.strip()
    assert proc.stderr.readline() == "\n"
    assert proc.stderr.readline().startswith("Waiting for the browser")
    urllib.request.urlopen(url, timeout=10).read()  # the user's browser
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "Signed in to Plaud as Tester (test@example.com)." in out
    code = fake.requests("/platform/oauth")[0]  # the code never reached stderr
    assert all(c not in err + line for c in fake.codes)
    assert code["query"]["state"] in line  # only the URL's public parameters did
    offline = run("auth", "status", "--offline", env=env)  # remembered, no network call
    assert offline.returncode == 0 and "Signed in:   Tester (test@example.com) via oauth" \
        in offline.stdout
    assert f"Token store: {index_home / 'tokens.json'} (mode 0600)" in offline.stdout
    status = json.loads(run("auth", "status", "--json", env=env).stdout)
    assert status["reachable"] is True and status["problem"] is None
    assert status["refreshable"] is True and status["expires_at"][-6] in "+-"
    logout = run("logout", env=env)
    assert logout.returncode == 0 and "Signed out" in logout.stdout
    after = run("auth", "status", env=env)
    assert after.returncode == 1 and "Not signed in to Plaud" in after.stdout
    assert not (index_home / "account.json").exists()
    assert fake.requests("/users/current/revoke", "POST")
    assert default_store(index_home).load() is None
