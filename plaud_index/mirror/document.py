"""A recording as one Markdown file: YAML front matter, the AI notes, the transcript. Pure.

What reads best in Obsidian's reading view (and any CommonMark renderer):
- the front matter holds what tools filter on (id, title, local time, duration,
  speakers); every value is a double-quoted YAML string with everything outside
  YAML's printable set escaped, so no title (``---``, ``: ``, quotes, newlines)
  can end the block or change its type;
- each AI note under its own ``##`` heading, its sections as Plaud wrote them
  with their headings nested below it;
- the transcript as one paragraph per speaker turn, ``**[00:01:30] Dana:** …``,
  a new paragraph at most every ``TURN_MS`` so a long monologue stays navigable.
  A heading per turn would put hundreds of entries in the outline of a two-hour
  meeting; a paragraph per utterance would break sentences mid-thought.

Text that is not ours is made inert where it could change the document's shape:
Markdown and Obsidian syntax in titles, speakers and transcript lines is escaped;
note text is kept as written, except that a line cannot open an HTML block or define
a link label, and an unclosed code fence or Obsidian comment is closed at its
section's end (either would swallow the rest of the file).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from itertools import groupby

from ..clock import UserZone, format_clock
from ..models import NoteSection, Recording, Utterance

TURN_MS = 120_000  # a speaker's paragraph is split after this long

# Inline syntax of CommonMark, GFM and Obsidian (tags, wikilinks, comments, math,
# highlights, block ids): backslash-escaped in text that is not Markdown.
_INLINE = re.compile(r"([\\`*_\[\]<>|~$#^%&=])")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_HTML_START = re.compile(r"^( {0,3})<")  # an HTML block may run to the end of the file
# a link label's definition (in a list or a quote too) would make the transcript's
# "[00:01:30]" a link
_LABEL = re.compile(r"\[(?=[^\]]*\]:)")


def yaml_string(value: str) -> str:
    """A double-quoted YAML scalar that any YAML 1.1/1.2 parser reads back as ``value``."""
    out = ['"']
    for char in value:
        code = ord(char)
        if char in '"\\':
            out.append("\\" + char)
        elif char == "\t" or 0x20 <= code <= 0x7E or (
                0xA0 <= code <= 0xFFFD and not 0xD800 <= code <= 0xDFFF
                and code not in (0x2028, 0x2029, 0xFEFF)) or code >= 0x10000:
            out.append(char)
        elif code <= 0xFF:
            out.append(f"\\x{code:02x}")
        else:
            out.append(f"\\u{code:04x}")
    return "".join(out) + '"'


def inline(text: str) -> str:
    """Text shown as is: one line, Markdown syntax escaped."""
    return _INLINE.sub(r"\\\1", " ".join(text.split()))


def front_matter(recording: Recording, zone: UserZone) -> list[str]:
    created = zone.local(recording.created_at).isoformat(timespec="seconds")
    lines = ["---", f"plaud_file_id: {yaml_string(recording.file_id)}",
             f"title: {yaml_string(recording.title)}", f"created: {yaml_string(created)}",
             f"duration: {yaml_string(format_clock(recording.duration_ms))}"]
    speakers = recording.speakers
    lines.append("speakers:" if speakers else "speakers: []")
    lines += [f"  - {yaml_string(name)}" for name in speakers]
    lines += ["source: plaud", "---"]
    return lines


def note_body(text: str) -> list[str]:
    """A note section's Markdown, kept as written but unable to swallow what follows."""
    lines, fence = [], ""
    for line in text.split("\n"):  # only newlines end lines, as in CommonMark
        match = _FENCE.match(line)
        if match and not fence:
            fence = match.group(1)
        elif match and match.group(1).startswith(fence) and not line.strip(" `~"):
            fence = ""
        lines.append(line if fence else _LABEL.sub(r"\\[", _HTML_START.sub(r"\1\\<", line)))
    if fence:
        lines.append(fence)
    if sum(line.count("%%") for line in lines) % 2:
        lines.append("%%")
    return lines


def notes(sections: Sequence[NoteSection]) -> list[str]:
    """Each note under a ``##`` heading; its sections' heading paths as nested headings."""
    lines: list[str] = []
    for title, group in groupby(sections, key=lambda s: s.note_title):
        lines += [f"## {inline(title)}", ""]
        shown: list[str] = []
        for section in group:
            path = [p for p in section.heading.split(" > ") if p] if section.heading else []
            if path and path[0] == title:  # "# Summary" atop the note called Summary
                path = path[1:]
            for depth in range(_shared_depth(shown, path), len(path)):
                lines += [f"{'#' * min(3 + depth, 6)} {inline(path[depth])}", ""]
            shown = path
            lines += [*note_body(section.text), ""]
    return lines


def _shared_depth(shown: Sequence[str], path: Sequence[str]) -> int:
    """How many leading headings of ``path`` are already shown."""
    depth = 0
    while depth < min(len(shown), len(path)) and shown[depth] == path[depth]:
        depth += 1
    return depth


def turns(utterances: Sequence[Utterance]) -> Iterator[tuple[int, str, str]]:
    """(start, speaker, text) per paragraph: a speaker's consecutive words, split after
    ``TURN_MS``."""
    start, speaker = 0, ""
    words: list[str] = []
    for utterance in utterances:
        if words and (utterance.speaker != speaker or
                      utterance.start_ms - start >= TURN_MS):
            yield start, speaker, " ".join(words)
            words = []
        if not words:
            start, speaker = utterance.start_ms, utterance.speaker
        words.append(utterance.text)
    if words:
        yield start, speaker, " ".join(words)


def transcript(utterances: Sequence[Utterance]) -> list[str]:
    lines = ["## Transcript", ""]
    for start, speaker, text in turns(utterances):
        who = f" {inline(speaker)}:" if speaker else ""
        lines += [f"**[{format_clock(start)}]{who}** {inline(text)}", ""]
    return lines


def render_document(recording: Recording, zone: UserZone) -> str:
    """The whole file. The same recording always gives the same text."""
    lines = [*front_matter(recording, zone), "", f"# {inline(recording.title) or 'Untitled'}",
             ""]
    if recording.notes:
        lines += notes(recording.notes)
    if recording.utterances:
        lines += transcript(recording.utterances)
    if not recording.has_content:
        lines += ["*Plaud has no transcript or note for this recording yet.*", ""]
    return "\n".join(lines).rstrip("\n") + "\n"
