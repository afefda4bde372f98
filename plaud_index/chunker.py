"""``Recording`` → ``Chunk``s: transcript windows with times and speakers, note sections.

Transcript windows hold about ``target_chars`` characters, end on an
utterance boundary (or a sentence boundary inside a long utterance) and
repeat about ``overlap_chars`` of the previous window, so a passage that
straddles two windows is still found whole in one of them. Every chunk's
embedded text (title and date prefixed) fits the model's token budget: the
token counter is injected, so this module stays pure and exact.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .models import Chunk, NoteSection, Recording, Utterance

TARGET_CHARS = 800
OVERLAP_CHARS = 120
MAX_TOKENS = 256
MIN_NOTE_CHARS = 200  # smaller note sections are merged with the next one
# How untimed note text is cut into units. 2: one unit a line (1 packed whole paragraphs
# and split long ones on sentences, which merged the items of a long list). A recording
# with such notes hashes with this, so an index of 1 re-chunks (and re-embeds) its notes.
NOTES_RECIPE = 2

TokenCounter = Callable[[str], int]
_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+")
_WORD_PIECE = re.compile(r"\w+|[^\w\s]")


def estimate_tokens(text: str) -> int:
    """A conservative stand-in for a WordPiece count (words + punctuation, +25%)."""
    return len(_WORD_PIECE.findall(text)) * 5 // 4 + 2


@dataclass(frozen=True)
class _Unit:
    """The smallest piece a window is built from: a line of text with its times."""

    text: str
    start_ms: int | None
    end_ms: int | None
    speaker: str


def _split_long(text: str, limit: int) -> list[str]:
    """Sentences of ``text``, packed up to ``limit`` chars; over-long ones split on words,
    and a "word" longer than ``limit`` (a text without spaces) is cut every ``limit``
    characters. Linear in the length of ``text``."""
    pieces: list[str] = []
    for sentence in _SENTENCE_END.split(text):
        current: list[str] = []
        size = 0
        for word in sentence.split():
            for part in (word[i:i + limit] for i in range(0, len(word), limit)):
                if current and size + 1 + len(part) > limit:
                    pieces.append(" ".join(current))
                    current, size = [], 0
                size += len(part) + (1 if current else 0)
                current.append(part)
        if current:
            pieces.append(" ".join(current))
    packed: list[list[str]] = []
    sizes: list[int] = []
    for piece in pieces:
        if packed and sizes[-1] + 1 + len(piece) <= limit:
            packed[-1].append(piece)
            sizes[-1] += 1 + len(piece)
        else:
            packed.append([piece])
            sizes.append(len(piece))
    return [" ".join(group) for group in packed]


def _utterance_units(utterance: Utterance, limit: int) -> list[_Unit]:
    label = f"{utterance.speaker}: " if utterance.speaker else ""
    if len(label) + len(utterance.text) <= limit:
        return [_Unit(label + utterance.text, utterance.start_ms, utterance.end_ms,
                      utterance.speaker)]
    # Interpolate times by character offset so moments inside a long monologue
    # still point near the right second.
    span = utterance.end_ms - utterance.start_ms
    total = max(len(utterance.text), 1)
    units, offset = [], 0
    for piece in _split_long(utterance.text, limit - len(label)):
        # (pieces of text without spaces have no separator: the offset can pass the end)
        start = utterance.start_ms + span * min(offset, total) // total
        offset += len(piece) + 1
        end = utterance.start_ms + span * min(offset, total) // total
        units.append(_Unit(label + piece, start, end, utterance.speaker))
    return units


def _windows(units: Sequence[_Unit], target: int, overlap: int) -> list[list[_Unit]]:
    windows: list[list[_Unit]] = []
    current: list[_Unit] = []
    size = 0
    fresh = 0  # units in ``current`` that no earlier window holds
    for unit in units:
        if current and fresh and size + len(unit.text) > target:
            windows.append(current)
            carried = _carry(current, overlap)
            current, size, fresh = carried, sum(len(u.text) + 1 for u in carried), 0
        current.append(unit)
        size += len(unit.text) + 1
        fresh += 1
    if current and fresh:
        windows.append(current)
    return windows


def _carry(window: list[_Unit], overlap: int) -> list[_Unit]:
    """The tail of ``window`` that the next window repeats: whole utterances up to
    ``overlap`` characters, or the last words of a final utterance longer than that."""
    carried: list[_Unit] = []
    size = 0
    for prev in reversed(window[1:]):
        if size + len(prev.text) > overlap:
            break
        carried.insert(0, prev)
        size += len(prev.text) + 1
    if carried:
        return carried
    last = window[-1]
    label = f"{last.speaker}: " if last.speaker and last.text.startswith(f"{last.speaker}: ") \
        else ""
    words = last.text[len(label):].split()
    tail: list[str] = []
    while words and len(" ".join([words[-1], *tail])) <= overlap - len(label):
        tail.insert(0, words.pop())
    if not tail or not words:  # nothing fits, or the whole unit would repeat
        return []
    start, end = last.start_ms, last.end_ms
    if start is not None and end is not None:
        body = len(last.text) - len(label)
        start += (end - start) * (body - len(" ".join(tail))) // max(body, 1)
    return [_Unit(label + " ".join(tail), start, end, last.speaker)]


class Chunker:
    """Configured once (sizes, token counter), applied to many recordings."""

    def __init__(
        self,
        count_tokens: TokenCounter = estimate_tokens,
        *,
        target_chars: int = TARGET_CHARS,
        overlap_chars: int = OVERLAP_CHARS,
        max_tokens: int = MAX_TOKENS,
    ) -> None:
        self.count_tokens = count_tokens
        self.target_chars = target_chars
        self.overlap_chars = overlap_chars
        self.max_tokens = max_tokens

    def chunk(self, recording: Recording) -> list[Chunk]:
        prefix = self._prefix(recording)
        units = [u for utt in recording.utterances
                 for u in _utterance_units(utt, self.target_chars)]
        windows = _windows(units, self.target_chars, self.overlap_chars)
        chunks = [self._make(recording.file_id, "transcript", prefix, window, "")
                  for window in self._fitting(prefix, windows)]
        for heading, section_units in self._note_groups(recording.notes):
            windows = _windows(section_units, self.target_chars, self.overlap_chars)
            for window in self._fitting(prefix, windows):
                chunks.append(self._make(recording.file_id, "notes", prefix, window, heading))
        return _unique_ids(chunks)

    def _prefix(self, recording: Recording) -> str:
        """Title and date, shortened until they take at most a quarter of the budget, so
        every window keeps room for its own text (a 250-word title once hung the loop)."""
        title = recording.title
        date = recording.created_at.date().isoformat()
        while title and self.count_tokens(f"{title} ({date})\n") > self.max_tokens // 4:
            title = title[: len(title) // 2].rstrip()
        return f"{title} ({date})\n" if title else f"({date})\n"

    def _note_groups(self, notes: Sequence[NoteSection]) -> list[tuple[str, list[_Unit]]]:
        groups: list[tuple[str, list[_Unit]]] = []
        pending: list[_Unit] = []
        pending_heading = ""
        pending_note = None
        for section in notes:
            parts = [section.note_title] + [h for h in section.heading.split(" > ")
                                            if h and h != section.note_title]
            timed = section.at_ms is not None
            # a highlight or mark is one line at its moment under its note's title
            heading = section.note_title if timed else " > ".join(p for p in parts if p)
            if pending and pending_note != section.note_title:
                groups.append((pending_heading, pending))
                pending = []
            if not pending:
                pending_heading, pending_note = heading, section.note_title
                if timed:
                    pending.append(_Unit(heading, None, None, ""))
            if timed:
                pending.extend(self._timed_units(section))
            else:
                self._note_units(section, heading, pending)
            if sum(len(u.text) for u in pending) >= MIN_NOTE_CHARS:
                groups.append((pending_heading, pending))
                pending = []
        if pending:
            groups.append((pending_heading, pending))
        return groups

    def _note_units(self, section: NoteSection, heading: str, into: list[_Unit]) -> None:
        """One unit a line: the heading path, then every line of the body. A note's lines
        are its items (``search.notes.rebuild`` reads each line back as one), so a window
        may neither join two of them nor cut one across a newline: a list longer than a
        window comes back item by item, each with its owner."""
        if heading:
            into.append(_Unit(heading, None, None, ""))
        for line in (raw.strip() for raw in section.text.splitlines()):
            if not line:
                continue
            pieces = [line] if len(line) <= self.target_chars else \
                _split_long(line, self.target_chars)
            into.extend(_Unit(piece, None, None, "") for piece in pieces)

    def _timed_units(self, section: NoteSection) -> list[_Unit]:
        """One line (or a few, when long) at the section's moment: its title, then text."""
        text = " ".join(section.text.split())
        line = f"{section.heading}: {text}" if section.heading else text
        pieces = [line] if len(line) <= self.target_chars else \
            _split_long(line, self.target_chars)
        return [_Unit(piece, section.at_ms, section.at_ms, "") for piece in pieces]

    def _fitting(self, prefix: str, windows: list[list[_Unit]]) -> list[list[_Unit]]:
        """Split any window whose embedded text would pass the model's token budget."""
        out: list[list[_Unit]] = []
        stack = list(reversed(windows))
        while stack:
            window = stack.pop()
            text = prefix + "\n".join(u.text for u in window)
            if self.count_tokens(text) <= self.max_tokens or len(window[0].text) <= 1:
                out.append(window)  # fits (or cannot shrink: the embedder truncates it)
            elif len(window) > 1:
                mid = len(window) // 2
                stack.extend([window[mid:], window[:mid]])
            else:
                stack.extend(reversed(self._halve(window[0])))
        return out

    @staticmethod
    def _halve(unit: _Unit) -> list[list[_Unit]]:
        """Two halves of a unit whose text is over the token budget: on a word boundary,
        or mid-"word" for text without spaces. Both halves are kept, and each is shorter,
        so splitting ends (a one-character unit always fits beside the prefix)."""
        words = unit.text.split()
        if len(words) >= 2:
            mid = len(words) // 2
            parts = [" ".join(words[:mid]), " ".join(words[mid:])]
        else:
            mid = max(len(unit.text) // 2, 1)
            parts = [unit.text[:mid], unit.text[mid:]]
        return [[_Unit(part, unit.start_ms, unit.end_ms, unit.speaker)] for part in parts
                if part]

    @staticmethod
    def _make(file_id: str, source: str, prefix: str, window: list[_Unit],
              heading: str) -> Chunk:
        text = "\n".join(u.text for u in window)
        speakers = tuple(dict.fromkeys(u.speaker for u in window if u.speaker))
        starts = [u.start_ms for u in window if u.start_ms is not None]
        ends = [u.end_ms for u in window if u.end_ms is not None]
        return Chunk(
            chunk_id="",
            file_id=file_id,
            source=source,
            text=text,
            embed_text=prefix + text,
            start_ms=min(starts) if starts else None,
            end_ms=max(ends) if ends else None,
            speakers=speakers,
            heading=heading,
            line_ms=tuple(u.start_ms for u in window),
            line_speakers=tuple(u.speaker for u in window),
        )


def _unique_ids(chunks: list[Chunk]) -> list[Chunk]:
    """Content-hash ids; a repeated identical window gets an ordinal so ids stay unique.
    Ordinals are counted per text, so thousands of identical windows stay linear."""
    seen: set[str] = set()
    ordinals: dict[str, int] = {}
    out: list[Chunk] = []
    for chunk in chunks:
        basis = f"{chunk.file_id}\0{chunk.source}\0{chunk.embed_text}"
        ordinal = ordinals.get(basis, 0)
        while True:
            digest = hashlib.sha256(f"{basis}\0{ordinal}".encode()).hexdigest()[:32]
            ordinal += 1
            if digest not in seen:
                break
        ordinals[basis] = ordinal
        seen.add(digest)
        out.append(Chunk(**{**chunk.__dict__, "chunk_id": digest}))
    return out
