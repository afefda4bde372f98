"""What published samples show of real Plaud payloads (API.md §8), read without loss: every
shape as its own small case, from the parser through the chunker to a moment. Pure."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timezone

import pytest
from helpers import detail

from plaud_index.chunker import Chunker
from plaud_index.folders.formats import parse_file
from plaud_index.models import NoteSection, Recording
from plaud_index.plaud.documents import normalize_recording, strip_images
from plaud_index.plaud.web_api import clean_web_token, region_host
from plaud_index.search.moments import moment_source
from plaud_index.sync.policy import RETRY_MAX_S, failed_again, plan_fetches, retry_delay
from plaud_index.sync.work import content_hash


def note(content: object, **block: object) -> dict[str, object]:
    return {"data_type": "auto_sum_note", "data_tab_name": "Summary", "data_content": content,
            **block}


def test_a_summary_with_error_code_10_is_kept_and_its_code_recorded() -> None:
    raw = detail(note="")
    raw["note_list"] = [note(json.dumps({"ai_content": "## Summary\nThe zebra deal closed.",
                                         "category": "Summary", "state": 10}),
                             data_error_code=10)]
    recording = normalize_recording(raw)
    assert [(n.text, n.error_code) for n in recording.notes] == [("The zebra deal closed.", 10)]
    assert recording.empty_notes == ()


@pytest.mark.parametrize(("block", "why"), [
    (note("# Custom summary"), "note 'Summary' has no text"),
    (note("", data_error_code=10), "note 'Summary' has no text (Plaud error code 10)"),
    (note(json.dumps({"ai_content": ""}), data_tab_name="Minutes", data_error_code=3),
     "note 'Minutes' has no text (Plaud error code 3)"),
])
def test_a_note_without_text_is_named_with_its_reason(block: dict[str, object],
                                                      why: str) -> None:
    raw = detail(note="")
    raw["note_list"] = [block]
    recording = normalize_recording(raw)
    assert recording.notes == () and recording.empty_notes == (why,)


def test_a_note_the_web_api_repeats_is_not_named_empty_when_one_copy_has_text() -> None:
    raw = {"file_id": "w1", "start_time": 1_780_000_000_000, "content_list": [
        {"data_id": "auto_sum:ab:w1", "data_type": "auto_sum_note", "data_link": ""}],
        "pre_download_content_list": [{"data_id": "auto_sum:ab:w1",
                                       "data_content": "## Summary\nInline text."}]}
    recording = normalize_recording(raw)
    assert [n.text for n in recording.notes] == ["Inline text."]
    assert recording.empty_notes == ()


def test_highlights_as_a_json_array_are_placed_at_their_moments() -> None:
    raw = detail(note="")
    raw["note_list"] = [{"data_type": "high_light", "data_tab_name": "Highlights",
                         "data_content": json.dumps([
                             {"content": "The kiwi launch slips", "timestamp": 750000,
                              "title": "Launch", "picture_link": "https://x/p.png"},
                             {"content": "", "timestamp": 9}, "junk"])}]
    notes = normalize_recording(raw).notes
    assert [(n.kind, n.note_title, n.heading, n.text, n.at_ms) for n in notes] == [
        ("highlight", "Highlights", "Launch", "The kiwi launch slips", 750000)]


def test_markdown_highlights_are_highlights_without_a_moment() -> None:
    raw = detail(note="")
    raw["note_list"] = [{"data_type": "high_light", "data_tab_name": "Highlights",
                         "data_error_code": 1, "data_content": "- **Budget** approved"}]
    notes = normalize_recording(raw).notes
    assert [(n.kind, n.text, n.at_ms, n.error_code) for n in notes] == [
        ("highlight", "- **Budget** approved", None, 1)]


def test_device_marks_are_the_users_moments_whatever_list_they_come_in() -> None:
    marks = {"marks": [{"timestamp": 91000, "mark_type": 1, "mark_type_string": "flag",
                        "mark_content": "pelican clause", "content": "", "title": "",
                        "mark_id": "m1", "mark_status": 0},
                       {"timestamp": 120500, "mark_type_string": "star"}]}
    raw = detail(note="")
    raw["source_list"].append({"data_id": "mark_memo:1a:f", "data_type": "mark_memo",
                               "data_content": json.dumps(marks)})
    notes = normalize_recording(raw).notes
    assert [(n.kind, n.note_title, n.text, n.at_ms) for n in notes] == [
        ("mark", "Marks", "pelican clause", 91000), ("mark", "Marks", "star", 120500)]


@pytest.mark.parametrize(("markdown", "expected"), [
    ("Plan below.\n![PLAUD NOTE](permanent/abc/poster.png)", "Plan below.\n"),
    ("![whiteboard sketch](permanent/x.png) kept", "whiteboard sketch kept"),
    ('See <img src="permanent/y.png" alt="y"> here', "See  here"),
    ("[a link](https://example.com) stays", "[a link](https://example.com) stays"),
])
def test_note_images_leave_no_path_in_the_text(markdown: str, expected: str) -> None:
    assert strip_images(markdown) == expected


def test_a_note_image_path_is_in_no_note_section() -> None:
    raw = detail(note="## Summary\nThe heron plan.\n![PLAUD NOTE](permanent/abc/poster.png)")
    raw["note_list"][0]["download_link_map"] = {"permanent/abc/poster.png": "https://s3/p"}
    text = " ".join(n.text for n in normalize_recording(raw).notes)
    assert "heron plan" in text and "permanent" not in text and ".png" not in text


def test_web_note_tabs_are_titled_by_their_template_and_json_bodies_unwrapped() -> None:
    body = json.dumps({"ai_content": "## Decisions\n- Ship on Monday",
                       "header": {"headline": "Launch review", "category": "meeting"},
                       "summary_id": "s1", "summ_type": "MEETING-REPORT", "state": 1})
    raw = {"file_id": "w1", "start_time": 1_780_000_000_000, "content_list": [
        {"data_id": "sum_multi:9f:w1:0a", "data_type": "sum_multi_note_v2",
         "data_content": body, "extra": {"summ_type": "MEETING-REPORT",
                                         "used_template": {"template_name": "Meeting report"}}},
        {"data_id": "sum_multi:9f:w1:0b", "data_type": "???", "data_content": "## Risks\n- Rain",
         "extra": {"summ_type": "DIM-MEETING-DETAILS"}, "data_tab_name": "Details"}]}
    notes = normalize_recording(raw).notes
    assert [(n.note_title, n.heading, n.text) for n in notes] == [
        ("Meeting report", "Decisions", "- Ship on Monday"), ("Details", "Risks", "- Rain")]


def test_an_untitled_action_items_block_is_titled_by_its_type() -> None:
    raw = detail(note="")
    raw["note_list"] = [{"data_type": "action_items", "data_content": "- Ann: send the deck"}]
    assert [n.note_title for n in normalize_recording(raw).notes] == ["Action items"]


def test_folders_are_the_names_of_the_recordings_file_tags() -> None:
    raw = detail()
    raw["filetag_id_list"] = ["t2", "t9", "t1"]
    raw["filetag_list"] = [{"id": "t1", "name": "Work"}, {"id": "t2", "name": "Clients\x1b"},
                           {"id": "t3", "name": "Home"}]
    assert normalize_recording(raw).folders == ("Clients", "Work")
    assert normalize_recording(detail()).folders == ()


def recording(*notes: NoteSection, folders: tuple[str, ...] = ()) -> Recording:
    return Recording("r1", "Standup", datetime(2026, 1, 5, tzinfo=timezone.utc), None, 0, (),
                     notes, folders=folders)


def test_highlights_and_marks_chunk_as_lines_at_their_moments() -> None:
    chunks = Chunker().chunk(recording(
        NoteSection("Summary", "Summary", "We agreed."),
        NoteSection("Highlights", "Launch", "The kiwi\nlaunch slips", at_ms=123000,
                    kind="highlight"),
        NoteSection("Marks", "", "vendor pricing", at_ms=750000, kind="mark")))
    timed = [(c.heading, c.text, c.line_ms) for c in chunks if c.start_ms is not None]
    assert timed == [("Highlights", "Highlights\nLaunch: The kiwi launch slips", (None, 123000)),
                     ("Marks", "Marks\nvendor pricing", (None, 750000))]
    assert [moment_source("notes", h, ms[1]) for h, _, ms in timed] == ["highlight", "mark"]
    assert moment_source("notes", "Summary", None) == "notes"
    assert moment_source("transcript", "", 5000) == "transcript"


def test_fields_added_later_leave_the_content_hash_of_older_recordings_alone() -> None:
    plain = recording(NoteSection("Highlights", "Launch", "The kiwi", at_ms=5000,
                                  kind="highlight"))
    # the hash as every earlier release wrote it: an index of theirs is not re-chunked
    before = json.dumps(["Standup", plain.created_at.isoformat(), [],
                         [{"note_title": "Highlights", "heading": "Launch",
                           "text": "The kiwi", "at_ms": 5000, "kind": "highlight"}]],
                        sort_keys=True)
    assert content_hash(plain) == hashlib.sha256(before.encode()).hexdigest()
    assert content_hash(recording(NoteSection("Highlights", "Launch", "The kiwi",
                                              at_ms=5000, kind="highlight"),
                                  folders=("Work",))) != content_hash(plain)


def test_notes_chunked_by_an_older_recipe_hash_anew_so_they_are_chunked_again() -> None:
    """Untimed notes were cut into paragraphs before (a long list's items merged): a
    recording with them hashes differently now, so its notes are chunked again once."""
    plain = recording(NoteSection("Summary", "Summary", "We agreed."))
    old = json.dumps(["Standup", plain.created_at.isoformat(), [],
                      [{"note_title": "Summary", "heading": "Summary",
                        "text": "We agreed."}]], sort_keys=True)
    assert content_hash(plain) != hashlib.sha256(old.encode()).hexdigest()
    assert content_hash(plain) == content_hash(
        recording(NoteSection("Summary", "Summary", "We agreed.")))


def test_an_unattributed_line_of_a_txt_export_stays_as_speech_without_a_speaker() -> None:
    text = ("Kari: Da starter vi.\nBakgrunnsstemme i rommet.\nOla: Ja, la oss begynne.\n"
            "Kari: Første punkt er budsjettet.\n")
    utterances = parse_file("møte.txt", text.encode()).utterances
    assert [(u.speaker, u.text) for u in utterances] == [
        ("Kari", "Da starter vi."), ("", "Bakgrunnsstemme i rommet."),
        ("Ola", "Ja, la oss begynne."), ("Kari", "Første punkt er budsjettet.")]


@pytest.mark.parametrize(("pasted", "token"), [
    ("bearer eyJhbGciOi.x.y", "eyJhbGciOi.x.y"), ("  Bearer   eyJ.a.b \n", "eyJ.a.b"),
    ("BEARER eyJ.a.b", "eyJ.a.b"), ('"bearer eyJ.a.b"', "eyJ.a.b"), ("eyJ.a.b", "eyJ.a.b"),
    ("bearerish-token", "bearerish-token"),
])
def test_a_pasted_web_token_loses_its_bearer_prefix(pasted: str, token: str) -> None:
    assert clean_web_token(pasted) == token


@pytest.mark.parametrize(("domain", "base"), [
    ("api-euc1.plaud.ai", "https://api-euc1.plaud.ai"),
    ("https://api-jp.plaud.ai", "https://api-jp.plaud.ai"),
    ("https://api-apse1.plaud.ai/", "https://api-apse1.plaud.ai"),
    ("http://api-euc1.plaud.ai", None), ("https://plaud.ai.evil.example", None),
    ("https://evil.example/api.plaud.ai", None), ("https://user@api.plaud.ai", None),
    ("https://api.plaud.ai:8443", None), ("127.0.0.1:9/web2", None),
])
def test_a_region_switch_goes_only_to_an_https_plaud_host(domain: str,
                                                          base: str | None) -> None:
    assert region_host(domain, "https://api.plaud.ai") == base


def test_a_recording_that_keeps_failing_is_retried_with_backoff_after_the_others() -> None:
    assert [retry_delay(n) for n in (1, 2, 3)] == [60.0, 240.0, 960.0]
    assert retry_delay(50) == RETRY_MAX_S
    first = failed_again(None, 1000.0, "HTTP 500")
    again = failed_again(first, 1100.0, "HTTP 500")
    assert (again["since"], again["tries"], again["next"]) == (1000.0, 2, 1340.0)
    from plaud_index.models import Listed

    listing = {fid: Listed(fid, fid) for fid in ("a", "b", "c")}
    failing = {"a": {"next": 1200.0}, "b": {"next": 2000.0}}
    plan = plan_fetches(listing, {}, {}, 1500.0, 300.0, failing=failing)
    assert plan.ids == ["c", "a"] and (plan.retrying, plan.waiting) == (1, 1)
