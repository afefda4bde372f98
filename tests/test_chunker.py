"""chunker: windows on utterance boundaries, overlap, time ranges, the token budget."""

from __future__ import annotations

import time
from datetime import datetime, timezone

from hypothesis import given, settings
from hypothesis import strategies as st

from plaud_index.chunker import TARGET_CHARS, Chunker, estimate_tokens
from plaud_index.embedding.embedder import OnnxEmbedder
from plaud_index.models import NoteSection, Recording, Utterance

WHEN = datetime(2026, 3, 2, 10, 0, tzinfo=timezone.utc)


def recording(utterances: list[Utterance], notes: tuple[NoteSection, ...] = ()) -> Recording:
    return Recording("rec1", "Budget review", WHEN, WHEN, 60_000, tuple(utterances), notes)


def talk(n: int, words: int = 20) -> list[Utterance]:
    return [Utterance(" ".join(f"w{i}x{j}" for j in range(words)) + ".", i * 10_000,
                      i * 10_000 + 9_000, f"Speaker {i % 3 + 1}") for i in range(n)]


def test_windows_end_on_utterance_boundaries_near_the_target_size() -> None:
    chunks = Chunker().chunk(recording(talk(40)))
    transcript = [c for c in chunks if c.source == "transcript"]
    assert len(transcript) > 5
    for chunk in transcript:
        assert all(line.startswith("Speaker ") for line in chunk.text.split("\n"))
        assert len(chunk.text) <= 800 + 200  # one utterance of slack at most
    assert all(len(c.text) >= 500 for c in transcript[:-1])


def test_consecutive_windows_overlap_by_about_120_characters() -> None:
    for words in (8, 20):  # short utterances carry whole; long ones carry their last words
        chunks = [c for c in Chunker().chunk(recording(talk(40, words)))]
        assert len(chunks) > 3
        for prev, nxt in zip(chunks, chunks[1:], strict=False):
            first_line = nxt.text.split("\n")[0]
            body = first_line.split(": ", 1)[1]
            assert prev.text.endswith(body) or first_line in prev.text
            shared = sum(len(line) + 1 for line in nxt.text.split("\n")
                         if line.split(": ", 1)[1] in prev.text)
            assert 40 <= shared <= 121


def test_every_utterance_is_in_some_window() -> None:
    utterances = talk(33)
    text = "\n".join(c.text for c in Chunker().chunk(recording(utterances)))
    for u in utterances:
        assert u.text in text


def test_chunk_times_span_their_utterances() -> None:
    utterances = talk(30)
    for chunk in Chunker().chunk(recording(utterances)):
        # A line is a whole utterance, or (the carried overlap) the end of one.
        lines = [next(u for u in utterances if u.text.endswith(line.split(": ", 1)[1]))
                 for line in chunk.text.split("\n")]
        assert lines[0].start_ms <= chunk.start_ms <= lines[0].end_ms
        assert chunk.end_ms == lines[-1].end_ms
        assert set(chunk.speakers) == {u.speaker for u in lines}
        assert chunk.line_ms[1:] == tuple(u.start_ms for u in lines[1:])


def test_a_long_monologue_splits_on_sentences_with_interpolated_times() -> None:
    sentences = [f"Sentence number {i} talks about the quarterly budget plan." for i in range(60)]
    long = Utterance(" ".join(sentences), 0, 600_000, "Ann")
    chunks = Chunker().chunk(recording([long]))
    assert len(chunks) > 3
    for chunk in chunks:
        assert chunk.text.startswith("Ann: Sentence number")
        assert chunk.text.endswith(".")
    starts = [c.start_ms for c in chunks]
    assert starts == sorted(starts) and starts[0] == 0 and starts[-1] > 300_000


def test_a_monologue_without_spaces_keeps_every_time_inside_it_and_in_order() -> None:
    """Pieces of unspaced text (CJK) have no separator between them: found by the index's
    value checks as chunks that ended before they started."""
    long = Utterance("会議" * 1_000, 1_000, 61_000, "Ann")  # 130 pieces of 15 characters
    chunks = Chunker(target_chars=20, overlap_chars=0).chunk(recording([long]))
    assert len(chunks) > 3
    for chunk in chunks:
        assert chunk.start_ms is not None and chunk.end_ms is not None
        assert 1_000 <= chunk.start_ms <= chunk.end_ms <= 61_000


def test_embedded_text_has_title_and_date_prefix_but_text_does_not() -> None:
    chunk = Chunker().chunk(recording(talk(2)))[0]
    assert chunk.embed_text.startswith("Budget review (2026-03-02)\n")
    assert not chunk.text.startswith("Budget review")


def test_chunk_ids_are_stable_content_hashes() -> None:
    a = Chunker().chunk(recording(talk(20)))
    b = Chunker().chunk(recording(talk(20)))
    assert [c.chunk_id for c in a] == [c.chunk_id for c in b]
    assert len({c.chunk_id for c in a}) == len(a)
    changed = talk(20)
    changed[-1] = Utterance("Completely different ending.", 190_000, 199_000, "Ann")
    c = Chunker().chunk(recording(changed))
    assert [x.chunk_id for x in c][:3] == [x.chunk_id for x in a][:3]
    assert c[-1].chunk_id != a[-1].chunk_id


def test_identical_windows_still_get_unique_ids() -> None:
    same = [Utterance("Yes. " * 100, i * 1000, i * 1000 + 900, "A") for i in range(4)]
    chunks = Chunker().chunk(recording(same))
    assert len({c.chunk_id for c in chunks}) == len(chunks)


def test_note_chunks_follow_markdown_sections() -> None:
    notes = (
        NoteSection("Summary", "Summary", "The team reviewed the Q3 budget in detail. " * 6),
        NoteSection("Summary", "Summary > Decisions", "- Cut contractor spend by 15%. " * 8),
        NoteSection("Summary", "Summary > Action items", "- Marcus: send forecast."),
    )
    chunks = [c for c in Chunker().chunk(recording([], notes)) if c.source == "notes"]
    assert chunks[0].text.startswith("Summary\nThe team reviewed")
    assert chunks[0].heading == "Summary"
    assert any(c.text.startswith("Summary > Decisions\n") for c in chunks)
    assert all(c.start_ms is None for c in chunks)


def test_tiny_note_sections_merge_with_the_next_one() -> None:
    notes = (NoteSection("Summary", "A", "short"), NoteSection("Summary", "B", "also short"))
    chunks = Chunker().chunk(recording([], notes))
    assert len(chunks) == 1 and "short" in chunks[0].text and "also short" in chunks[0].text


def test_recording_without_content_has_no_chunks() -> None:
    assert Chunker().chunk(recording([])) == []


def test_windows_respect_the_real_tokenizer_budget(real_embedder: OnnxEmbedder) -> None:
    # Digits and rare words explode into many word pieces: 800 chars can exceed 256.
    dense = [Utterance(" ".join(f"{i}{j}x{j * 7919}" for j in range(60)), i * 1000,
                       i * 1000 + 900, "A") for i in range(10)]
    chunker = Chunker(real_embedder.count_tokens)
    chunks = chunker.chunk(recording(dense))
    assert all(real_embedder.count_tokens(c.embed_text) <= 256 for c in chunks)
    assert estimate_tokens("x") > 0


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.text(min_size=1, max_size=400), st.sampled_from(["A", "B", ""])),
                min_size=0, max_size=30))
def test_any_transcript_chunks_within_budget_and_keeps_every_word(
        items: list[tuple[str, str]]) -> None:
    utterances = [Utterance(" ".join(t.split()), i * 1000, i * 1000 + 500, s)
                  for i, (t, s) in enumerate(items) if t.split()]
    chunker = Chunker(estimate_tokens)
    chunks = chunker.chunk(recording(utterances))
    assert all(estimate_tokens(c.embed_text) <= 256 for c in chunks)
    words = {w for c in chunks for w in c.text.split()}
    for u in utterances:
        for word in u.text.split():
            assert word in words or len(word) > 200


def _recording(title: str = "T", utterances: tuple[Utterance, ...] = ()) -> Recording:
    return Recording("f", title, datetime(2026, 3, 2, tzinfo=timezone.utc), None, 0, utterances)


def test_a_title_longer_than_the_token_budget_terminates_and_keeps_the_text() -> None:
    chunker = Chunker(estimate_tokens)
    chunks = chunker.chunk(_recording("word " * 2000, (Utterance("hello there", 0, 10, "A"),)))
    assert chunks and "hello there" in chunks[0].text
    assert all(estimate_tokens(c.embed_text) <= chunker.max_tokens for c in chunks)


def test_thousands_of_identical_utterances_are_linear_and_ids_unique() -> None:
    same = tuple(Utterance("yes", i * 1000, i * 1000 + 500, "A") for i in range(8000))
    started = time.perf_counter()
    chunks = Chunker(estimate_tokens).chunk(_recording(utterances=same))
    assert len({c.chunk_id for c in chunks}) == len(chunks)
    assert time.perf_counter() - started < 30  # was 90 s: quadratic ordinal search


def test_a_ten_megabyte_utterance_is_split_in_linear_time() -> None:
    huge = " ".join(f"word{i % 97}" for i in range(1_200_000))  # ~10 MB, one utterance
    started = time.perf_counter()
    chunks = Chunker(estimate_tokens).chunk(_recording(utterances=(Utterance(huge, 0, 1, ""),)))
    assert chunks and max(len(c.text) for c in chunks) <= 2 * TARGET_CHARS
    assert time.perf_counter() - started < 60  # was 183 s


def test_text_without_spaces_is_cut_into_bounded_chunks() -> None:
    solid = "会議" * 500_000  # 1M characters, no space anywhere
    chunks = Chunker(estimate_tokens).chunk(_recording(utterances=(Utterance(solid, 0, 1, ""),)))
    assert len(chunks) > 1 and max(len(c.text) for c in chunks) <= 2 * TARGET_CHARS
    assert "".join(c.text for c in chunks).count("会議") >= 499_000  # nothing thrown away
