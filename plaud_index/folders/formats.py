"""Meeting files → recordings: .txt, .md, .srt, .vtt and .docx. Bytes in, data out (no file
reads here; a .docx is unzipped in memory).

What a format carries is used: SRT/VTT cues give utterances with times (a speaker
from ``Name: text`` or ``<v Name>``); ``[00:01:05] Name: text`` lines and the
``Speaker 1 00:01:05`` layout (a name and a time above the words; Plaud's docs describe
it, no real export has been published, so it is one layout among several) give times and
speakers; plain ``Name: text`` lines give speakers (no times: every moment is at
00:00:00). In a transcript, a line nobody is named for stays as an utterance without a
speaker, at the time of the line before it (an export-like TXT shows one: API.md §8).
A text where fewer than half the lines fit these layouts is notes, sectioned by Markdown
headings. Markdown front matter may give
``title`` and ``date``; a .docx its core ``created`` date; otherwise the caller's
fallback (the file's mtime).
"""

from __future__ import annotations

import io
import re
import zipfile
from dataclasses import dataclass
from datetime import datetime, timezone
from xml.etree import ElementTree

from ..errors import MalformedRecordingError
from ..models import NoteSection, Utterance

FORMATS = (".txt", ".md", ".markdown", ".srt", ".vtt", ".docx")
_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_CUE_TIME = re.compile(r"(?:(\d+):)?(\d{1,2}):(\d{2})[.,](\d{1,3})")
_ARROW = re.compile(rf"^\s*({_CUE_TIME.pattern})\s*-->\s*({_CUE_TIME.pattern})")
_CLOCK = r"(?:(?P<h>\d{1,2}):)?(?P<m>\d{1,2}):(?P<s>\d{2})"
# Plaud's TXT export: "Speaker 1 00:01:05" on a line of its own, the words below it
_PLAUD_HEAD = re.compile(rf"^(?P<who>\S.{{0,60}}?)\s+{_CLOCK}\s*$")
_STAMPED = re.compile(rf"^\[{_CLOCK}\]\s*(?:(?P<who>[^:\[\]]{{1,60}}):)?\s*(?P<text>.+)$")
MAX_DOCX_XML = 50_000_000  # decompressed document.xml: a zip bomb stops here
_SPOKEN = re.compile(r"^(?P<who>[^\s:][^:]{0,40}):\s+(?P<text>\S.*)$")
_VOICE = re.compile(r"^<v(?:\.[^ >]*)?\s+([^>]+)>(.*?)(?:</v>)?$")
_TAGS = re.compile(r"</?[a-zA-Z][^>]*>")


@dataclass(frozen=True)
class Parsed:
    title: str | None
    created_at: datetime | None
    utterances: tuple[Utterance, ...]
    notes: tuple[NoteSection, ...]


def parse_file(name: str, data: bytes) -> Parsed:
    suffix = name[name.rfind("."):].lower() if "." in name else ""
    if suffix == ".docx":
        return _docx(data)
    text = decode(data)
    if suffix == ".srt" or suffix == ".vtt":
        return Parsed(None, None, tuple(cues(text)), ())
    title, created, body = front_matter(text) if suffix in (".md", ".markdown") else \
        (None, None, text)
    return _text(body, title, created)


# NUL or undecodable characters beyond this share (and more than a stray few) make a file
# binary, not text
BINARY_SHARE = 0.01
STRAY = 16


def decode(data: bytes) -> str:
    """UTF-8 (a BOM allowed) or UTF-16 with its BOM. A few bytes that are not UTF-8 become
    U+FFFD; a file where more than ``BINARY_SHARE`` of the characters (and over ``STRAY``)
    are undecodable or NUL is binary (an image, a database, a file of zeros) and refused
    with that reason."""
    codec = "utf-16" if data.startswith((b"\xff\xfe", b"\xfe\xff")) else "utf-8-sig"
    text = data.decode(codec, errors="replace")
    if not text:
        return text
    nul, bad = text.count("\x00"), text.count("\ufffd") - data.decode(
        codec, errors="ignore").count("\ufffd")
    if nul + bad > max(STRAY, BINARY_SHARE * len(text)):
        raise MalformedRecordingError(
            f"a binary file, not text ({nul} NUL and {bad} undecodable of {len(text)} "
            "characters)")
    return text


def _ms(match: re.Match[str], offset: int = 0) -> int:
    hours, minutes, seconds, frac = (match.group(offset + i) for i in range(1, 5))
    return ((int(hours or 0) * 60 + int(minutes)) * 60 + int(seconds)) * 1000 + \
        int((frac or "0").ljust(3, "0")[:3])


def cues(text: str) -> list[Utterance]:
    """SRT and WebVTT cues (numbering, NOTE/STYLE blocks and cue settings ignored)."""
    out: list[Utterance] = []
    for block in re.split(r"\n\s*\n", text.replace("\r\n", "\n").replace("\r", "\n")):
        lines = [line for line in block.split("\n") if line.strip()]
        at = next((i for i, line in enumerate(lines) if _ARROW.match(line)), None)
        if at is None:
            continue
        arrow = _ARROW.match(lines[at])
        assert arrow is not None
        start, end = _ms(arrow, 1), _ms(arrow, 6)
        speaker, words = "", list[str]()
        for line in lines[at + 1:]:
            voice = _VOICE.match(line.strip())
            if voice:
                speaker, line = voice.group(1).strip(), voice.group(2)
            line = _TAGS.sub("", line).strip()
            spoken = _SPOKEN.match(line) if not words else None
            if spoken and not speaker:
                speaker, line = spoken.group("who").strip(), spoken.group("text")
            words.append(line)
        text_of_cue = " ".join(" ".join(words).split())
        if text_of_cue:
            out.append(Utterance(text_of_cue, start, max(end, start), speaker))
    return out


def front_matter(text: str) -> tuple[str | None, datetime | None, str]:
    """``---`` key: value ``---`` at the top of a Markdown file (title and date only)."""
    match = re.match(r"\A---\s*\n(.*?)\n---\s*\n", text, re.DOTALL)
    if not match:
        return None, None, text
    values = {}
    for line in match.group(1).split("\n"):
        key, _, value = line.partition(":")
        values[key.strip().lower()] = value.strip().strip("'\"")
    return values.get("title") or None, parse_date(values.get("date", "")), text[match.end():]


def parse_date(value: str) -> datetime | None:
    try:
        parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


def _clock_ms(match: re.Match[str]) -> int:
    hours, minutes, seconds = (int(match.group(k) or 0) for k in ("h", "m", "s"))
    return ((hours * 60 + minutes) * 60 + seconds) * 1000


def transcript_lines(lines: list[str]) -> list[Utterance]:
    """Utterances from the text layouts above; ``[]`` when fewer than half the lines fit
    (then the text is notes)."""
    out: list[Utterance] = []
    fitting = opened = 0
    head: tuple[str, int] | None = None
    for raw in lines + [""]:
        line = raw.strip()
        if not line:
            head = None
            continue
        if (plaud := _PLAUD_HEAD.match(line)) and not _SPOKEN.match(line):
            head, fitting, opened = (plaud.group("who").strip(), _clock_ms(plaud)), \
                fitting + 1, len(out)
        elif head is not None:
            if len(out) > opened:  # a further line of the same utterance
                out[-1] = Utterance(f"{out[-1].text} {line}", head[1], head[1], head[0])
            else:
                out.append(Utterance(line, head[1], head[1], head[0]))
            fitting += 1
        elif stamped := _STAMPED.match(line):
            at = _clock_ms(stamped)
            out.append(Utterance(stamped.group("text").strip(), at, at,
                                 (stamped.group("who") or "").strip()))
            fitting += 1
        elif spoken := _SPOKEN.match(line):
            out.append(Utterance(spoken.group("text").strip(), 0, 0, spoken.group("who")))
            fitting += 1
        else:  # words nobody is named for ("Background voice in the room."): still speech
            at = out[-1].start_ms if out else 0
            out.append(Utterance(line, at, at, ""))
    content = sum(1 for line in lines if line.strip())
    return _with_ends(out) if content and fitting * 2 >= content else []


def _with_ends(spoken: list[Utterance]) -> list[Utterance]:
    """Each utterance ends where the next one starts (the last one where it starts)."""
    return [Utterance(u.text, u.start_ms, max(u.start_ms, nxt.start_ms), u.speaker)
            for u, nxt in zip(spoken, spoken[1:] + spoken[-1:], strict=True)]


def note_sections(text: str, title: str) -> list[NoteSection]:
    sections: list[NoteSection] = []
    heading, body = "", list[str]()
    for line in text.split("\n"):
        match = re.match(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$", line)
        if match:
            if "".join(body).strip():
                sections.append(NoteSection(title, heading, "\n".join(body).strip()))
            heading, body = match.group(1), []
        else:
            body.append(line)
    if "".join(body).strip():
        sections.append(NoteSection(title, heading, "\n".join(body).strip()))
    return sections


def _text(body: str, title: str | None, created: datetime | None) -> Parsed:
    body = body.replace("\r\n", "\n").replace("\r", "\n")
    spoken = transcript_lines(body.split("\n"))
    if spoken:
        return Parsed(title, created, tuple(spoken), ())
    return Parsed(title, created, (), tuple(note_sections(body, title or "Notes")))


def _docx(data: bytes) -> Parsed:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            if archive.getinfo("word/document.xml").file_size > MAX_DOCX_XML:
                raise MalformedRecordingError("the .docx text is larger than 50 MB unpacked")
            document = ElementTree.fromstring(archive.read("word/document.xml"))
            core = archive.read("docProps/core.xml") if "docProps/core.xml" in \
                archive.namelist() else b""
    except (zipfile.BadZipFile, KeyError, ElementTree.ParseError) as exc:
        raise MalformedRecordingError(f"not a readable .docx ({exc})") from None
    paragraphs = ["".join(t.text or "" for t in p.iter(f"{_W}t"))
                  for p in document.iter(f"{_W}p")]
    created = None
    if core:
        match = re.search(rb"<dcterms:created[^>]*>([^<]+)</dcterms:created>", core)
        created = parse_date(match.group(1).decode()) if match else None
    return _text("\n".join(paragraphs), None, created)
