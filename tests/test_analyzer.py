"""The Unicode analyser: tables of real words in many scripts, and properties for any text."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plaud_index.index.analyzer import _WORD as EVERY_WORD  # the definition of a word
from plaud_index.index.analyzer import (
    MAX_TERM_CHARS,
    STOPWORDS,
    fold_accents,
    has_searchable_text,
    normalize,
    query_terms,
    term_hits,
    term_spans,
    tokenize,
)
from plaud_index.index.analyzer import _words as words  # its fast path


@pytest.mark.parametrize(("text", "expected"), [
    ("Überprüfung der Kündigungsfrist", ["überprüfung", "uberprufung", "der",
                                          "kündigungsfrist", "kundigungsfrist"]),
    ("café résumé naïve", ["café", "cafe", "résumé", "resume", "naïve", "naive"]),
    ("Straße", ["strasse"]),
    ("ＡＢＣ Q3", ["abc", "q3"]),  # full-width letters fold to ASCII
    ("l'équipe d'accord", ["équipe", "equipe", "accord"]),  # French elisions
    ("don't Ann’s", ["don't", "ann"]),  # English clitics, typographic apostrophe
    ("follow-up", ["follow", "up"]),
    ("meetings discussed budgets", ["meeting", "discuss", "budget"]),  # English stems
    ("Tiếng Việt", ["tiếng", "tieng", "việt", "viet"]),
    ("Привет ёлка", ["привет", "ёлка", "елка"]),
    ("नमस्ते", ["नमस्ते"]),  # Devanagari vowel signs are letters of the word, never folded
    ("予算", ["予", "予算", "算"]),
])
def test_words_of_many_scripts(text: str, expected: list[str]) -> None:
    assert tokenize(text) == expected


def test_cjk_runs_become_overlapping_bigrams_and_the_query_uses_bigrams_only() -> None:
    assert query_terms("明日の会議") == ["明日", "日の", "の会", "会議"]
    assert {"明", "日", "の", "会", "議"} <= set(tokenize("明日の会議"))
    assert query_terms("예산") == ["예산"]
    assert query_terms("会") == ["会"]  # a one-character query is a unigram


def test_a_japanese_sentence_is_no_longer_empty() -> None:
    assert tokenize("明日の会議で予算について話し合いました")


def test_the_accent_free_form_is_added_so_the_exact_form_matches_twice() -> None:
    assert query_terms("Kuche") == ["kuche"]
    assert set(query_terms("Küche")) == {"küche", "kuche"}


def test_a_huge_run_without_spaces_is_cut_not_kept_whole() -> None:
    assert all(len(t) <= MAX_TERM_CHARS for t in tokenize("x" * 1_000_000))


def test_offsets_point_at_the_word_in_the_original_text() -> None:
    text = "Wir prüfen die Küche. 会議室の予算"
    for offset, term in term_spans(text):
        assert normalize(text[offset:offset + 2])[:1] == term[:1] or \
            fold_accents(normalize(text[offset:offset + 2]))[:1] == term[:1]


def test_nothing_searchable_in_punctuation_or_nuls() -> None:
    assert not has_searchable_text("\x00\x00 ?! …")
    assert has_searchable_text("\x00 予")


LETTERS = st.characters(categories=("Lu", "Ll", "Lo", "Nd"))


@given(st.text(LETTERS, min_size=1, max_size=30))
def test_a_non_ascii_word_keeps_every_letter(word: str) -> None:
    """The old analyser cut ``München`` into ``m`` + ``nchen``; a letter is never dropped."""
    if word.isascii() or normalize(word) in STOPWORDS:  # "ª" folds to the stopword "a"
        return
    terms = tokenize(word)
    assert terms
    covered = set("".join(terms))
    normal = normalize(word)
    assert {c for c in normal if unicodedata.category(c)[0] in "LN"} <= covered | set(
        "".join(fold_accents(c) for c in normal))


@given(st.text(max_size=200))
def test_normalisation_is_idempotent(text: str) -> None:
    assert normalize(normalize(text)) == normalize(text)


@given(st.text(st.characters(min_codepoint=0x4E00, max_codepoint=0x9FFF), min_size=2,
               max_size=20))
def test_bigrams_cover_every_adjacent_pair(run: str) -> None:
    terms = set(tokenize(run))
    assert all(run[i:i + 2] in terms for i in range(len(run) - 1))
    assert set(query_terms(run)) == {run[i:i + 2] for i in range(len(run) - 1)}


@given(st.text(max_size=300))
def test_any_text_analyses_without_error_and_terms_are_bounded(text: str) -> None:
    for offset, term in term_spans(text):
        assert 0 <= offset <= len(text) and 0 < len(term) <= MAX_TERM_CHARS
    query_terms(text)


# Letters, combining marks (Latin and Devanagari), apostrophes and spaceless scripts, packed.
_MIXED = st.text(st.sampled_from("abc éü'’ \u0301\u0308x1_-.ñ中文字한국어\u0903\u093e"),
                 max_size=24)
# Whole words that stem, elide, fold and repeat, run together as real text seldom is.
_WORDY = st.lists(st.sampled_from(["budget", "Budgets", "l'accord", "don't", " ", "parties",
                                   "ß", "Ｑ3", "café", "cafe\u0301", "予算", "'", "_"]),
                  max_size=30).map("".join)
# ASCII text, the fast path of term_hits: stems, plurals in -ies, elisions, clitics, case.
_ASCII = st.lists(st.sampled_from(["budget", "Budgets", "parties", "PARTY", "studies", "dies",
                                   "l'accord", "don't", "ann's", "it'll", "classes", "y", "a" * 45,
                                   "'", "_", "-", " ", "  ", "1", "Q3"]),
                  max_size=30).map("".join)


@given(st.one_of(st.text(max_size=200), _MIXED))
def test_the_fast_path_finds_exactly_the_words_of_the_full_definition(text: str) -> None:
    assert [(m.start(), m.group()) for m in words(text)] == [
        (m.start(), m.group()) for m in EVERY_WORD.finditer(text)]


@settings(max_examples=500)
@given(st.one_of(st.text(max_size=200), _MIXED, _WORDY, _ASCII), st.data())
def test_term_hits_are_the_offsets_term_spans_gives_for_those_terms(text: str,
                                                                     data: st.DataObject) -> None:
    spans = list(term_spans(text))
    wanted = data.draw(st.sets(st.sampled_from([t for _, t in spans]))) if spans else set()
    assert term_hits(text, wanted) == list(dict.fromkeys(at for at, term in spans
                                                         if term in wanted))


def test_a_combining_accent_stays_inside_its_word() -> None:
    assert tokenize("cafe\u0301 budget") == ["café", "cafe", "budget"]
    assert term_hits("the cafe\u0301 budget", {"cafe", "budget"}) == [4, 10]
