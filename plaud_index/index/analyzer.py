"""Text → keyword terms, for every script: one analyser for the index, the query and snippets.

Pure. What a term is:
- Text is NFKC-normalised and case-folded (``Straße`` → ``strasse``, full-width
  ``ＡＢＣ`` → ``abc``); typographic apostrophes become ``'``.
- A word is a run of Unicode letters, combining marks and digits. Inside a word an
  apostrophe joins an English clitic (``don't``, ``Ann's``) and otherwise splits, with
  French/Italian elisions dropped (``l'équipe`` → ``équipe``). Hyphens split.
- Scripts written without spaces (Han, Hiragana, Katakana, Hangul, Thai, Lao, Khmer,
  Myanmar) become overlapping character bigrams, the standard approach of CJK
  analysers; the index also keeps each character alone, so a one-character query
  (the query side emits a unigram only for a one-character run) still matches.
- A word with diacritics adds its accent-free form (``küche`` + ``kuche``): ``Kuche``
  finds ``Küche``, ``cafe`` finds ``café``, and the exact form scores higher because it
  matches both.
- The light English stemmer touches only ASCII words; the stopword list is English
  function words, none of which is a content word in the other languages we index.
Terms are cut at ``MAX_TERM_CHARS`` (a 10 MB run without spaces is one long prefix,
not a 10 MB term).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from functools import lru_cache

VERSION = "unicode-1"  # recorded in the index: a different analyser means re-tokenising
MAX_TERM_CHARS = 40


def _mark_ranges() -> str:
    """A regex class body of every combining mark (categories Mn, Mc, Me)."""
    planes = (*range(0x30000), *range(0xE0000, 0xE0200))  # no marks exist elsewhere
    marks = [c for c in planes if unicodedata.category(chr(c)).startswith("M")]
    ranges: list[tuple[int, int]] = []
    for code in marks:
        if ranges and ranges[-1][1] == code - 1:
            ranges[-1] = (ranges[-1][0], code)
        else:
            ranges.append((code, code))
    return "".join(f"\\U{a:08x}-\\U{b:08x}" if a != b else f"\\U{a:08x}" for a, b in ranges)


_MARKS = _mark_ranges()
_UNIT = f"(?:[^\\W_]|[{_MARKS}])"  # a letter, digit or combining mark
_WORD = re.compile(f"{_UNIT}+(?:['\u2019]{_UNIT}+)*")
# The same words where no combining mark touches one, matched three times faster (the
# alternation above costs a branch per character): most text, and most snippets, are such.
_PLAIN_WORD = re.compile("[^\\W_]+(?:['\u2019][^\\W_]+)*")


def _is_mark(char: str) -> bool:
    return unicodedata.category(char)[0] == "M"  # Mn, Mc, Me: the marks of _MARKS


def _word_pattern(text: str) -> re.Pattern[str]:
    """``_WORD``, or ``_PLAIN_WORD`` where it finds the same words: the text holds no
    combining mark (told from its distinct characters, a few dozen)."""
    if text.isascii() or not any(_is_mark(c) for c in set(text) if c >= "\u0300"):
        return _PLAIN_WORD
    return _WORD


def _words(text: str) -> Iterator[re.Match[str]]:
    """``_WORD``'s matches in ``text``."""
    return _word_pattern(text).finditer(text)


_SPACELESS_RANGES = (
    (0x0E00, 0x0EFF), (0x1000, 0x109F), (0x1100, 0x11FF), (0x1780, 0x17FF),
    (0x3005, 0x3007), (0x3040, 0x30FF), (0x3100, 0x312F), (0x3130, 0x318F),
    (0x31F0, 0x31FF), (0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xA960, 0xA97F),
    (0xAC00, 0xD7FF), (0xF900, 0xFAFF), (0xFF66, 0xFF9F), (0x20000, 0x3FFFF),
)
_SPACELESS_CLASS = "".join(f"\\U{a:08x}-\\U{b:08x}" for a, b in _SPACELESS_RANGES)
# Splits a word into runs of spaceless-script characters and runs of everything else.
_PIECES = re.compile(f"([{_SPACELESS_CLASS}]+)|([^{_SPACELESS_CLASS}]+)")
_CLITICS = frozenset({"s", "t", "re", "ve", "ll", "d", "m"})  # don't, we're, it'll, ...
_ELISIONS = frozenset({"l", "d", "j", "m", "n", "s", "t", "c", "qu", "jusqu", "lorsqu",
                       "puisqu", "un", "dell", "all", "nell", "sull", "dall"})
_ASCII_WORD = re.compile(r"[a-z0-9']+")

STOPWORDS = frozenset([
    "a", "an", "and", "are", "as", "at", "be", "been", "but", "by", "did", "do", "does", "for",
    "from", "had", "has", "have", "he", "her", "his", "how", "i", "if", "in", "into", "is",
    "it", "its", "me", "my", "no", "not", "of", "on", "or", "our", "so", "than", "that", "the",
    "their", "them", "then", "there", "these", "they", "this", "to", "was", "we", "were",
    "what", "when", "where", "which", "who", "whom", "why", "will", "with", "would", "you",
    "your", "about", "um", "uh", "yeah", "okay", "ok", "oh", "like", "just", "also", "very",
    "really", "can", "could", "should"
])


def _stem(token: str) -> str:
    """A light, predictable suffix stripper: enough to join plural/verb forms."""
    if token.endswith("'s"):
        token = token[:-2]
    for suffix, keep in (("ies", "y"), ("sses", "ss"), ("ing", ""), ("ed", ""), ("s", "")):
        if token.endswith(suffix) and len(token) - len(suffix) >= 3:
            if suffix == "s" and token.endswith(("ss", "us", "is")):
                return token
            return token[: len(token) - len(suffix)] + keep
    return token


def _foldable(char: str) -> bool:
    """Latin, Greek and Cyrillic letters and their combining accents: scripts where
    people type words with and without the diacritics (not Devanagari's vowel signs)."""
    code = ord(char)
    return code < 0x0530 or 0x1E00 <= code <= 0x1FFF


def fold_accents(word: str) -> str:
    """``küche`` → ``kuche``: drop combining marks after canonical decomposition,
    for words of the scripts in which accents are optional; others stay as they are."""
    decomposed = unicodedata.normalize("NFD", word)
    if not all(_foldable(c) for c in decomposed):
        return word
    return unicodedata.normalize(
        "NFC", "".join(c for c in decomposed if not unicodedata.combining(c)))


def normalize(text: str) -> str:
    """NFKC and case folding, the form every term is made from."""
    return unicodedata.normalize("NFKC", text.replace("\u2019", "'")).casefold()


def _split_apostrophes(word: str) -> list[str]:
    """``don't`` stays one word; ``l'équipe`` → ``équipe``; ``rock'n'roll`` → three."""
    parts = word.split("'")
    out: list[str] = []
    i = 0
    while i < len(parts):
        part = parts[i]
        if i + 1 < len(parts) and parts[i + 1] in _CLITICS and part.isascii():
            out.append(f"{part}'{parts[i + 1]}")
            i += 2
            continue
        if not (i + 1 < len(parts) and part in _ELISIONS):
            out.append(part)
        i += 1
    return [p for p in out if p]


def _word_terms(word: str, *, query: bool) -> Iterator[tuple[int, str]]:
    """Terms of one normalised word with their offsets inside it."""
    for match in _PIECES.finditer(word):
        spaceless, other = match.group(1), match.group(2)
        base = match.start()
        if spaceless:
            yield from _bigrams(spaceless, base, query=query)
            continue
        for piece in _split_apostrophes(other):
            offset = base + max(other.find(piece), 0)
            yield from _word_forms(piece, offset)


def _bigrams(run: str, base: int, *, query: bool) -> Iterator[tuple[int, str]]:
    if len(run) == 1:
        yield base, run
        return
    for i in range(len(run) - 1):
        if not query:
            yield base + i, run[i]
        yield base + i, run[i:i + 2]
    if not query:
        yield base + len(run) - 1, run[-1]


def _word_forms(piece: str, offset: int) -> Iterator[tuple[int, str]]:
    piece = piece[:MAX_TERM_CHARS]
    if piece in STOPWORDS or not any(c.isalnum() for c in piece):
        return  # a stray combining mark with no letter under it is no word
    if _ASCII_WORD.fullmatch(piece):
        yield offset, _stem(piece)
        return
    yield offset, piece
    folded = fold_accents(piece)
    if folded != piece:
        yield offset, _stem(folded) if _ASCII_WORD.fullmatch(folded) else folded


def term_spans(text: str, *, query: bool = False) -> Iterator[tuple[int, str]]:
    """``(offset in text, term)`` for every term, in order. Offsets point into the
    original text (at the start of the word, or of the character for bigrams)."""
    for match in _words(text):
        start = match.start()
        raw = match.group()
        terms = _cached_word_terms(raw, query) if len(raw) <= CACHED_WORD_CHARS else \
            _raw_word_terms(raw, query)
        for offset, term in terms:
            yield start + offset, term


def term_hits(text: str, terms: set[str] | frozenset[str]) -> list[int]:
    """The offsets in ``text`` of the terms of ``terms`` it holds, each once, in the order
    ``term_spans`` gives them: what a snippet is built around. The same analysis, cheaper
    (it runs for every chunk an answer quotes): each distinct word is analysed once, and
    the text is walked word by word only when one of them holds a term."""
    if text.isascii():
        return _ascii_hits(text, terms)
    pattern = _word_pattern(text)
    holding = {raw for raw in set(pattern.findall(text))
               if any(term in terms for _, term in _text_word_terms(raw))}
    if not holding:
        return []
    hits: dict[int, None] = {}  # first seen first (a word's terms need not ascend)
    for match in pattern.finditer(text):
        raw = match.group()
        if raw in holding:
            for offset, term in _text_word_terms(raw):
                if term in terms:
                    hits[match.start() + offset] = None
    return list(hits)


def _ascii_hits(text: str, terms: set[str] | frozenset[str]) -> list[int]:
    """``term_hits`` of an ASCII text, from where the terms' letters occur in it. An ASCII
    word's terms are pieces of the word lowercased, each whole or as a stem (a prefix, or
    a prefix and "y": parties → party), so a word can hold a term only where the term's
    stem occurs; only those words are analysed, in text order."""
    lowered = text.lower()
    starts: set[int] = set()
    for term in terms:
        # "party" may be "parties": _stem's "ies" → "y" leaves three letters at least
        stem = term[:-1] if len(term) >= 4 and term.endswith("y") else term
        if not stem or not stem.isascii():
            continue  # no ASCII word has such a term
        at = lowered.find(stem)
        while at >= 0:
            starts.add(_ascii_word_start(text, at))
            at = lowered.find(stem, at + 1)
    hits: dict[int, None] = {}
    for start in sorted(starts):
        match = _PLAIN_WORD.match(text, start)
        if match is None:
            continue  # the stem began in no word (its letters were punctuation)
        for offset, term in _text_word_terms(match.group()):
            if term in terms:
                hits[start + offset] = None
    return list(hits)


def _ascii_word_start(text: str, at: int) -> int:
    """Where ``_PLAIN_WORD``'s word holding ``at`` begins, in ASCII text: back over
    letters and digits, and over an apostrophe that has one on each side (don't)."""
    while at > 0:
        before = text[at - 1]
        if before.isalnum() or (before == "'" and at > 1 and text[at - 2].isalnum()
                                and text[at].isalnum()):
            at -= 1
        else:
            break
    return at


def _text_word_terms(raw: str) -> tuple[tuple[int, str], ...]:
    """A text word's terms, remembered for the words short enough to recur."""
    return _cached_word_terms(raw, False) if len(raw) <= CACHED_WORD_CHARS else \
        _raw_word_terms(raw, False)


def _raw_word_terms(raw: str, query: bool) -> tuple[tuple[int, str], ...]:
    """The terms of one word as it appears in text, offsets inside it."""
    word = normalize(raw)
    same_length = len(word) == len(raw)
    return tuple((offset if same_length else 0, term)
                 for offset, term in _word_terms(word, query=query))


# Pure, so cached: words repeat (Zipf), and snippets analyse every chunk a result shows.
# Long "words" (a run of text without spaces) are not kept.
CACHED_WORD_CHARS = 64
_cached_word_terms = lru_cache(maxsize=1 << 16)(_raw_word_terms)


def tokenize(text: str) -> list[str]:
    """The terms the index stores for ``text`` (its BM25 document)."""
    return [term for _, term in term_spans(text)]


# Words that phrase a question about a meeting rather than name its subject
# ("what did we discuss about …"); they match every transcript, so the query drops them.
QUESTION_WORDS = frozenset(_stem(w) for w in [
    "discuss", "discussed", "discussion", "discussing", "talk", "talked", "talking", "say",
    "said", "says", "mention", "mentioned", "think", "thought", "thinks", "opinion",
    "summarize", "summarise", "summary", "meeting", "group", "decide", "decided", "decision",
    "anyone", "someone", "everyone", "people"
])


def query_terms(text: str) -> list[str]:
    """The distinct terms of a query, question phrasing dropped unless nothing else is left."""
    terms = list(dict.fromkeys(term for _, term in term_spans(text, query=True)))
    content = [t for t in terms if t not in QUESTION_WORDS]
    return content or terms


def has_searchable_text(text: str) -> bool:
    """Whether ``text`` holds any letter or digit at all (a query of only NULs does not)."""
    return _WORD.search(text) is not None
