"""documents: every Plaud quirk of API.md §3.2–3.4 normalises to the same Recording."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest
from helpers import detail
from hypothesis import given
from hypothesis import strategies as st

from plaud_index.errors import MalformedRecordingError
from plaud_index.plaud.documents import (
    normalize_recording,
    note_markdown,
    parse_duration_ms,
    parse_segments,
    parse_timestamp,
    split_markdown_sections,
)

UTC = timezone.utc


@pytest.mark.parametrize(("raw", "expected"), [
    ("2024-01-15T10:05:55", datetime(2024, 1, 15, 10, 5, 55, tzinfo=UTC)),
    ("2024-01-15T10:04:27.052000", datetime(2024, 1, 15, 10, 4, 27, 52000, tzinfo=UTC)),
    ("2024-01-15T10:05:55Z", datetime(2024, 1, 15, 10, 5, 55, tzinfo=UTC)),
    ("2024-01-15 10:05:55", datetime(2024, 1, 15, 10, 5, 55, tzinfo=UTC)),
    ("2024-01-15T12:05:55+02:00", datetime(2024, 1, 15, 10, 5, 55, tzinfo=UTC)),
    (1705313155000, datetime(2024, 1, 15, 10, 5, 55, tzinfo=UTC)),
    ("yesterday", None), (None, None), ("", None),
])
def test_timestamps_become_aware_utc(raw: object, expected: datetime | None) -> None:
    assert parse_timestamp(raw) == expected


@pytest.mark.parametrize(("raw", "ms"), [(83000, 83000), ("83000", 83000), ("83000.0", 83000),
                                         (None, 0), (0, 0), ("n/a", 0), (True, 0), (-5, 0)])
def test_duration_is_int_or_numeric_string(raw: object, ms: int) -> None:
    assert parse_duration_ms(raw) == ms


def test_segments_use_ms_times_and_fall_back_to_original_speaker() -> None:
    segments = [
        {"start_time": 0, "end_time": 4200, "content": "  Good   morning. ", "speaker": "",
         "original_speaker": "Speaker 1"},
        {"start_time": 4300, "content": "No end time.", "speaker": None,
         "original_speaker": "Speaker 2"},
        {"start_time": 5000, "end_time": 6000, "content": "   ", "speaker": "Ann"},
        {"start_time": "7000", "end_time": "8000", "content": "Strings.", "speaker": "Ann"},
        "not a segment",
    ]
    utterances = parse_segments(json.dumps(segments))
    assert [(u.text, u.start_ms, u.end_ms, u.speaker) for u in utterances] == [
        ("Good morning.", 0, 4200, "Speaker 1"),
        ("No end time.", 4300, 4300, "Speaker 2"),
        ("Strings.", 7000, 8000, "Ann"),
    ]


def test_segments_accept_a_list_a_double_encoded_string_and_trans_result() -> None:
    seg = [{"start_time": 0, "end_time": 1, "content": "Hi", "speaker": "A"}]
    assert parse_segments(seg) == parse_segments(json.dumps(seg))
    assert parse_segments(json.dumps(json.dumps(seg))) == parse_segments(seg)
    assert parse_segments({"trans_result": seg}) == parse_segments(seg)
    assert parse_segments("not json") == ()
    assert parse_segments(None) == ()


@pytest.mark.parametrize("content", [
    "## Summary\n- point",
    json.dumps({"ai_content": "## Summary\n- point", "category": "Summary", "state": 10}),
    json.dumps({"markdown": "## Summary\n- point"}),
    json.dumps({"content": {"markdown": "## Summary\n- point"}}),
    json.dumps(json.dumps({"ai_content": "## Summary\n- point"})),
])
def test_note_markdown_unwraps_every_known_form(content: str) -> None:
    assert note_markdown(content) == "## Summary\n- point"


def test_note_that_is_not_json_is_markdown_even_if_it_starts_with_a_brace() -> None:
    assert note_markdown("{draft} notes") == "{draft} notes"


def test_markdown_sections_carry_their_heading_path() -> None:
    md = "Intro line\n# Summary\nText one\n## Decisions\n- a\n- b\n# Next\nText two"
    assert split_markdown_sections(md) == [
        ("", "Intro line"), ("Summary", "Text one"), ("Summary > Decisions", "- a\n- b"),
        ("Next", "Text two"),
    ]


def test_the_verbatim_transcript_is_indexed_when_a_polished_one_exists_too() -> None:
    raw = detail()
    polished = [{"start_time": 0, "end_time": 1000, "content": "Polished.", "speaker": "Ann"}]
    raw["source_list"].insert(0, {"data_type": "transaction_polish",
                                  "data_content": json.dumps(polished), "data_link": ""})
    utterances = normalize_recording(raw).utterances
    assert len(utterances) == 2 and "Polished." not in [u.text for u in utterances]


def test_the_polished_transcript_is_the_fallback_when_no_verbatim_one_exists() -> None:
    raw = detail()
    polished = [{"start_time": 0, "end_time": 1000, "content": "Polished.", "speaker": "Ann"}]
    raw["source_list"] = [{"data_type": "transaction", "data_content": "", "data_link": ""},
                          {"data_type": "transaction_polish",
                           "data_content": json.dumps(polished), "data_link": ""}]
    assert [u.text for u in normalize_recording(raw).utterances] == ["Polished."]


def test_blocks_are_recognised_by_their_id_prefix_when_the_data_type_is_unknown() -> None:
    raw = detail(note="")
    segments = [{"start_time": 0, "end_time": 900, "content": "Verbatim.", "speaker": "Ann"}]
    raw["source_list"] = [{"data_id": "source_transaction:1a2b:f1", "data_type": "trans_v2",
                           "data_content": json.dumps(segments)}]
    raw["note_list"] = [{"data_id": "sum_multi:abc:f1:def", "data_type": "multi_v9",
                         "data_content": "## Report\nThe quarterly report.",
                         "extra": {"summ_type": "MEETING-REPORT",
                                   "used_template": {"template_name": "Meeting report"}}}]
    recording = normalize_recording(raw)
    assert [u.text for u in recording.utterances] == ["Verbatim."]
    assert [(n.note_title, n.text) for n in recording.notes] == [
        ("Meeting report", "The quarterly report.")]


def test_unknown_and_outline_blocks_are_ignored_not_fatal() -> None:
    raw = detail()
    raw["source_list"] += [
        {"data_type": "outline", "data_content": '[{"start_time":0,"topic":"T"}]'},
        {"data_type": "mark_memo", "data_content": {"weird": True}},  # no marks: nothing
        {"data_type": "brand_new_type", "data_content": 42},
        "garbage",
    ]
    raw["note_list"] = [{"data_type": "auto_sum_note", "data_content": None}, 7]
    recording = normalize_recording(raw)
    assert len(recording.utterances) == 2 and recording.notes == ()


def test_several_note_tabs_keep_their_titles() -> None:
    raw = detail(note="## Summary\nBudget is fine.")
    raw["note_list"].append({"data_type": "custom_note", "data_tab_name": "Action items",
                             "data_content": json.dumps({"ai_content": "- Ann: send deck"})})
    notes = normalize_recording(raw).notes
    assert [(n.note_title, n.heading, n.text) for n in notes] == [
        ("Summary", "Summary", "Budget is fine."), ("Action items", "", "- Ann: send deck")]


def test_a_full_recording_normalises() -> None:
    recording = normalize_recording(detail(name=" Weekly sync ", duration="9000"))
    assert recording.file_id == "f" * 32
    assert recording.title == "Weekly sync"
    assert recording.created_at == datetime(2026, 3, 2, 10, 0, tzinfo=UTC)
    assert recording.duration_ms == 9000
    assert recording.speakers == ("Ann", "Bo")


def test_detail_wrapped_in_data_is_unwrapped() -> None:
    assert normalize_recording({"data": detail()}).file_id == "f" * 32


def test_recording_still_processing_has_no_content_but_is_valid() -> None:
    raw = detail(segments=[])
    raw["source_list"] = []
    recording = normalize_recording(raw)
    assert not recording.has_content


def test_missing_created_at_falls_back_to_start_at() -> None:
    raw = detail()
    del raw["created_at"]
    assert normalize_recording(raw).created_at.year == 2026


@pytest.mark.parametrize("raw", [None, [], "x", {"name": "no id"}, {"id": ""},
                                 {"id": "abc", "created_at": "whenever"}])
def test_malformed_recording_raises_one_clear_error(raw: object) -> None:
    with pytest.raises(MalformedRecordingError):
        normalize_recording(raw)


def test_missing_title_gets_a_placeholder() -> None:
    raw = detail()
    raw["name"] = None
    assert normalize_recording(raw).title == "Untitled recording"


@pytest.mark.parametrize(("bad_id", "why"), [
    (None, "not a string"), (123, "not a string"), (4.5, "not a string"),
    (True, "not a string"), (["a"], "not a string"), ({"id": "x"}, "not a string"),
    ("", "missing or empty"), ("   ", "missing or empty"),
    ("bad-\ud800", "not plain text"), ("nul\x00id", "not plain text"),
    ("x" * 201, "too long (201 characters"), ("x" * 1000, "too long (1000 characters")])
def test_a_listing_row_without_a_usable_id_is_left_out_with_its_real_reason(
        bad_id: object, why: str) -> None:
    from plaud_index.plaud.documents import normalize_listing

    rows = [{"id": "good", "name": "Fine"}, {"id": bad_id, "name": "Odd"}]
    listed, rejected = normalize_listing(rows)
    assert list(listed) == ["good"]
    assert list(rejected) == ["listing row 2"]
    reason = rejected["listing row 2"]
    assert why in reason
    reason.encode("ascii")  # printable on any terminal: surrogates and NULs escaped


@given(st.dictionaries(st.sampled_from(["id", "name", "created_at", "duration"]),
                       st.one_of(st.none(), st.booleans(), st.integers(), st.floats(),
                                 st.text(), st.lists(st.text(), max_size=2))))
def test_any_listing_row_is_listed_or_left_out_never_an_exception(row: dict[str, object]
                                                                   ) -> None:
    from plaud_index.plaud.documents import normalize_listing

    listed, rejected = normalize_listing([row])
    assert len(listed) + len(rejected) == 1
    for file_id, item in listed.items():
        # Listed under the id's normal form; fetched as Plaud spelled it.
        assert file_id == str(row["id"]).strip() and item.remote_id == row["id"]
        assert "\x00" not in item.title


@pytest.mark.parametrize("sneaky", ["\u202e", "\u202a", "\u2066", "\u2069", "\u200b", "\ufeff",
                                    "\u200f", "\u061c"])
def test_bidi_and_zero_width_controls_never_reach_titles_or_speakers(sneaky: str) -> None:
    raw = detail(name=f"Invoice{sneaky}fdp.exe", segments=[
        {"start_time": 0, "end_time": 1000, "content": f"ok{sneaky}text",
         "speaker": f"Ann{sneaky}", "original_speaker": "Speaker 1"}])
    recording = normalize_recording(raw)
    assert recording.title == "Invoicefdp.exe"
    assert recording.utterances[0].speaker == "Ann"
    if sneaky not in ("\u200f", "\u061c"):  # marks stay in running text; reorderers never
        assert sneaky not in recording.utterances[0].text


def test_joiners_that_scripts_need_stay_in_transcript_text() -> None:
    persian = "می\u200cخواهم"  # ZWNJ inside a Persian word
    raw = detail(segments=[{"start_time": 0, "end_time": 1000, "content": persian,
                            "speaker": "A", "original_speaker": "A"}])
    assert normalize_recording(raw).utterances[0].text == persian


_ANY_TEXT = st.text(alphabet=st.characters(exclude_categories=()), max_size=40) \
    | st.sampled_from(["bad-\ud800", "\u202eexe.pdf", "a\x00b", "---", ": "])
_ANY_VALUE = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), _ANY_TEXT,
                       st.lists(_ANY_TEXT, max_size=2))


@given(name=_ANY_VALUE, file_id=_ANY_VALUE, speaker=_ANY_VALUE, content=_ANY_VALUE,
       created=_ANY_VALUE, note=_ANY_VALUE)
def test_any_string_in_any_field_of_a_recording_normalises_or_is_refused_cleanly(
        name: object, file_id: object, speaker: object, content: object, created: object,
        note: object) -> None:
    from plaud_index.chunker import Chunker

    raw = detail(segments=[{"start_time": 0, "end_time": 1000, "content": content,
                            "speaker": speaker, "original_speaker": speaker}],
                 note=note if isinstance(note, str) else None)
    raw.update({"id": file_id, "name": name, "created_at": created, "start_at": created})
    try:
        recording = normalize_recording(raw)
    except MalformedRecordingError as exc:
        str(exc).encode("utf-8")  # the reason is printable
        return
    for text in (recording.file_id, recording.title, *recording.speakers,
                 *(u.text for u in recording.utterances)):
        text.encode("utf-8")  # no lone surrogate survives
        assert not any(c in text for c in "\x00\x1b\u202e\u2066\u200b")
    Chunker().chunk(recording)  # and it chunks


def test_a_padded_id_is_listed_under_its_normal_form_and_fetched_as_plaud_spells_it() -> None:
    from plaud_index.plaud.documents import normalize_listing

    listed, rejected = normalize_listing([{"id": "  bad-pad  ", "name": "Padded"}])
    assert not rejected and list(listed) == ["bad-pad"]
    assert listed["bad-pad"].remote_id == "  bad-pad  "
    assert normalize_recording(detail("  bad-pad  ")).file_id == "bad-pad"


def test_ids_differing_only_by_surrounding_space_are_both_refused_with_the_reason() -> None:
    from plaud_index.plaud.documents import normalize_listing

    listed, rejected = normalize_listing([{"id": "dup"}, {"id": "ok"}, {"id": " dup "}])
    assert list(listed) == ["ok"]
    assert "differ only by surrounding space" in rejected["dup"]
