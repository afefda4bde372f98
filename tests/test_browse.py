"""Browsing and reading around a moment, on an index built in tmp_path: local days, paging,
filters, the user's clock across DST, utterances rebuilt from chunks, bounded windows."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timezone
from zoneinfo import ZoneInfo

import pytest
from helpers import build_snapshot, detail
from hypothesis import given, settings
from hypothesis import strategies as st

from plaud_index.chunker import Chunker
from plaud_index.clock import UserZone, stamps, today
from plaud_index.embedding.embedder import HashEmbedder
from plaud_index.errors import InvalidQueryError
from plaud_index.index.records import ChunkRow
from plaud_index.index.snapshot import Snapshot
from plaud_index.models import Recording, Utterance
from plaud_index.search.browse import decode_cursor, list_recordings, make_list_request, summary_of
from plaud_index.search.rank import make_request, search
from plaud_index.search.transcript import around, parse_at, parse_window, utterances

EMBEDDER = HashEmbedder()
NEW_YORK = ZoneInfo("America/New_York")
TOKYO = ZoneInfo("Asia/Tokyo")


def seg(start_s: float, text: str, speaker: str) -> dict[str, object]:
    return {"start_time": int(start_s * 1000), "end_time": int(start_s * 1000) + 4000,
            "content": text, "speaker": speaker}


# The New York evening of 8 July is 9 July in UTC; 8 July 20:00 UTC is 9 July in Tokyo;
# 8 March 2026 and 1 November 2026 are New York's DST changes.
DAYS = [
    ("ny-evening", "2026-07-09T01:30:00Z", "Marcus"),
    ("utc-evening", "2026-07-08T20:00:00Z", "Ann"),
    ("before-spring", "2026-03-08T06:30:00Z", "Ann"),   # 01:30 EST
    ("after-spring", "2026-03-08T07:30:00Z", "Bo"),     # 03:30 EDT
    ("fall-first", "2026-11-01T05:30:00Z", "Cy"),       # 01:30 EDT
    ("fall-second", "2026-11-01T06:30:00Z", "Cy"),      # 01:30 EST, the hour again
    ("old", "2025-01-15T12:00:00Z", "Dee"),
]


@pytest.fixture(scope="module")
def dated(tmp_path_factory: pytest.TempPathFactory) -> Snapshot:
    raws = [detail(fid, name=f"Meeting {fid}", created_at=when,
                   segments=[seg(0, f"We talked about the {fid} budget.", who)],
                   note=f"## Summary\nThe {fid} meeting agreed on the budget." if fid != "old"
                   else None) for fid, when, who in DAYS]
    return build_snapshot(tmp_path_factory.mktemp("dated"), raws)


def ids(snap: Snapshot, zone: object = timezone.utc, **kw: object) -> list[str]:
    request = make_list_request(**kw)  # type: ignore[arg-type]
    page, _, _ = list_recordings(snap, replace(request, zone=zone))  # type: ignore[arg-type]
    return [r.file_id for r in page]


def test_newest_first_and_the_most_recent_n(dated: Snapshot) -> None:
    assert ids(dated, limit=3) == ["fall-second", "fall-first", "ny-evening"]


def test_a_new_york_evening_belongs_to_its_local_day(dated: Snapshot) -> None:
    july8 = {"date_from": "2026-07-08", "date_to": "2026-07-08"}
    assert ids(dated, NEW_YORK, **july8) == ["ny-evening", "utc-evening"]
    assert ids(dated, timezone.utc, **july8) == ["utc-evening"]
    assert ids(dated, TOKYO, **july8) == []  # east of UTC both are already 9 July
    assert ids(dated, TOKYO, date_from="2026-07-09", date_to="2026-07-09") == [
        "ny-evening", "utc-evening"]


def test_dst_changes_keep_every_recording_on_its_local_day(dated: Snapshot) -> None:
    assert ids(dated, NEW_YORK, date_from="2026-03-08", date_to="2026-03-08") == [
        "after-spring", "before-spring"]
    assert ids(dated, NEW_YORK, date_from="2026-11-01", date_to="2026-11-01") == [
        "fall-second", "fall-first"]
    zone = UserZone("America/New_York", NEW_YORK)
    first, second = (stamps(zone, f"2026-11-01T0{h}:30:00+00:00")[0] for h in (5, 6))
    assert first == "2026-11-01T01:30:00-04:00" and second == "2026-11-01T01:30:00-05:00"
    assert stamps(zone, "2026-03-08T07:30:00+00:00")[0] == "2026-03-08T03:30:00-04:00"


def test_search_dates_are_local_days_too(dated: Snapshot) -> None:
    request = make_request("budget", date_from="2026-07-08", date_to="2026-07-08")
    hits = search(dated, replace(request, zone=NEW_YORK), EMBEDDER.embed(["budget"])[0],
                  floor=0.0)
    assert sorted(h.file_id for h in hits) == ["ny-evening", "utc-evening"]


def test_paging_walks_to_the_end_without_repeats(dated: Snapshot) -> None:
    seen: list[str] = []
    cursor = None
    for _ in range(10):
        request = make_list_request(limit=2, cursor=cursor)
        page, matched, cursor = list_recordings(dated, request)
        seen += [r.file_id for r in page]
        if cursor is None:
            break
    assert matched == len(DAYS) and len(seen) == len(DAYS) == len(set(seen))


def test_filters_by_speaker_and_notes(dated: Snapshot) -> None:
    assert ids(dated, speaker="cy") == ["fall-second", "fall-first"]
    assert "old" not in ids(dated, source="notes", limit=50)
    assert "old" in ids(dated, source="transcript", limit=50)


def test_bad_list_arguments_say_what_to_fix() -> None:
    with pytest.raises(InvalidQueryError, match="limit must be an integer from 1 to 50"):
        make_list_request(limit=51)
    with pytest.raises(InvalidQueryError, match="not one plaud_list returned"):
        decode_cursor("not a cursor!")
    with pytest.raises(InvalidQueryError, match="date_from 2026-02-02 is after"):
        make_list_request(date_from="2026-02-02", date_to="2026-02-01")


def test_the_summary_is_the_first_note_without_headings(dated: Snapshot) -> None:
    record = dated.recordings[dated.by_id["ny-evening"]]
    assert summary_of(dated, record) == "The ny-evening meeting agreed on the budget."


def test_today_names_the_local_date_zone_and_offset() -> None:
    zone = UserZone("America/New_York", NEW_YORK)
    now = datetime(2026, 7, 9, 1, 30, tzinfo=timezone.utc)
    assert today(zone, now).date == "2026-07-08" and today(zone, now).utc_offset == "-04:00"
    assert today(zone, now).weekday == "Wednesday"


# -- reading around a moment ------------------------------------------------------------
TALK = [seg(i * 10, f"Line {i}" + " about the plan" * (i % 5 + 1), ["Ann", "Bo", "Cy"][i % 3])
        for i in range(180)]  # 30 minutes, a turn every 10 s


@pytest.fixture(scope="module")
def talk(tmp_path_factory: pytest.TempPathFactory) -> Snapshot:
    raws = [detail("talk", name="Long talk", segments=TALK, duration=1_800_000),
            detail("notes-only", name="Notes only", segments=[], note="## Summary\nJust notes.")]
    return build_snapshot(tmp_path_factory.mktemp("talk"), raws)


def test_utterances_are_rebuilt_exactly_from_overlapping_chunks(talk: Snapshot) -> None:
    index = talk.by_id["talk"]
    rows = [talk.chunks[r] for r in range(len(talk.chunks))
            if talk.row_recording[r] == index and talk.chunks[r].source == "transcript"]
    assert len(rows) > 3  # several chunks, so the overlaps are exercised
    rebuilt = utterances(rows)
    assert [(u.start_ms, u.speaker, u.text) for u in rebuilt] == [
        (s["start_time"], s["speaker"], s["content"]) for s in TALK]


@given(st.lists(st.tuples(st.sampled_from(["Ann", "Bo"]),
                          st.text(st.characters(categories=("Ll", "Zs")), min_size=1,
                                  max_size=700).map(str.strip).filter(bool)),
                min_size=1, max_size=25))
@settings(max_examples=40, deadline=None)
def test_any_transcript_survives_chunking_and_rebuilding(turns: list[tuple[str, str]]) -> None:
    utts = tuple(Utterance(" ".join(text.split()), i * 60_000, i * 60_000 + 50_000, who)
                 for i, (who, text) in enumerate(turns))
    rec = Recording("p", "P", datetime(2026, 1, 1, tzinfo=timezone.utc), None, 0, utts)
    rows = [ChunkRow.from_chunk(c) for c in Chunker(EMBEDDER.count_tokens).chunk(rec)]
    rebuilt = utterances(rows)
    # every word once, in order; a long utterance may come back in pieces, each piece
    # inside its utterance's time span and spoken by its speaker
    assert " ".join(u.text for u in rebuilt).split() == " ".join(u.text for u in utts).split()
    for piece in rebuilt:
        owner = max((u for u in utts if u.start_ms <= piece.start_ms),
                    key=lambda u: u.start_ms)
        assert piece.start_ms < owner.end_ms and piece.speaker == owner.speaker


def test_windows_at_the_start_middle_and_end(talk: Snapshot) -> None:
    start = around(talk, "talk", 0, 30_000)
    assert [u.start_ms for u in start.utterances] == [0, 10_000, 20_000, 30_000]
    middle = around(talk, "talk", 900_000, 20_000)
    assert [u.start for u in middle.utterances] == [
        "00:14:40", "00:14:50", "00:15:00", "00:15:10", "00:15:20"]
    end = around(talk, "talk", 1_795_000, 20_000)
    assert end.utterances[-1].start_ms == 1_790_000 and end.to_ms == 1_800_000
    assert not middle.truncated


def test_the_window_opens_with_the_utterance_in_progress(talk: Snapshot) -> None:
    window = around(talk, "talk", 905_000, 3_000)  # 15:02 .. 15:08: inside the 15:00 turn
    assert [u.start for u in window.utterances] == ["00:15:00"]


def test_the_character_cap_keeps_the_nearest_and_says_so(talk: Snapshot) -> None:
    window = around(talk, "talk", 900_000, 900_000, max_chars=400)
    assert window.truncated and window.max_chars == 400
    assert sum(len(u.text) + len(u.speaker) + 2 for u in window.utterances) <= 400
    assert any(u.start_ms == 900_000 for u in window.utterances)
    starts = [u.start_ms for u in window.utterances]
    assert starts == sorted(starts) and max(abs(s - 900_000) for s in starts) < 60_000


def test_no_transcript_and_past_the_end_are_clear_errors(talk: Snapshot) -> None:
    with pytest.raises(InvalidQueryError, match="has no transcript in the index"):
        around(talk, "notes-only", 0, 60_000)
    with pytest.raises(InvalidQueryError, match="past the end of 'Long talk' .00:30:00 long"):
        around(talk, "talk", 2_000_000, 60_000)


def test_at_and_window_arguments() -> None:
    assert parse_at("00:12:30") == parse_at("12:30") == parse_at(at_ms=750_000) == 750_000
    assert parse_at("1:02:03") == 3_723_000
    for bad in ("12", "noon", "00:61:00", 5):
        with pytest.raises(InvalidQueryError, match="at must be a time"):
            parse_at(bad)
    with pytest.raises(InvalidQueryError, match="not both"):
        parse_at("00:01:00", 60_000)
    assert parse_window(None) == 120_000 and parse_window(30) == 30_000
    with pytest.raises(InvalidQueryError, match="window must be whole seconds"):
        parse_window(0)
