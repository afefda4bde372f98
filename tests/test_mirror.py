"""The Markdown mirror, end to end: real files in tmp_path, the fake Plaud over loopback,
the indexer's own cycles; and its documents read back by a YAML parser and a Markdown
renderer."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import fill_disk
from fake_plaud import FakePlaud

from plaud_index.clock import UTC
from plaud_index.embedding.embedder import HashEmbedder
from plaud_index.index.store import open_snapshot
from plaud_index.mirror import Mirror
from plaud_index.plaud import PlaudSource
from plaud_index.plaud.api import PlaudClient
from plaud_index.plaud.refresh import TokenManager
from plaud_index.plaud.settings import plaud_settings
from plaud_index.plaud.tokens import default_store
from plaud_index.plaud.transport import Transport
from plaud_index.reports import SyncReport
from plaud_index.sync.indexer import Indexer

REPO = Path(__file__).resolve().parent.parent
Cycle = Callable[..., SyncReport]


def front(path: Path) -> dict[str, Any]:
    text = path.read_text(encoding="utf-8")
    assert text.startswith("---\n")
    data = yaml.safe_load(text[4:text.index("\n---\n", 4)])
    assert isinstance(data, dict)
    return data


def details(fake: FakePlaud) -> list[dict[str, Any]]:
    """The recording detail requests the fake Plaud answered (not the list pages)."""
    return [r for r in fake.requests("/third-party/files/") if not r["path"].endswith("/")]


def files(folder: Path) -> dict[str, tuple[int, int]]:
    """name → (inode, mtime_ns) of every Markdown file in the folder (not in .trash)."""
    return {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in folder.glob("*.md")}


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    return tmp_path / "vault" / "Plaud"


@pytest.fixture
def cycle(fake: FakePlaud, plaud_env: dict[str, str], index_home: Path, vault: Path,
          monkeypatch: pytest.MonkeyPatch) -> Cycle:
    """One indexer cycle over the fake Plaud with the mirror in ``vault``; ``every=True``
    re-fetches every listed recording (as the recent ones are every cycle)."""
    monkeypatch.setenv("PLAUD_INDEX_MIRROR", str(vault))  # for `status` and `doctor`
    settings = plaud_settings(os.environ)
    transport = Transport(sleep=lambda s: None)

    def run(every: bool = False, mirror: bool = True) -> SyncReport:
        tokens = TokenManager(default_store(index_home), settings, transport,
                              index_home / "refresh.lock")
        ids = [f["id"] for f in fake.files] if every else []
        return Indexer(PlaudSource(PlaudClient(settings, tokens, transport, detail_interval=0)),
                       HashEmbedder(), index_home, revalidate=ids,
                       mirror=Mirror(vault, index_home, UTC) if mirror else None).run_cycle()

    return run


def test_a_first_sync_writes_one_file_per_recording_from_the_same_fetch(
        fake: FakePlaud, cycle: Cycle, vault: Path) -> None:
    fake.seed(10)
    fake.add_special("multi_notes")
    fake.add_special("unicode")
    report = cycle()
    assert report.added == 12 and report.mirrored == 12
    assert len(details(fake)) == 12  # no second fetch for the mirror
    written = sorted(vault.glob("*.md"))
    assert len(written) == 12
    assert stat.S_IMODE(vault.stat().st_mode) == 0o700
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in written)
    by_id = {front(p)["plaud_file_id"]: p for p in written}
    assert set(by_id) == {f["id"] for f in fake.files}
    multi = next(f for f in fake.files if f["name"] == "special multi_notes")
    meta = front(by_id[multi["id"]])
    assert meta["title"] == "special multi_notes" and meta["source"] == "plaud"
    assert meta["created"].startswith(multi["created_at"][:19]) and meta["created"][-6:] == \
        "+00:00"
    assert meta["speakers"] == ["Speaker 1", "Speaker 2"]
    assert meta["duration"] == "00:00:36"
    assert by_id[multi["id"]].name == f"{multi['created_at'][:10]} special multi_notes.md"
    body = by_id[multi["id"]].read_text()
    for heading in ("# special multi\\_notes", "## Summary", "## Meeting Minutes",
                    "## Custom", "## Transcript"):
        assert f"\n{heading}\n" in body
    assert "**[00:00:00] Speaker 1:** Point 0 about" in body
    unicode = next(f for f in fake.files if f["name"].startswith("会议"))
    # the title's slash and quotes never reach the name; the newline became a space
    assert by_id[unicode["id"]].name == f"{unicode['created_at'][:10]} 会议 notes 🎉 שלום.md"
    assert front(by_id[unicode["id"]])["title"] == '会议 "notes" / 🎉 שלום'


def test_a_second_cycle_writes_nothing(fake: FakePlaud, cycle: Cycle, vault: Path,
                                       index_home: Path) -> None:
    fake.seed(8)
    cycle()
    before, state = files(vault), (index_home / "mirror-state.json").stat().st_mtime_ns
    report = cycle(every=True)
    assert report.fetched == 8 and report.mirrored == 0
    assert files(vault) == before
    assert (index_home / "mirror-state.json").stat().st_mtime_ns == state


def test_a_changed_recording_rewrites_only_its_own_file(fake: FakePlaud, cycle: Cycle,
                                                        vault: Path) -> None:
    fake.seed(8)
    cycle()
    before = files(vault)
    changed = fake.files[3]
    fake.update_note(changed["id"], "## Summary\nWe moved the launch to October.")
    assert cycle(every=True).mirrored == 1
    after = files(vault)
    assert [n for n in after if after[n] != before[n]] == \
        [p.name for p in vault.glob("*.md") if "launch to October" in p.read_text()]
    assert set(after) == set(before)


def test_a_renamed_recording_renames_its_file(fake: FakePlaud, cycle: Cycle,
                                              vault: Path) -> None:
    fake.seed(5)
    cycle()
    target = fake.files[0]
    old = f"{target['created_at'][:10]} {target['name']}.md"
    assert (vault / old).is_file()
    target["name"] = "Budget review: v2"
    cycle()  # a new name in the listing is fetched in any cycle
    new = f"{target['created_at'][:10]} Budget review v2.md"
    assert not (vault / old).exists() and front(vault / new)["title"] == "Budget review: v2"
    assert len(list(vault.glob("*.md"))) == 5


def test_a_recording_deleted_in_plaud_moves_to_the_trash_and_an_empty_listing_moves_nothing(
        fake: FakePlaud, cycle: Cycle, vault: Path) -> None:
    fake.seed(6)
    cycle()
    gone = fake.files[2]
    name = f"{gone['created_at'][:10]} {gone['name']}.md"
    fake.delete_file(gone["id"])
    assert cycle().deleted == 1
    assert not (vault / name).exists() and (vault / ".trash" / name).is_file()
    assert stat.S_IMODE((vault / ".trash").stat().st_mode) == 0o700
    kept = fake.files
    fake.files = []  # a glitch (or a wrong-region sign-in) lists nothing
    cycle()
    assert len(list(vault.glob("*.md"))) == 5
    fake.files = kept[:1]  # a short listing: nothing moves unless it repeats
    cycle()
    assert len(list(vault.glob("*.md"))) == 5
    cycle()  # the same short listing again: the index's guard lets it through, and so here
    assert len(list(vault.glob("*.md"))) == 1 and len(list((vault / ".trash").glob("*"))) == 5


def test_a_file_the_user_edited_is_kept_and_the_update_written_beside_it(
        fake: FakePlaud, cycle: Cycle, vault: Path, capsys: pytest.CaptureFixture[str]
        ) -> None:
    from plaud_index.cli import main

    fake.seed(4)
    cycle()
    target = fake.files[1]
    mine = vault / f"{target['created_at'][:10]} {target['name']}.md"
    mine.write_text(mine.read_text() + "\nMy own follow-up: call Dana.\n")
    fake.update_note(target["id"], "## Summary\nThe budget went up.")
    assert cycle(every=True).mirrored == 1
    assert "My own follow-up: call Dana." in mine.read_text()
    assert "The budget went up" not in mine.read_text()
    beside = mine.with_name(mine.stem + " (updated).md")
    assert "The budget went up" in beside.read_text()
    assert main(["status", "--json"]) == 0
    status = json.loads(capsys.readouterr().out)
    assert status["mirror"]["kept_edits"] == 1 and status["mirror"]["files"] == 4
    fake.update_note(target["id"], "## Summary\nThe budget went up again.")
    cycle(every=True)  # the "(updated)" file is ours: it is updated in place
    assert "went up again" in beside.read_text() and "call Dana" in mine.read_text()
    assert len(list(vault.glob("*.md"))) == 5


def test_a_lost_state_recognises_identical_files_and_duplicates_nothing(
        fake: FakePlaud, cycle: Cycle, vault: Path, index_home: Path) -> None:
    fake.seed(5)
    cycle()
    before = files(vault)
    (index_home / "mirror-state.json").write_text("{not json")
    assert cycle(every=True).mirrored == 0
    assert files(vault) == before
    assert len(json.loads((index_home / "mirror-state.json").read_text())["files"]) == 5


def test_recordings_of_one_day_and_title_get_a_file_each(fake: FakePlaud, cycle: Cycle,
                                                          vault: Path) -> None:
    for i in range(3):
        fake.add_file(i, name="Standup" if i else "STANDUP", created_epoch=1_780_000_000 + i)
    cycle()
    names = sorted(p.name for p in vault.glob("*.md"))
    assert len(names) == 3 and len({n.casefold() for n in names}) == 3, names
    assert sorted(front(vault / n)["plaud_file_id"] for n in names) == \
        sorted(f["id"] for f in fake.files)


def test_turning_the_mirror_on_fills_it_from_the_next_cycle(fake: FakePlaud, cycle: Cycle,
                                                             vault: Path) -> None:
    fake.seed(6)
    cycle(mirror=False)
    assert not vault.exists()
    fetched = len(details(fake))
    report = cycle()  # nothing changed in Plaud: only the mirror asks for these
    assert report.mirrored == 6 and len(list(vault.glob("*.md"))) == 6
    assert len(details(fake)) - fetched == 6
    fetched = len(details(fake))
    quiet = cycle()  # now only the rolling re-check fetches (one of six a cycle)
    assert quiet.mirrored == 0 and len(details(fake)) - fetched == quiet.fetched <= 1


def test_a_mirror_that_cannot_be_written_never_stops_indexing(
        fake: FakePlaud, plaud_env: dict[str, str], index_home: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    from plaud_index.cli import main

    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("PLAUD_INDEX_MIRROR", str(blocker / "Plaud"))  # cannot be a folder
    fake.seed(5)
    assert main(["indexer", "--once"]) == 0
    snap = open_snapshot(index_home / "vector-index")
    assert snap is not None and len(snap.recordings) == 5
    capsys.readouterr()
    assert main(["status"]) == 0
    text = capsys.readouterr().out
    assert "the Markdown mirror cannot be written" in text and "Health:       ok" not in text
    assert main(["doctor"]) == 1
    assert "[FAIL] mirror:" in capsys.readouterr().out


def test_a_full_disk_under_the_mirror_is_reported_and_healed(
        small_disk: Path, fake: FakePlaud, plaud_env: dict[str, str], index_home: Path,
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    from plaud_index.cli import main

    monkeypatch.setenv("PLAUD_INDEX_MIRROR", str(small_disk / "Plaud"))
    filler = small_disk / "filler"
    fill_disk(filler)
    fake.seed(5)
    assert main(["indexer", "--once"]) == 0
    capsys.readouterr()
    assert main(["status", "--json"]) == 0
    status = json.loads(capsys.readouterr().out)
    assert status["recordings"] == 5 and "No space left" in status["mirror"]["last_error"]
    filler.unlink()
    assert main(["mirror", "--once"]) == 0
    capsys.readouterr()
    assert main(["status", "--json"]) == 0
    status = json.loads(capsys.readouterr().out)
    assert status["mirror"]["files"] == 5 and status["mirror"]["last_error"] is None
    assert status["health"]["ok"], status["health"]


def test_mirror_once_writes_the_whole_mirror_then_nothing(
        fake: FakePlaud, plaud_env: dict[str, str], vault: Path) -> None:
    fake.seed(7)
    env = {**os.environ, **plaud_env, "PLAUD_INDEX_MIRROR": str(vault)}

    def mirror(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "plaud_index", "mirror", *args],
                              capture_output=True, text=True, cwd=REPO, env=env, timeout=120)

    first = mirror("--once")
    assert first.returncode == 0, first.stderr
    assert f"Mirror {vault}: 7 recordings, 7 files written (0 renamed), 0 unchanged" in \
        first.stdout
    assert len(list(vault.glob("*.md"))) == 7
    again = json.loads(mirror("--once", "--json").stdout)
    assert again["written"] == 0 and again["unchanged"] == 7
    shown = mirror()
    assert shown.returncode == 0 and f"Mirror: {vault}: 7 files, last written" in shown.stdout
    unset = subprocess.run([sys.executable, "-m", "plaud_index", "mirror", "--once"],
                           capture_output=True, text=True, cwd=REPO, timeout=120,
                           env={**os.environ, **plaud_env})
    assert unset.returncode != 0 and "No mirror folder is set" in unset.stderr


def test_the_mirror_folder_is_never_indexed_as_a_local_folder(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    from plaud_index.config import build_config
    from plaud_index.sources import folder_source

    notes = tmp_path / "vault"
    (notes / "Plaud").mkdir(parents=True)
    (notes / "Plaud" / "2026-07-08 Q3 budget review.md").write_text("# Q3\nMirrored.")
    (notes / "Meetings").mkdir()
    (notes / "Meetings" / "Offsite.md").write_text("# Offsite\nOur own notes.")
    env = {"PLAUD_INDEX_HOME": str(tmp_path / "home"), "PLAUD_INDEX_FOLDERS": str(notes),
           "PLAUD_INDEX_MIRROR": str(notes / "Plaud")}
    source = folder_source(build_config(env, None))
    assert [source.get_recording(f).title for f in source.list_recordings()] == ["Offsite"]
    assert "The Markdown mirror" in caplog.text and "skipped there" in caplog.text
    same = folder_source(build_config({**env, "PLAUD_INDEX_FOLDERS": str(notes / "Plaud")},
                                      None))
    assert same.list_recordings() == {} and "Not indexing folder" in caplog.text
