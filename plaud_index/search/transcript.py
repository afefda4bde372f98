"""Reading around a moment: a recording's utterances rebuilt from its indexed chunks. Pure.

Transcript chunks hold one line per utterance (``Speaker: text``) with each line's
start time and speaker. Consecutive chunks overlap: a chunk may open with the
tail of the previous chunk's last utterance (the chunker's carry), and an
utterance too long for one chunk is split in pieces with the same start. So the
rebuild drops a carried tail and joins pieces, and a window is then a slice by
time, capped in characters nearest the asked moment first.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..clock import format_clock
from ..errors import InvalidQueryError, UnknownRecordingError
from ..index.records import ChunkRow
from ..index.snapshot import Snapshot
from ..results import Around, Spoken
from . import cursors
from .rank import echo

DEFAULT_WINDOW_S = 120  # on each side of the moment
MAX_WINDOW_S = 900
MAX_WINDOW_CHARS = 4000

_CLOCK = re.compile(r"(?:(\d{1,3}):)?([0-5]?\d):([0-5]\d)(?:\.\d+)?")


def parse_at(at: object = None, at_ms: object = None) -> int:
    """``"00:12:30"``, ``"12:30"`` or ``at_ms`` → milliseconds from the recording start."""
    if at is not None and at_ms is not None:
        raise InvalidQueryError("give at or at_ms, not both")
    if at_ms is not None:
        if isinstance(at_ms, bool) or not isinstance(at_ms, int) or at_ms < 0:
            raise InvalidQueryError(f"at_ms must be a whole number of milliseconds ≥ 0, got "
                                    f"{echo(at_ms)}")
        return at_ms
    match = _CLOCK.fullmatch(at.strip()) if isinstance(at, str) else None
    if match is None:
        raise InvalidQueryError(f"at must be a time in the recording as hh:mm:ss or mm:ss "
                                f"(a moment's start from plaud_search), got {echo(at)}")
    hours, minutes, seconds = (int(g or 0) for g in match.groups())
    return ((hours * 60 + minutes) * 60 + seconds) * 1000


def parse_window(window: object) -> int:
    """Seconds on each side → milliseconds; 1 to ``MAX_WINDOW_S``."""
    if window is None:
        return DEFAULT_WINDOW_S * 1000
    if isinstance(window, bool) or not isinstance(window, int) or \
            not 1 <= window <= MAX_WINDOW_S:
        raise InvalidQueryError(f"window must be whole seconds from 1 to {MAX_WINDOW_S}, got "
                                f"{echo(window)}")
    return window * 1000


def utterances(rows: Sequence[ChunkRow]) -> list[Spoken]:
    """The transcript of one recording from its transcript chunks, in time order. An
    utterance longer than a chunk comes back as consecutive pieces of the same speaker
    with interpolated start times (as the index stores it)."""
    out: list[Spoken] = []
    for chunk in sorted(rows, key=lambda c: (c.start_ms or 0, c.chunk_id)):
        fresh = False  # past the lines this chunk repeats from the previous one
        for index, line in enumerate(chunk.text.split("\n")):
            start = chunk.line_ms[index] if index < len(chunk.line_ms) else chunk.start_ms
            who = chunk.line_speakers[index] if index < len(chunk.line_speakers) else ""
            text = line[len(who) + 2:] if who and line.startswith(f"{who}: ") else line
            if start is None or not text.strip():
                continue
            if not fresh and _repeats(out, start, who, text):
                continue  # the overlap carried over from the previous chunk
            fresh = True
            last = out[-1] if out else None
            if last and last.speaker == who and start == last.start_ms:
                out[-1] = Spoken(last.start, start, who, f"{last.text} {text}")  # halves
                continue
            out.append(Spoken(format_clock(start), start, who, text))
    return out


def _repeats(out: list[Spoken], start: int, who: str, text: str) -> bool:
    """Is this line one the previous chunk already gave: a whole utterance carried over,
    or the last words of one (the carry then starts part-way into it)?"""
    if out and out[-1].speaker == who and out[-1].start_ms < start and \
            len(text) < len(out[-1].text) and out[-1].text.endswith(text):
        return True  # the last words of the previous chunk's final utterance
    return any(s.speaker == who and s.start_ms == start and s.text.endswith(text)
               for s in out[-16:])


def around(snapshot: Snapshot, file_id: str, at_ms: int, window_ms: int,
           max_chars: int = MAX_WINDOW_CHARS) -> Around:
    """The utterances starting within ``window_ms`` of ``at_ms`` (and the one in progress
    at its start), nearest first under ``max_chars``."""
    index = snapshot.by_id.get(file_id)
    if index is None:
        raise UnknownRecordingError(f"No recording with file_id {echo(file_id)} is in the "
                                    "index; use plaud_search or plaud_list to find file ids.")
    record = snapshot.recordings[index]
    spoken = utterances(snapshot.chunks_of(index, "transcript"))
    if not spoken:
        raise InvalidQueryError(f"{record.title!r} has no transcript in the index (only "
                                "notes), so there is nothing to read around a time; call "
                                "plaud_get without at for its notes and snippets.")
    end_ms = max(record.duration_ms, spoken[-1].start_ms)
    if at_ms > end_ms:
        raise InvalidQueryError(f"at {format_clock(at_ms)} is past the end of "
                                f"{record.title!r} ({format_clock(end_ms)} long)")
    lo, hi = max(0, at_ms - window_ms), min(end_ms, at_ms + window_ms)
    first = max([i for i, s in enumerate(spoken) if s.start_ms <= lo] or [0])
    inside = [s for s in spoken[first:] if s.start_ms <= hi]
    kept, truncated = _cap(inside, at_ms, max_chars)
    return Around(at=format_clock(at_ms), at_ms=at_ms, from_ms=lo, to_ms=hi,
                  utterances=tuple(kept), truncated=truncated, max_chars=max_chars)


def _cap(inside: list[Spoken], at_ms: int, max_chars: int) -> tuple[list[Spoken], bool]:
    """Keep utterances nearest ``at_ms`` while they fit; one that alone passes the cap is
    cut to it (the window is never empty)."""
    order = sorted(range(len(inside)), key=lambda i: abs(inside[i].start_ms - at_ms))
    chosen: set[int] = set()
    used = 0
    for i in order:
        size = len(inside[i].text) + len(inside[i].speaker) + 2
        if used + size > max_chars:
            break
        chosen.add(i)
        used += size
    if not chosen and order:
        s = inside[order[0]]
        return [Spoken(s.start, s.start_ms, s.speaker, s.text[:max_chars - 1] + "…")], True
    return [inside[i] for i in sorted(chosen)], len(chosen) < len(inside)


PAGE_CHARS = 10_000  # of a transcript page: whole utterances, the page under ~12,000 rendered


def spoken_chars(s: Spoken) -> int:
    """What an utterance takes on a page: ``[00:01:02] Speaker: text``."""
    return len(s.text) + len(s.speaker) + len(s.start) + 6


def page_of(spoken: Sequence[Spoken], first: int, max_chars: int = PAGE_CHARS
            ) -> tuple[list[Spoken], int | None]:
    """Whole utterances from ``first`` while they fit in ``max_chars`` (at least one, cut
    to the page when it alone is longer), and where the next page starts (``None``: the
    end)."""
    page: list[Spoken] = []
    used = 0
    for s in spoken[first:]:
        if page and used + spoken_chars(s) > max_chars:
            return page, first + len(page)
        if not page and spoken_chars(s) > max_chars:
            s = Spoken(s.start, s.start_ms, s.speaker, s.text[:max_chars - 100] + "…")
        page.append(s)
        used += spoken_chars(s)
    return page, None


def encode_offset(file_id: str, offset: int) -> str:
    return cursors.encode(offset, file_id)


def decode_offset(cursor: object, file_id: str) -> int:
    """The utterance a transcript cursor opens at; 0 without one."""
    restart = "start at the beginning (a cursor goes with its file_id)"
    parts = cursors.decode(cursor, 2, "plaud_transcript", restart)
    if parts is None:
        return 0
    offset, of = parts
    with cursors.checked(cursor, "plaud_transcript", restart):
        if of != file_id:
            raise ValueError(of)
        return cursors.count(offset)
