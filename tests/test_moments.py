"""Answers that say more in fewer words: moments that never repeat or overlap, quotes in the
moment's speaker's own words, no filler, room by score, each person named once."""

from __future__ import annotations

import re
from typing import Any

import pytest
from helpers import build_snapshot, dev_meetings
from hypothesis import given
from hypothesis import strategies as st

from plaud_index.index.records import ChunkRow
from plaud_index.plaud.mock import to_detail
from plaud_index.results import Moment
from plaud_index.search import moments as moments_module
from plaud_index.search.browse import people, person_key
from plaud_index.search.moments import MOMENTS, filler_only, moment_room, quote_width
from plaud_index.search.rank import make_request, search
from plaud_index.search.snippets import _densest_run as densest_run
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


class Rows:
    """A snapshot's ``chunks`` for ``pick_moments``: rows read by index."""

    def __init__(self, *chunks: ChunkRow) -> None:
        self.chunks = chunks


def notes_row(text: str) -> ChunkRow:
    lines = text.split("\n")
    return ChunkRow("c", "f", "notes", text, None, None, (), "Summary",
                    (None,) * len(lines), ("",) * len(lines))


def test_a_note_line_held_by_two_overlapping_chunks_is_one_moment() -> None:
    """ES2013b: the same notes sentence came back as two moments of one recording, once
    whole and once as the tail a window's overlap carried into the next chunk."""
    line = ("The group thought solar energy was fancy but too expensive for the remote, "
            "so the decision went to a regular battery with a kinetic backup.")
    first = notes_row(f"Summary\nThe team met to discuss the conceptual design.\n{line}")
    second = notes_row("solar energy was fancy but too expensive for the remote, so the "
                       "decision went to a regular battery with a kinetic backup.\n"
                       "They chose a rubber case.")
    picked = moments_module.pick_moments(Rows(first, second), [0, 1], {"solar"}, None, 3)
    assert len(picked) == 1 and "solar energy was fancy" in picked[0].snippet
    other = notes_row("Summary\nThey chose a rubber case in the end, the solar idea gone.")
    picked = moments_module.pick_moments(Rows(first, other), [0, 1], {"solar"}, None, 3)
    assert len(picked) == 2  # two lines, two moments


def transcript_row(lines: list[tuple[str, str]], start_ms: int = 647_000) -> ChunkRow:
    text = "\n".join(f"{who}: {said}" for who, said in lines)
    times = tuple(start_ms + 2000 * k for k in range(len(lines)))
    return ChunkRow("c", "f", "transcript", text, times[0], times[-1] + 1500,
                    tuple(dict.fromkeys(w for w, _ in lines)), "", times,
                    tuple(w for w, _ in lines))


def test_a_moment_of_filler_alone_is_passed_over_for_one_that_says_something() -> None:
    """IS1004a 00:10:47: "Thanks. / Thanks. / Alright." was a moment."""
    thanks = transcript_row([("Ann", "Thanks."), ("Bo", "Thanks."), ("Ann", "Alright.")])
    said = transcript_row([("Bo", "The casing will be yellow rubber.")], start_ms=900_000)
    picked = moments_module.pick_moments(Rows(thanks, said), [0, 1], set(), None, 3)
    assert [m.snippet for m in picked] == ["The casing will be yellow rubber."]


def test_a_quote_matched_by_meaning_opens_at_the_first_turn_that_says_something() -> None:
    """It opened with "Mm-hmm." and went on in another speaker's words under the first
    speaker's name."""
    row = transcript_row([("Grad C", "Mm-hmm."), ("Grad A", "Yeah."),
                          ("Professor E", "The recogniser needs more training data."),
                          ("Grad C", "Right.")])
    moment, _ = moments_module.moment_of(row, set())
    assert moment.speaker == "Professor E" and moment.start_ms == 651_000
    assert moment.snippet.startswith("The recogniser needs more training data.")


@pytest.mark.parametrize(("text", "quote"), [
    ("Ann: so the decision went to a battery.\nBo: Fine.", "…so the decision went"),
    ("Ann: The decision went to a battery.\nBo: Fine.", "The decision went"),
    ("decision went to a battery with a backup.\nThey chose rubber.", "…decision went"),
])
def test_a_quote_that_opens_inside_a_sentence_says_so(text: str, quote: str) -> None:
    snippet, _ = make_snippet(text, {"decision"}, speakers=("Ann", "Bo"))
    assert snippet.removeprefix("Ann: ").startswith(quote), snippet


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
    ("Ja, genau. / Also.", True), ("Thanks. / Thanks. / Alright.", True),
    ("Yeah, the budget is fine.", False), ("", False)])
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



@pytest.mark.parametrize("query", ["what did Grad F say about the parser",
                                   "what did the Project Manager decide",
                                   "Professor C on the belief net", "Marketing trends"])
def test_no_moment_opens_on_filler_and_goes_on_in_another_speakers_words(
        meetings_index: Any, query: str) -> None:
    """A query naming a speaker matches labels: "Grad F: Mm-hmm. / Grad A: …" under Grad F's
    name was 36 of 561 moments on dev (bench/answer_size.py)."""
    names = {s for r in meetings_index.recordings for s in r.speakers}
    for mode in ("keyword", "hybrid"):
        hits = search(meetings_index, make_request(query, mode=mode), None)
        for moment in (m for hit in hits for m in hit.moments):
            turns = moment.snippet.split(" / ")
            if len(turns) > 1 and filler_only(turns[0], tuple(names)):
                others = [t for t in turns[1:] if t.split(": ")[0] in names]
                assert all(t.split(": ")[0] == moment.speaker for t in others), moment


@given(st.lists(st.integers(0, 2000), max_size=40), st.integers(1, 400))
def test_the_densest_run_is_the_first_hit_with_most_hits_within_reach(hits: list[int],
                                                                       reach: int) -> None:
    hits = list(dict.fromkeys(hits))  # offsets come once each, almost always ascending
    for order in (sorted(hits), hits):
        if order:
            counts = [sum(1 for h in order[i:] if h - order[i] <= reach)
                      for i in range(len(order))]
            assert densest_run(order, reach) == counts.index(max(counts))


def test_a_line_matched_by_its_label_alone_gives_way_to_that_speakers_next_words() -> None:
    """'What did PhD D explain?' matches the label of "PhD D: Uh yeah." (dev, 40 of 561
    moments before): the moment is PhD D's next line that says something."""
    lines = ["PhD D: Uh yeah.", "Grad F: Yeah, a fraction of it.",
             "PhD D: A part of it, it is two times bigger."]
    text = "\n".join(lines)
    speakers = ("PhD D", "Grad F", "PhD D")
    snippet, at = make_snippet(text, {"phd", "d"}, speakers=speakers)
    assert text.count("\n", 0, at) == 2
    assert snippet.startswith("PhD D: A part of it")


def test_when_the_speaker_says_nothing_more_the_next_words_of_anyone_are_the_moment() -> None:
    text = "PhD D: Mm-hmm.\nProfessor B: The model is twice as big.\nPhD D: Yeah."
    speakers = ("PhD D", "Professor B", "PhD D")
    _, at = make_snippet(text, {"phd", "d"}, speakers=speakers)
    assert text.count("\n", 0, at) == 1


def test_a_filler_line_inside_the_speaker_filter_never_moves_the_moment_outside_it() -> None:
    text = "PhD D: Mm-hmm.\nProfessor B: The model is twice as big."
    speakers = ("PhD D", "Professor B")
    focus = [(0, len("PhD D: Mm-hmm."))]
    _, at = make_snippet(text, {"phd", "d"}, speakers=speakers, focus=focus)
    assert at < len("PhD D: Mm-hmm.")
