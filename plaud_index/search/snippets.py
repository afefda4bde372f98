"""Snippets: the short quote a result shows, built around the densest run of query terms.

A snippet opens at the start of the utterance (or note paragraph) holding most
of the match, so a moment's label and its quote name the same speaker (deep inside
a long utterance it opens a little before the match, marked "…"); lines are
joined with " / " so turns and note headings stay apart. Pure.
"""

from __future__ import annotations

from ..index.analyzer import term_spans

SNIPPET_CHARS = 240


def speaker_lines(text: str, speakers: tuple[str, ...], wanted: str) -> list[tuple[int, int]]:
    """Character ranges of the lines spoken by ``wanted`` (the speaker filter)."""
    ranges, offset = [], 0
    for line, who in zip(text.split("\n"), speakers, strict=False):
        if wanted.casefold() in who.casefold():
            ranges.append((offset, offset + len(line)))
        offset += len(line) + 1
    return ranges


def make_snippet(text: str, terms: set[str], width: int = SNIPPET_CHARS,
                 focus: list[tuple[int, int]] | None = None) -> tuple[str, int]:
    """A ~``width``-character excerpt centred on the densest run of query terms, starting
    at the beginning of the line (utterance, note paragraph) holding most of the run when
    that line start is near enough, so the quote opens with the speaker the moment names.

    ``focus`` limits the match to some character ranges (a speaker's lines).
    Returns the snippet (whitespace collapsed, lines joined by " / ": turns and note
    headings stay apart) and the offset in ``text`` of the match it is built around (the
    first term in the line holding most of the run; that line is the moment's utterance)."""
    def allowed(pos: int) -> bool:
        return focus is None or any(lo <= pos < hi for lo, hi in focus)

    hits = list(dict.fromkeys(pos for pos, term in term_spans(text)
                              if term in terms and allowed(pos)))
    reach = width * 2 // 3
    if hits:
        best = max(range(len(hits)), key=lambda i: sum(1 for h in hits[i:] if h - hits[i] <= reach))
        run = [h for h in hits[best:] if h - hits[best] <= reach]
        first, last = _densest_line(text, run), run[-1]
    elif focus:
        first = last = focus[0][0]  # the speaker's first line
    else:  # nothing to centre on (a match by meaning only): the passage from its start,
        first = last = 0  # so the moment is its first line, the one the quote opens with
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
    return ("…" if start > line_start else "") + body + ("…" if end < len(text) else ""), \
        first


def _densest_line(text: str, run: list[int]) -> int:
    """The first hit in the line (utterance) holding most of ``run``: the moment's line."""
    lines = [text.count("\n", 0, pos) for pos in run]
    best = max(set(lines), key=lambda line: (lines.count(line), -line))
    return run[lines.index(best)]


def _collapse(text: str) -> str:
    lines = (" ".join(line.split()) for line in text.split("\n"))
    return " / ".join(line for line in lines if line)
