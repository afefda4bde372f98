"""Snippets: the short quote a result shows, built around the densest run of query terms.

A snippet opens at the start of the utterance (or note line) holding most of the
match, so a moment's label and its quote name the same speaker. A quote that opens
inside a sentence says so with "…": deep inside a long utterance (it opens a little
before the match), or on a line that is itself the tail of a longer one (a window's
overlap, a cased script's lower-case first word). Lines are joined with " / " so turns
and note headings stay apart. Filler ("Mm-hmm.", "Thanks.") says nothing on its own: a
quote matched by meaning alone opens at the first turn that says something. Pure.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Sequence

from ..index.analyzer import term_hits

SNIPPET_CHARS = 240
# Words that carry no content on their own, in the languages meetings are most held in.
FILLER = frozenset(" ".join((
    "yeah yes yep yup no nope so okay ok um umm uh uhm hmm mm mmm mm-hmm uh-huh right well",
    "oh ah alright sure and but the a i mean like you know huh er erm hm see",
    "thanks thank cheers bye hi hello hey great cool good fine nice perfect exactly true",
    "ja jaja genau also äh ähm naja danke gut oui ouais euh bon bah ben merci d'accord",
    "sí vale pues eh este gracias bueno grazie certo obrigado",
    "嗯 对 對 好 是 啊 哦 うん はい ええ そう 네 응")).split())
_WORDS = re.compile(r"[^\W\d_][\w'-]*")


def filler_only(quote: str, speakers: Sequence[str] = ()) -> bool:
    """Is there nothing but filler in ``quote`` (speaker labels aside)?"""
    for name in speakers:
        quote = quote.replace(f"{name}: ", " ")
    said = False
    for word in _WORDS.finditer(quote.casefold()):  # most quotes fail at their first word
        if word.group() not in FILLER:
            return False
        said = True
    return said


def first_said(text: str, speakers: Sequence[str]) -> int:
    """Where the first line that is not filler only begins (0 when every line is)."""
    offset = 0
    for line in text.split("\n"):
        if not filler_only(line, speakers):
            return offset
        offset += len(line) + 1
    return 0


def _opens_mid_sentence(line: str, speakers: Sequence[str]) -> bool:
    """A line whose words start in lower case: the tail of a sentence (the start of an
    utterance or a note line is capitalised in cased scripts; uncased ones cannot say)."""
    for name in speakers:
        if name and line.startswith(f"{name}: "):
            line = line[len(name) + 2:]
            break
    first = re.match(r"[^\w]*(\w)", line)
    return first is not None and first.group(1).islower()


def speaker_lines(text: str, speakers: tuple[str, ...], wanted: str) -> list[tuple[int, int]]:
    """Character ranges of the lines spoken by ``wanted`` (the speaker filter)."""
    ranges, offset = [], 0
    for line, who in zip(text.split("\n"), speakers, strict=False):
        if wanted.casefold() in who.casefold():
            ranges.append((offset, offset + len(line)))
        offset += len(line) + 1
    return ranges


def make_snippet(text: str, terms: set[str], width: int = SNIPPET_CHARS,
                 focus: list[tuple[int, int]] | None = None,
                 speakers: Sequence[str] = ()) -> tuple[str, int]:
    """A ~``width``-character excerpt centred on the densest run of query terms, starting
    at the beginning of the line (utterance, note line) holding most of the run when that
    line start is near enough, so the quote opens with the speaker the moment names.

    ``focus`` limits the quote to some lines (a speaker's, for the speaker filter): it is
    made of those lines alone, so it is all in that speaker's words, and each line after
    the first loses its label (the moment names the speaker once). ``speakers`` are the
    labels the lines may open with, one per line.
    Returns the snippet (whitespace collapsed, lines joined by " / ": turns and note
    headings stay apart) and the offset in ``text`` of the match it is built around (the
    first term in the line holding most of the run; that line is the moment's utterance)."""
    if not focus:  # no filter, or none of the speaker's lines is in this passage
        return _snippet(text, terms, width, speakers)
    lines: list[str] = []
    starts: list[int] = []
    who: list[str] = []
    numbers = [text.count("\n", 0, lo) for lo, _ in focus]
    for (lo, hi), number in zip(focus, numbers, strict=True):
        line = text[lo:hi]
        label = speakers[number] if number < len(speakers) else ""
        if lines and label and line.startswith(f"{label}: "):
            line, lo = line[len(label) + 2:], lo + len(label) + 2
        lines.append(line)
        starts.append(lo)
        who.append(label if len(lines) == 1 else "")
    own = "\n".join(lines)
    snippet, at = _snippet(own, terms, width, who)
    number = own.count("\n", 0, at)
    return snippet, starts[number] + at - (own.rfind("\n", 0, at) + 1)


def _snippet(text: str, terms: set[str], width: int,
             speakers: Sequence[str]) -> tuple[str, int]:
    """``make_snippet`` over all of ``text``."""
    hits = term_hits(text, terms)
    reach = width * 2 // 3
    if hits:
        best = _densest_run(hits, reach)
        run = [h for h in hits[best:] if h - hits[best] <= reach]
        first = _past_filler(text, _densest_line(text, run), speakers)
        last = max(run[-1], first)
    else:  # nothing to centre on (a match by meaning only): the passage from its first
        # turn that says something, so the moment is that line, the one the quote opens with
        first = last = first_said(text, speakers)
    # The quote opens where the matched utterance does, so it is in the words of the
    # speaker the moment names (never the tail of someone else's line, never inside a
    # label), or, deep inside a long utterance, a little before the match.
    line_start = text.rfind("\n", 0, first) + 1
    start = line_start
    if first - line_start > reach:
        start = first - width // 3
        space = text.find(" ", start, first)
        start = space + 1 if space >= 0 else start
    end = min(len(text), start + width)
    if end < len(text):  # do not cut a word in half
        space = text.rfind(" ", max(start, min(last, end - 1)), end)
        end = space if space > start else end
    body = _collapse(text[start:end])
    line_end = text.find("\n", line_start)
    inside = start > line_start or _opens_mid_sentence(
        text[line_start:line_end if line_end >= 0 else len(text)], speakers)
    if inside and not body.startswith("…"):  # after the speaker's label, if it opens so
        label = next((f"{n}: " for n in speakers if n and body.startswith(f"{n}: ")), "")
        body = f"{label}…{body[len(label):]}"
    return body + ("…" if end < len(text) else ""), first


def _past_filler(text: str, at: int, speakers: Sequence[str]) -> int:
    """``at``, unless its line says nothing but filler ("PhD D: Uh, yeah.", matched by its
    label alone): then where the next line of the same speaker that says something begins,
    else the next such line of anyone's, so the moment is a
    line with words in it, under its own speaker's name."""
    offset = text.rfind("\n", 0, at) + 1
    number = text.count("\n", 0, offset)
    who = speakers[number] if number < len(speakers) else None
    anyone = None
    while offset <= len(text):  # line by line: most matched lines say something
        end = text.find("\n", offset)
        end = len(text) if end < 0 else end
        if not filler_only(text[offset:end], speakers):
            if offset <= at:
                return at
            if who is None or (number < len(speakers) and speakers[number] == who):
                return offset
            anyone = offset if anyone is None else anyone
        offset, number = end + 1, number + 1
    return at if anyone is None else anyone


def _densest_run(hits: list[int], reach: int) -> int:
    """The hit that begins the run holding most later hits within ``reach`` of it (the
    first such). Hits almost always ascend: then each count is one binary search."""
    if all(a < b for a, b in zip(hits, hits[1:], strict=False)):
        counts = [bisect_right(hits, hit + reach, i) - i for i, hit in enumerate(hits)]
    else:  # a word whose terms do not ascend (an elided word repeated inside itself)
        counts = [sum(1 for h in hits[i:] if h - hit <= reach) for i, hit in enumerate(hits)]
    return counts.index(max(counts))


def _densest_line(text: str, run: list[int]) -> int:
    """The first hit in the line (utterance) holding most of ``run``: the moment's line."""
    lines = [text.count("\n", 0, pos) for pos in run]
    best = max(set(lines), key=lambda line: (lines.count(line), -line))
    return run[lines.index(best)]


def _collapse(text: str) -> str:
    lines = (" ".join(line.split()) for line in text.split("\n"))
    return " / ".join(line for line in lines if line)
