"""The moments a result shows: where in a recording a query matched, said in few words. Pure.

A recording's best chunks become moments in score order, but not every one is worth the
reader's attention:
- one moment per stretch of the recording: a chunk that overlaps a moment already taken
  (chunks overlap a little, and two neighbours often match the same passage) is merged
  into it (the stretch grows to cover both; the better quote stays);
- no moment of filler alone ("Yeah. / Yeah. / So.");
- the best recording gets up to ``MOMENTS`` moments of full-length quotes, the others
  three, two or one by how near the best they score, with shorter quotes
  (``moment_room``, ``quote_width``): the weaker a recording, the less room it takes.
Each quote opens at the start of the matched utterance, in the words of the speaker the
moment names (``snippets.make_snippet``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ..clock import format_clock
from ..index.records import ChunkRow
from ..index.snapshot import Snapshot
from ..models import NOTE_TITLES
from ..results import Moment
from .snippets import SNIPPET_CHARS, filler_only, make_snippet, speaker_lines

MOMENTS = 3  # for the best recording
LOOK_FURTHER = 4  # rows read per moment of room at most, when some merge or are filler
SHORT_QUOTE = 160  # characters of a quote of any recording but the best
THREE, TWO = 0.75, 0.6  # shares of the best score that earn a recording 3 or 2 moments
# a notes passage under one of these titles with a time is that kind of moment
TIMED_NOTES = {title: kind for kind, title in NOTE_TITLES.items()}


def quote_width(position: int) -> int:
    """How long a quote may be: the best recording's in full, the others' shorter."""
    return SNIPPET_CHARS if position == 0 else SHORT_QUOTE


def moment_room(position: int, score: float, best: float) -> int:
    """How many moments the recording at ``position`` (0: the best) may show: room in
    proportion to its score beside the best's (1 at least, ``MOMENTS`` for the best)."""
    if position == 0 or best <= 0:
        return MOMENTS
    share = score / best
    return 3 if share >= THREE else 2 if share >= TWO else 1


def moment_source(source: str, heading: str, start_ms: int | None) -> str:
    """What a moment is: "transcript", "notes", or a "highlight" / "mark" at its time."""
    if source == "notes" and start_ms is not None:
        return TIMED_NOTES.get(heading.split(" > ")[0], source)
    return source


def _span(moment: Moment) -> tuple[int, int] | None:
    if moment.start_ms is None:
        return None
    return moment.start_ms, moment.end_ms if moment.end_ms is not None else moment.start_ms


def _meet(a: tuple[int, int] | None, b: tuple[int, int] | None) -> bool:
    return a is not None and b is not None and a[0] <= b[1] and b[0] <= a[1]


def _merged(moment: Moment, chosen: list[Moment]) -> bool:
    """Fold ``moment`` into a chosen moment it overlaps (that one's stretch grows to its
    end, its quote stays); ``False`` when it stands alone. (Untimed notes are told apart
    by the line they quote, in ``pick_moments``.)"""
    span = _span(moment)
    if span is None:
        return False
    into = next((i for i, kept in enumerate(chosen) if _meet(span, _span(kept))), None)
    if into is None:
        return False
    chosen[into] = _fold(chosen[into], span)
    while True:  # a stretch that grew may reach another moment now: fold that one too
        pair = next(((i, j) for i in range(len(chosen)) for j in range(i + 1, len(chosen))
                     if _meet(_span(chosen[i]), _span(chosen[j]))), None)
        if pair is None:
            return True
        i, j = pair
        folded = _span(chosen.pop(j))
        assert folded is not None
        chosen[i] = _fold(chosen[i], folded)


def _fold(kept: Moment, span: tuple[int, int]) -> Moment:
    end = kept.end_ms if kept.end_ms is not None else kept.start_ms
    return replace(kept, end_ms=max(span[1], end or 0))


def pick_moments(snapshot: Snapshot, rows: Sequence[int], terms: set[str],
                 speaker: str | None, room: int, width: int = SNIPPET_CHARS
                 ) -> tuple[Moment, ...]:
    """Up to ``room`` moments from ``rows`` (best first): none overlapping another, no note
    line quoted twice (overlapping note chunks hold the same lines), none of filler alone;
    the best row's moment when every one is passed over."""
    chosen: list[Moment] = []
    quoted: set[str] = set()  # the note lines chosen moments open at
    first: Moment | None = None
    for row in rows[:room * LOOK_FURTHER]:  # bounded: each row read is a chunk parsed
        chunk = snapshot.chunks[row]  # read (parsed) once per row
        moment, line = moment_of(chunk, terms, speaker, width)
        first = first or moment
        if filler_only(moment.snippet, chunk.line_speakers) or _merged(moment, chosen):
            continue
        if moment.start_ms is None:  # a window's overlap may hold only a line's tail
            if any(q.endswith(line) or line.endswith(q) for q in quoted):
                continue
            quoted.add(line)
        chosen.append(moment)
        if len(chosen) >= room:
            break
    return tuple(chosen) if chosen or first is None else (first,)


def _heading_above(text: str, group: str, offset: int) -> str:
    """The heading line of the note section holding ``offset`` (a note chunk's heading
    lines are its note's title, or start with it: ``Summary > Decisions``)."""
    note = group.split(" > ")[0]
    above = text[:text.rfind("\n", 0, offset) + 1].split("\n")
    return next((line for line in reversed(above)
                 if line == note or line.startswith(f"{note} > ")), "")


def moment_of(chunk: ChunkRow, terms: set[str], speaker: str | None = None,
              width: int = SNIPPET_CHARS) -> tuple[Moment, str]:
    """The moment of one chunk (its matched utterance's time and speaker, and a quote that
    opens with that utterance) and the line of the chunk it matched."""
    focus = speaker_lines(chunk.text, chunk.line_speakers, speaker) if speaker else None
    snippet, match = make_snippet(chunk.text, terms, width, focus=focus,
                                  speakers=chunk.line_speakers)
    line = chunk.text.count("\n", 0, match)
    start_ms = chunk.start_ms
    who = ", ".join(chunk.speakers)
    if line < len(chunk.line_ms):  # the utterance the match sits in
        start_ms = chunk.line_ms[line] if chunk.line_ms[line] is not None else start_ms
        who = chunk.line_speakers[line] if line < len(chunk.line_speakers) else who
    if who and snippet.startswith(f"{who}: "):  # the label already names them
        snippet = snippet[len(who) + 2:]
    if chunk.source == "notes":  # a note's line says little without its section's heading
        heading = _heading_above(chunk.text, chunk.heading, match)
        if heading and not snippet.startswith(heading):
            snippet = f"{heading} / {snippet}"
    moment = Moment(start=format_clock(start_ms), start_ms=start_ms, end_ms=chunk.end_ms,
                    speaker=who, source=moment_source(chunk.source, chunk.heading, start_ms),
                    snippet=snippet)
    return moment, " ".join(chunk.text.split("\n")[line].split())
