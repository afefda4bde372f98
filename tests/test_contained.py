"""Nothing read or written outside its place, nothing leaked whatever its shape: links in
local folders, hostile folder text, unreadable folders, the sign-in listener, secrets
quoted back by Plaud, the mirror's trash."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from fake_plaud import FakePlaud
from helpers import mcp_session
from test_folders import SRT, write

from plaud_index.embedding.embedder import HashEmbedder
from plaud_index.folders.source import FolderSource
from plaud_index.index.store import open_snapshot
from plaud_index.plaud.auth import _Callback, login
from plaud_index.plaud.settings import plaud_settings
from plaud_index.plaud.tokens import default_store
from plaud_index.plaud.transport import Transport
from plaud_index.redact import redact, remember
from plaud_index.sync.indexer import Indexer

REPO = Path(__file__).resolve().parent.parent
SECRETS = {".env": "DB_PASSWORD=hunter2-env-secret", ".ssh/notes.txt": "ssh-notes-secret",
           "server.pem": "-----BEGIN PRIVATE KEY----- pem-secret"}


def run(*args: str, env: dict[str, str], prefix: tuple[str, ...] = ()
        ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*prefix, sys.executable, "-m", "plaud_index", *args],
                          capture_output=True, text=True, cwd=REPO, timeout=300,
                          env={**os.environ, "PLAUD_EMBEDDER": "mock", **env})


@pytest.fixture
def meetings(tmp_path: Path) -> Path:
    root = tmp_path / "meetings"
    write(root, "vendor.srt", SRT)
    return root


def indexed_text(home: Path) -> str:
    snap = open_snapshot(home / "vector-index")
    assert snap is not None
    return "\n".join(c.text for c in snap.chunks) + "".join(r.title for r in snap.recordings)


def test_links_to_hidden_and_credential_files_index_none_of_their_text(
        meetings: Path, tmp_path: Path) -> None:
    for name, text in SECRETS.items():
        write(meetings, name, text)
    (meetings / "notes.txt").symlink_to(meetings / ".env")
    (meetings / "n2.txt").symlink_to(meetings / ".ssh" / "notes.txt")
    (meetings / "p.md").symlink_to(meetings / "server.pem")
    (meetings / "keys").symlink_to(meetings / ".ssh", target_is_directory=True)
    home = tmp_path / "home"
    Indexer(FolderSource([meetings]), HashEmbedder(), home).run_cycle()
    text = indexed_text(home)
    assert "renegotiate" in text  # the real meeting is there
    assert not [s for s in SECRETS.values() if s.split()[-1] in text]


def test_a_link_to_the_root_of_the_file_system_is_never_opened(
        meetings: Path, tmp_path: Path) -> None:
    """The cycle runs in a process of its own that records every folder it opens."""
    (meetings / "everything").symlink_to("/", target_is_directory=True)
    (meetings / "up").symlink_to(meetings.parent, target_is_directory=True)
    script = f"""
import sys
opened = []
sys.addaudithook(lambda e, a: opened.append(str(a[0])) if e in ("os.scandir", "open",
                 "os.listdir") and a and isinstance(a[0], str) else None)
from pathlib import Path
from plaud_index.embedding.embedder import HashEmbedder
from plaud_index.folders.source import FolderSource
from plaud_index.sync.indexer import Indexer
report = Indexer(FolderSource([Path({str(meetings)!r})]), HashEmbedder(),
                 Path({str(tmp_path / "home")!r})).run_cycle()
print(report.listed)
print("\\n".join(opened), file=sys.stderr)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          cwd=REPO, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["1"]
    opened = [p for p in done.stderr.splitlines() if p.startswith("/")]
    ours = (str(meetings), str(tmp_path / "home"), str(REPO), sys.prefix, sys.base_prefix)
    strays = [p for p in opened if not p.startswith(ours)]  # the walk, or Python's imports
    assert strays == [], strays[:10]
    assert any(p.startswith(str(meetings)) for p in opened)  # the hook did see the walk


HOSTILE = "Bo: the \x1b[31mred\x1b[0m budget\x07 is\x00 final\u202e\u200b done."


def test_control_bidi_and_zero_width_characters_reach_no_answer(
        meetings: Path, index_home: Path) -> None:
    write(meetings, "evil\x1b[2Jname\u202e.txt", "Ann: " + HOSTILE + "\n" + HOSTILE + "\n")
    write(meetings, "nul.txt", b"\x00" * 20000 + b"Ann: zeros\n")
    env = {"PLAUD_INDEX_HOME": str(index_home), "PLAUD_INDEX_FOLDERS": str(meetings)}
    assert run("indexer", "--once", env=env).returncode == 0
    answers = [run("search", "red budget final", *json_flag, env=env).stdout
               for json_flag in ((), ("--json",))]
    answers += [run("list", *json_flag, env=env).stdout for json_flag in ((), ("--json",))]
    assert "red" in answers[0] and "budget" in answers[0]
    for answer in answers:
        for bad in ("\x1b", "\x07", "\x00", "\u202e", "\u200b", "\\u001b", "\\u0007",
                    "\\u0000", "\\u202e", "\\u200b"):
            assert bad not in answer, (bad, answer[:300])
    status = json.loads(run("status", "--json", env=env).stdout)
    assert any("binary file" in why for why in status["skipped"].values())


def drop_dac() -> tuple[str, ...]:
    """Root reads everything: the cycle runs without the capability that lets it."""
    return ("setpriv", "--bounding-set", "-dac_override,-dac_read_search") \
        if os.geteuid() == 0 else ()


def test_an_unreadable_subfolder_keeps_its_recordings_and_is_named(
        meetings: Path, index_home: Path) -> None:
    write(meetings, "team/standup.srt", SRT.replace("vendor contract", "hiring plan"))
    env = {"PLAUD_INDEX_HOME": str(index_home), "PLAUD_INDEX_FOLDERS": str(meetings)}
    assert run("indexer", "--once", env=env).returncode == 0
    os.chmod(meetings / "team", 0)
    try:
        cycle = run("indexer", "--once", env=env, prefix=drop_dac())
        status = run("status", "--json", env=env, prefix=drop_dac())
        doctor = run("doctor", env=env, prefix=drop_dac())
    finally:
        os.chmod(meetings / "team", 0o700)
    assert cycle.returncode == 0, cycle.stderr
    state = json.loads(status.stdout)
    assert state["recordings"] == 2 and state["last_report"]["deleted"] == 0
    label = f"unreadable folder {meetings / 'team'}"
    assert "Permission denied" in state["skipped"][label]
    assert any(flag.startswith(f"folder {meetings / 'team'} cannot be read")
               for flag in state["health"]["flags"])
    assert "[FAIL] folders: cannot be read" in doctor.stdout and "chmod u+rx" in doctor.stdout


@pytest.mark.parametrize("state", ["%C3%A9", "%ff", "", "x" * 3000])
def test_the_sign_in_listener_answers_any_wrong_state_with_a_page(state: str) -> None:
    callback = _Callback("the-real-state", "/auth/callback")
    status, page = callback.handle(f"/auth/callback?code=abc&state={state}")
    assert (status, callback.ignored) == (200, 1) and "not the one" in page


def test_a_denied_sign_in_prints_its_reason_cleaned(fake: FakePlaud, index_home: Path) -> None:
    from conftest import free_port

    fake.config.authorize_mode = "deny"
    env = fake.env(f"http://localhost:{free_port()}/auth/callback")
    settings = plaud_settings(env)

    def browser(url: str) -> None:  # the denial, with a hostile description
        denied = url.replace("/platform/oauth?", "/platform/oauth?x=1&")
        import threading

        def go() -> None:
            try:  # follows to the callback, which answers the cancel page with a 400
                urllib.request.urlopen(denied, timeout=10).read()
            except urllib.error.HTTPError as exc:
                assert exc.code == 400

        threading.Thread(target=go, daemon=True).start()

    fake.deny_description = "User \x1b[2Jdenied\nsecond line"
    with pytest.raises(Exception) as caught:
        login(settings, default_store(index_home), Transport(), open_browser=browser,
              timeout=10)
    message = str(caught.value)
    assert "Plaud sign-in was denied: User [2Jdenied second line" in message
    assert "\x1b" not in message and "\n" not in message


@pytest.mark.parametrize("timeout", ["0", "-5"])
def test_a_login_timeout_that_is_not_positive_is_refused_at_once(timeout: str,
                                                                 index_home: Path) -> None:
    done = run("login", "--no-browser", "--timeout", timeout,
               env={"PLAUD_INDEX_HOME": str(index_home)})
    assert done.returncode != 0
    assert "must be a positive number of seconds" in done.stderr


def test_a_secret_is_redacted_by_its_value_whatever_its_shape() -> None:
    remember("opaque-session-value-7f3a", "short")
    assert redact("Plaud said: bad token opaque-session-value-7f3a!") == \
        "Plaud said: bad token [redacted]!"
    assert redact("short stays") == "short stays"  # too short to be told from a word


def test_an_opaque_web_token_quoted_back_by_plaud_is_in_no_output_or_file(
        fake: FakePlaud, index_home: Path, tmp_path: Path) -> None:
    token = "opaque-websession-0123456789abcdef"  # no JWT, no bearer: no shape to catch
    fake.config.web_token = token
    fake.config.web_echo_token = True
    fake.seed(2)
    env = {"PLAUD_INDEX_HOME": str(index_home), "PLAUD_API_BASE": f"{fake.base_url}/web",
           "PLAUD_API_TOKEN": token, "PLAUD_INDEX_MIRROR": str(tmp_path / "mirror")}
    outputs = [run("indexer", "--once", env=env), run("status", env=env),
               run("status", "--json", env=env), run("doctor", env=env),
               run("search", "milestone", env=env)]
    assert "token" in outputs[1].stdout.lower() or outputs[1].stdout  # it did fail, and say
    seen = "".join(o.stdout + o.stderr for o in outputs)
    assert "[redacted]" in seen  # Plaud's answer was shown, without the token
    files = "".join(p.read_text(errors="replace") for p in index_home.rglob("*")
                    if p.is_file() and p.stat().st_size < 5_000_000)
    assert token not in seen and token not in files
    assert token not in mcp_answer(env)


def mcp_answer(env: dict[str, str]) -> str:
    import anyio

    async def ask() -> str:
        async with mcp_session({**os.environ, "PLAUD_EMBEDDER": "mock", **env}) as session:
            result: Any = await session.call_tool("plaud_search", {"query": "milestone"})
            return json.dumps(result.model_dump(mode="json"))

    return anyio.run(ask)


def test_the_mirror_never_moves_a_file_through_a_linked_trash(tmp_path: Path) -> None:
    from datetime import datetime, timezone

    from plaud_index.clock import UserZone, zone_named
    from plaud_index.mirror.writer import Mirror
    from plaud_index.models import Recording, Utterance

    zone = UserZone("UTC", zone_named("UTC"))  # type: ignore[arg-type]
    folder, elsewhere = tmp_path / "mirror", tmp_path / "elsewhere"
    elsewhere.mkdir()
    mirror = Mirror(folder, tmp_path / "home", zone)
    mirror.put(Recording("r1", "Standup", datetime(2026, 1, 5, tzinfo=timezone.utc), None, 0,
                         (Utterance("hello", 0, 1, "A"),)))
    (folder / ".trash").symlink_to(elsewhere, target_is_directory=True)
    mirror.remove(["r1"])
    assert list(elsewhere.iterdir()) == []
    assert [p.name for p in folder.glob("*.md")] == ["2026-01-05 Standup.md"]
    assert mirror.counts["failed"] == 1 and "symbolic link" in str(mirror.state.last_error)
