"""Local folders as a second source: real files of each format in tmp_path, the safety
rules, incremental re-indexing, unmounted folders, and both sources in one cycle."""

from __future__ import annotations

import io
import json
import os
import zipfile
from pathlib import Path

import pytest
from helpers import FakeSource, detail

from plaud_index.config import build_config
from plaud_index.embedding.embedder import HashEmbedder
from plaud_index.errors import PlaudTransientError
from plaud_index.folders.formats import parse_file
from plaud_index.folders.source import FolderSource, root_prefix
from plaud_index.index.store import open_snapshot
from plaud_index.sources import CombinedSource
from plaud_index.sync.indexer import Indexer
from plaud_index.sync.state import SyncStateStore

SRT = """1
00:00:01,000 --> 00:00:04,500
Ann: The vendor contract renews in March.

2
00:00:05,000 --> 00:00:09,000
Bo: Then we renegotiate the
<i>storage pricing</i> first.
"""
VTT = """WEBVTT

NOTE exported from a video call

intro
00:00:02.000 --> 00:00:06.000 align:start
<v Dana>Welcome to the quarterly planning call.</v>

00:01:10.500 --> 00:01:15.000
<v.loud Marcus>The hiring freeze ends in October.
"""
PLAUD_TXT = """Speaker 1 00:00:03
Let's review the warehouse robots pilot.

Speaker 2 00:02:15
The pilot starts in November.
It covers two sites.
"""
MARKDOWN = """---
title: Design review notes
date: 2026-04-02T10:00:00Z
---
# Summary
We agreed to ship the onboarding redesign.

## Action items
- Zoe runs the accessibility audit.
"""


def docx(paragraphs: list[str], created: str | None = None) -> bytes:
    """A minimal real .docx: the parts Word needs for text, made with zipfile."""
    ns = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
    body = "".join(f"<w:p><w:r><w:t>{p}</w:t></w:r></w:p>" for p in paragraphs)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        archive.writestr("word/document.xml", f"<w:document {ns}><w:body>{body}"
                                              "</w:body></w:document>")
        if created:
            archive.writestr("docProps/core.xml", '<cp:coreProperties xmlns:cp="x" '
                             'xmlns:dcterms="http://purl.org/dc/terms/"><dcterms:created>'
                             f"{created}</dcterms:created></cp:coreProperties>")
    return buffer.getvalue()


def test_srt_cues_become_timed_utterances_with_speakers() -> None:
    parsed = parse_file("call.srt", SRT.encode())
    assert [(u.start_ms, u.end_ms, u.speaker, u.text) for u in parsed.utterances] == [
        (1000, 4500, "Ann", "The vendor contract renews in March."),
        (5000, 9000, "Bo", "Then we renegotiate the storage pricing first.")]


def test_vtt_voices_times_and_hours() -> None:
    parsed = parse_file("call.vtt", VTT.encode())
    assert [(u.start_ms, u.speaker) for u in parsed.utterances] == [(2000, "Dana"),
                                                                   (70500, "Marcus")]
    assert parsed.utterances[1].text == "The hiring freeze ends in October."


def test_plauds_txt_export_layout() -> None:
    parsed = parse_file("export.txt", PLAUD_TXT.encode())
    assert [(u.start_ms, u.speaker, u.text) for u in parsed.utterances] == [
        (3000, "Speaker 1", "Let's review the warehouse robots pilot."),
        (135000, "Speaker 2", "The pilot starts in November. It covers two sites.")]


def test_markdown_front_matter_and_sections_become_notes() -> None:
    parsed = parse_file("notes.md", MARKDOWN.encode())
    assert parsed.title == "Design review notes" and parsed.utterances == ()
    assert parsed.created_at is not None and parsed.created_at.isoformat() == \
        "2026-04-02T10:00:00+00:00"
    assert [(n.heading, n.text) for n in parsed.notes] == [
        ("Summary", "We agreed to ship the onboarding redesign."),
        ("Action items", "- Zoe runs the accessibility audit.")]


def test_docx_paragraphs_and_its_created_date() -> None:
    parsed = parse_file("minutes.docx", docx(["Ann: Budget is approved.", "Bo: Great."],
                                             created="2026-02-03T09:30:00Z"))
    assert [(u.speaker, u.text) for u in parsed.utterances] == [("Ann", "Budget is approved."),
                                                               ("Bo", "Great.")]
    assert parsed.created_at is not None and parsed.created_at.year == 2026


def write(root: Path, name: str, content: str | bytes) -> Path:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    return path


@pytest.fixture
def meetings(tmp_path: Path) -> Path:
    root = tmp_path / "meetings"
    write(root, "vendor.srt", SRT)
    write(root, "planning/q3.vtt", VTT)
    write(root, "robots.txt", PLAUD_TXT)
    write(root, "design.md", MARKDOWN)
    write(root, "minutes.docx", docx(["Ann: The budget is approved."]))
    return root


def titles(home: Path) -> dict[str, str]:
    snap = open_snapshot(home / "vector-index")
    return {r.title: r.origin for r in snap.recordings} if snap else {}


def test_every_format_is_indexed_with_its_path(meetings: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    report = Indexer(FolderSource([meetings]), HashEmbedder(), home).run_cycle()
    assert report.added == 5 and report.skipped == 0
    found = titles(home)
    assert found["Design review notes"] == str(meetings / "design.md")
    assert set(found) == {"vendor", "q3", "robots", "Design review notes", "minutes"}


def test_credentials_hidden_folders_and_other_files_are_never_read(meetings: Path) -> None:
    for name in (".env", ".env.local", "id_rsa.txt", "server.pem", "credentials.json",
                 ".netrc", ".git/notes.md", "photo.jpg", "secret.key"):
        write(meetings, name, "password: hunter2")
    source = FolderSource([meetings])
    listed = source.list_recordings()
    read = {source.get_recording(fid).origin for fid in listed}
    assert read == {str(meetings / n) for n in ("vendor.srt", "planning/q3.vtt", "robots.txt",
                                                "design.md", "minutes.docx")}


def test_a_symlink_out_of_the_root_is_not_followed_out(meetings: Path, tmp_path: Path) -> None:
    outside = write(tmp_path / "private", "diary.md", "# Secret\nnot for the index")
    (meetings / "link.md").symlink_to(outside)
    (meetings / "linked-dir").symlink_to(outside.parent, target_is_directory=True)
    inside = meetings / "alias.srt"
    inside.symlink_to(meetings / "vendor.srt")  # inside the root: fine
    listed = FolderSource([meetings]).list_recordings()
    assert len(listed) == 5  # alias.srt resolves to vendor.srt: the same file, one id


def test_an_undecodable_or_oversized_file_is_skipped_with_its_reason(
        meetings: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(meetings, "latin1.txt", ("Caf\xe9 r\xe9sum\xe9 " * 20).encode("latin-1"))
    monkeypatch.setattr("plaud_index.folders.source.MAX_FILE_BYTES", 600)
    write(meetings, "huge.md", "# Big\n" + "word " * 200)
    home = tmp_path / "home"
    report = Indexer(FolderSource([meetings]), HashEmbedder(), home).run_cycle()
    skipped = SyncStateStore(home).read().skipped
    reasons = " ".join(skipped.values())
    assert report.skipped == 2 and "a binary file, not text (0 NUL and 60 undecodable" \
        in reasons
    assert "files over 600 are not read" in reasons


def test_changed_files_are_reread_unchanged_ones_are_not(meetings: Path,
                                                        tmp_path: Path) -> None:
    home = tmp_path / "home"
    Indexer(FolderSource([meetings]), HashEmbedder(), home).run_cycle()
    again = Indexer(FolderSource([meetings]), HashEmbedder(), home).run_cycle()
    assert again.fetched == 0 and again.unchanged == 5
    path = meetings / "vendor.srt"
    path.write_text(SRT.replace("March", "April"))
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 10**9))
    changed = Indexer(FolderSource([meetings]), HashEmbedder(), home).run_cycle()
    assert changed.fetched == 1 and changed.updated == 1
    snap = open_snapshot(home / "vector-index")
    assert snap is not None and any("April" in c.text for c in snap.chunks)


def test_a_deleted_file_leaves_the_index(meetings: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    Indexer(FolderSource([meetings]), HashEmbedder(), home).run_cycle()
    (meetings / "robots.txt").unlink()
    report = Indexer(FolderSource([meetings]), HashEmbedder(), home).run_cycle()
    assert report.deleted == 1 and "robots" not in titles(home)


def test_an_unmounted_folder_deletes_nothing(meetings: Path, tmp_path: Path) -> None:
    other = tmp_path / "usb-stick"
    write(other, "offsite.md", "# Offsite\nThe offsite is in Lisbon.")
    home = tmp_path / "home"
    Indexer(FolderSource([meetings, other]), HashEmbedder(), home).run_cycle()
    assert len(titles(home)) == 6
    other.rename(tmp_path / "unplugged")  # the disk is gone
    report = Indexer(FolderSource([meetings, other]), HashEmbedder(), home).run_cycle()
    assert report.deleted == 0 and len(titles(home)) == 6
    source = FolderSource([meetings, other])
    source.list_recordings()
    kept = source.kept({root_prefix(other.resolve()) + "x", "folder:other:y"})
    assert kept == {root_prefix(other.resolve()) + "x"}


def test_both_sources_in_one_cycle_and_a_failing_plaud_stops_neither(
        meetings: Path, tmp_path: Path) -> None:
    plaud = FakeSource([detail("p1", name="Plaud standup",
                               segments=[{"start_time": 0, "end_time": 4000,
                                          "content": "Standup about the launch.",
                                          "speaker": "Kim"}])])
    home = tmp_path / "home"
    first = Indexer(CombinedSource(plaud, FolderSource([meetings])), HashEmbedder(),
                    home).run_cycle()
    assert first.added == 6 and "Plaud standup" in titles(home)

    class Down(FakeSource):
        def list_files(self, tail_hint: str | None = None) -> list[dict[str, object]]:
            raise PlaudTransientError("Cannot reach Plaud (test)")

    write(meetings, "new.md", "# New\nA new meeting note about the launch.")
    with pytest.raises(PlaudTransientError, match="Cannot reach Plaud"):
        Indexer(CombinedSource(Down([]), FolderSource([meetings])), HashEmbedder(),
                home).run_cycle()
    found = titles(home)
    assert "Plaud standup" in found, found
    assert "new" in found, found  # kept, and the folder still synced
    state = SyncStateStore(home).read()
    assert state.last_error is not None and "Cannot reach Plaud" in state.last_error


def test_folders_from_the_environment_and_config_file(tmp_path: Path) -> None:
    env = {"PLAUD_INDEX_HOME": str(tmp_path), "HOME": str(tmp_path),
           "PLAUD_INDEX_FOLDERS": os.pathsep.join(["~/a", str(tmp_path / "b"), "~/a"])}
    assert build_config(env, None).folders == (tmp_path / "a", tmp_path / "b")
    from_file = build_config({"PLAUD_INDEX_HOME": str(tmp_path), "HOME": str(tmp_path)},
                             json.dumps({"folders": ["~/notes"]}))
    assert from_file.folders == (tmp_path / "notes",)
