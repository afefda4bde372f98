"""Answers that say more in fewer words: moments that never repeat or overlap, quotes in the
moment's speaker's own words, no filler, room by score, each person named once."""

from __future__ import annotations

import re
from typing import Any

import pytest
from helpers import build_snapshot, dev_meetings

from plaud_index.models import Moment
from plaud_index.plaud.mock import to_detail
from plaud_index.search import moments as moments_module
from plaud_index.search.browse import people, person_key
from plaud_index.search.moments import MOMENTS, filler_only, moment_room, quote_width
from plaud_index.search.rank import make_request, search
from plaud_index.search.snippets import make_snippet


def moment(start: int | None, end: int | None, quote: str = "q") -> Moment:
    return Moment("", start, end, "Ann", "transcript", quote)


def test_a_moment_that_overlaps_one_taken_is_merged_into_it() -> None:
    chosen = [moment(50_000, 60_000, "best"), moment(200_000, 230_000)]
    assert moments_module._merged(moment(56_000, 120_000), chosen)
    assert [(m.start_ms, m.end_ms, m.snippet) for m in chosen] == [
        (50_000, 120_000, "best"), (200_000, 230_000, "q")]
    assert moments_module._merged(moment(110_000, 210_000), chosen)  # bridges both
    assert [(m.start_ms, m.end_ms) for m in chosen] == [(50_000, 230_000)]
    assert not moments_module._merged(moment(300_000, 310_000), chosen)
    assert moments_module._merged(moment(None, None, "same note"), [moment(None, None,
                                                                           "same note")])


def test_a_quote_opens_with_the_matched_utterance_never_the_line_before() -> None:
    text = "Grad C: Right.\nProfessor E: So the budget for the robots is set.\nBo: Fine."
    quote, match = make_snippet(text, {"budget", "robots"})
    assert quote.startswith("Professor E: So the budget")
    assert text.count("\n", 0, match) == 1


def test_deep_in_a_long_utterance_the_quote_opens_near_the_match_on_a_word() -> None:
    text = "Ann: " + "filler words go on and on here " * 30 + "the budget is final today."
    quote, _ = make_snippet(text, {"budget"})
    assert quote.startswith("…") and "budget is final" in quote and not quote.startswith("…r")


@pytest.mark.parametrize(("quote", "filler"), [
    ("Yeah. / Yeah. / So.", True), ("Grad C: Mm-hmm. / Professor E: Okay.", True),
    ("Ja, genau. / Also.", True), ("Yeah, the budget is fine.", False), ("", False)])
def test_filler_alone_is_told_from_a_quote_with_content(quote: str, filler: bool) -> None:
    assert filler_only(quote, ("Grad C", "Professor E")) is filler


def test_weaker_recordings_get_less_room() -> None:
    assert moment_room(0, 0.2, 1.0) == MOMENTS  # the best one, whatever its score
    assert [moment_room(3, share, 1.0) for share in (0.95, 0.7, 0.4)] == [3, 2, 1]
    assert quote_width(0) > quote_width(1)


def test_each_person_is_named_once_and_the_list_is_capped() -> None:
    forms = ["The Chair (Hon. Anthony Rota (Nipissing, Lib.))", "Mr. Garnett Genuis (Sherwood "
             "Park, CPC)", "The Chair", "Mr. Garnett Genuis", "Lynne Neagle AM", "Lynne Neagle"]
    assert people(forms) == (("The Chair", "Mr. Garnett Genuis", "Lynne Neagle"), 0)
    assert people(["Rob (contractor)"]) == (("Rob (contractor)",), 0)  # its only form
    assert person_key("Right Hon. Justin Trudeau (Papineau, Lib.)") == "justin trudeau"
    assert people([f"Speaker {k}" for k in range(20)], cap=12)[1] == 8


@pytest.fixture(scope="module")
def meetings_index(tmp_path_factory: pytest.TempPathFactory) -> Any:
    raws = [to_detail(m) for m in dev_meetings(4)]
    return build_snapshot(tmp_path_factory.mktemp("moments") / "index", raws)


@pytest.mark.parametrize("query", ["remote control design buttons", "speech recognition",
                                   "budget cost", "the meeting recorder data", "yeah so okay"])
def test_real_meetings_answer_without_repeats_other_labels_or_filler(
        meetings_index: Any, query: str) -> None:
    hits = search(meetings_index, make_request(query, mode="keyword"), None)
    names = {s for r in meetings_index.recordings for s in r.speakers}
    for hit in hits:
        spans = [(m.start_ms, m.end_ms) for m in hit.moments if m.start_ms is not None]
        for i, (s1, e1) in enumerate(spans):
            assert all(not (s1 <= e2 and s2 <= e1) for s2, e2 in spans[i + 1:]), hit.moments
        for m in hit.moments:
            label = re.match(r"^…?([^:/…]{1,60}?): ", m.snippet)
            assert not (label and label.group(1) in names), m
            assert not filler_only(m.snippet, tuple(names)) or len(hit.moments) == 1, m

