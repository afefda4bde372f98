"""The mirror's documents and names under hostile input: a YAML parser reads the front
matter back exactly, a CommonMark renderer sees the document's own shape whatever the
recording says, and no title makes a name that leaves the folder."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from markdown_it.token import Token

from plaud_index.clock import UTC, UserZone
from plaud_index.mirror.document import TURN_MS, render_document, turns, yaml_string
from plaud_index.mirror.names import base_stem, pick_name, safe_title
from plaud_index.models import NoteSection, Recording, Utterance
from plaud_index.plaud.documents import split_markdown_sections

HOSTILE = ["---", ": ", "key: value # comment", '"quoted" and \\ backslash', "- item",
           "[link](http://evil.example)", "#tag and [[wikilink]]", "%%hidden", "..",
           "../../etc/passwd", "CON", "nul.txt", ".hidden", "a/b\\c:d*e?f|g<h>", "x" * 400,
           "\u202eevil\u202c", "<script>alert(1)</script>", "```", "*emphasis* _u_ `code`",
           "null", "true", "1e3", "~", "@at", "!important", "&amp; &copy;", "{a: 1}", "|",
           ">", "line\nbreak", "tab\there", "\u2028para\u2029sep", "\x85nel", "\ufeffbom",
           "==mark== $math$ ^block", "会议 🎉 שלום", "  spaces  ", "", "\\", "&#x3C;"]
HOSTILE_NOTES = ["```python\nx = 1", "<!-- never closed", "<script>\nalert(1)",
                 "%% opened", "[00:00:00]: http://evil.example", "- [00:00:03]: http://e.x",
                 "> <!--\n> quoted", "<div>\n\nstill html?", "~~~\nfenced", "| a |\n|---|"]
ZONE = UserZone("Europe/Berlin", timezone(timedelta(hours=2)))
MD = MarkdownIt("commonmark")


def recording(title: str, speakers: list[str], texts: list[str], notes: list[str],
              file_id: str = "f1") -> Recording:
    utterances = tuple(Utterance(text, i * 7000, i * 7000 + 5000, speakers[i % len(speakers)])
                       for i, text in enumerate(texts)) if speakers else ()
    sections = tuple(NoteSection(f"Note {n}", heading, text) for n, markdown in enumerate(notes)
                     for heading, text in split_markdown_sections(markdown))
    return Recording(file_id, title, datetime(2026, 7, 8, 12, 30, tzinfo=timezone.utc), None,
                     5_025_000, utterances, sections)


def read_back(document: str) -> tuple[dict[str, Any], list[Token]]:
    """The front matter as YAML, the rest as CommonMark tokens (as Obsidian splits it)."""
    assert document.startswith("---\n")
    end = document.index("\n---\n", 4)
    meta = yaml.safe_load(document[4:end])
    assert isinstance(meta, dict)
    return meta, MD.parse(document[end + 5:])


def plain(inline: Token) -> str:
    """What a reader sees of an inline token: its text, markup gone."""
    return "".join(c.content for c in inline.children or [] if c.type in ("text", "code_inline"))


def headings(tokens: list[Token], tag: str) -> list[str]:
    return [plain(tokens[i + 1]) for i, t in enumerate(tokens)
            if t.type == "heading_open" and t.tag == tag]


def transcript_paragraphs(tokens: list[Token]) -> list[str]:
    """Each paragraph after the document's last ``## Transcript``: what a reader sees."""
    start = max(i for i, t in enumerate(tokens) if t.type == "heading_open" and t.tag == "h2"
                and plain(tokens[i + 1]) == "Transcript")
    return [plain(tokens[i + 1]) for i in range(start + 3, len(tokens))
            if tokens[i].type == "paragraph_open"]


def check(rec: Recording) -> None:
    document = render_document(rec, ZONE)
    meta, tokens = read_back(document)
    assert meta == {"plaud_file_id": rec.file_id, "title": rec.title,
                    "created": "2026-07-08T14:30:00+02:00", "duration": "01:23:45",
                    "speakers": list(rec.speakers), "source": "plaud"}
    assert tokens[0].type == "heading_open" and tokens[0].tag == "h1"
    assert plain(tokens[1]) == (" ".join(rec.title.split()) or "Untitled")
    first = [rec.notes[0].note_title] if rec.notes else ["Transcript"] if rec.utterances else []
    assert headings(tokens, "h2")[:1] == first
    if not rec.utterances:
        assert "Transcript" not in headings(tokens, "h2")[-1:] or rec.notes
        return
    expected = [f"[{start // 3_600_000:02d}:{start // 60_000 % 60:02d}:{start // 1000 % 60:02d}]"
                + (f" {' '.join(who.split())}:" if who else "") + " " + " ".join(text.split())
                for start, who, text in turns(rec.utterances)]
    assert [" ".join(p.split()) for p in transcript_paragraphs(tokens)] == \
        [" ".join(e.split()) for e in expected]
    html = MD.render(document)
    after = html.split("<h2>Transcript</h2>")[-1]
    assert "<a " not in after and "<script" not in after  # no link or markup made there


@pytest.mark.parametrize("title", HOSTILE)
def test_a_hostile_title_and_transcript_keep_the_documents_shape(title: str) -> None:
    check(recording(title, [title or "Dana", "Ben"], [title or "-", f"before {title} after"],
                    []))


@pytest.mark.parametrize("note", HOSTILE_NOTES)
def test_a_hostile_note_cannot_swallow_the_transcript(note: str) -> None:
    check(recording("Q3 budget", ["Dana"], ["We agreed.", "Next."], [note, "## Later\nok"]))


characters = st.characters(blacklist_categories=("Cc", "Cs"))  # the documents stage drops them
words = st.text(characters, max_size=40)


@settings(max_examples=300, deadline=None)
@given(title=words, speakers=st.lists(words, max_size=3), texts=st.lists(words, max_size=6),
       notes=st.lists(st.text(st.sampled_from(list("ab #*-`~<>[]:!%\n=|")), max_size=60),
                      max_size=3),
       file_id=st.text(characters, min_size=1, max_size=20))
def test_any_recording_reads_back_as_it_was(title: str, speakers: list[str], texts: list[str],
                                            notes: list[str], file_id: str) -> None:
    check(recording(title, [s for s in speakers if s.strip()], texts, notes, file_id))


@given(st.text(max_size=80))
def test_yaml_strings_read_back_exactly(value: str) -> None:
    assert yaml.safe_load(f"v: {yaml_string(value)}") == {"v": value}


def test_a_long_monologue_gets_a_paragraph_and_timestamp_every_two_minutes() -> None:
    talk = tuple(Utterance(f"sentence {i}", i * 10_000, i * 10_000 + 9_000, "Dana")
                 for i in range(60))  # ten minutes of one speaker
    rec = Recording("Talk", "Talk", datetime(2026, 7, 8, tzinfo=timezone.utc), None,
                    600_000, talk)
    starts = [start for start, _, _ in turns(rec.utterances)]
    assert starts == list(range(0, 600_000, TURN_MS))
    assert "**[00:02:00] Dana:** sentence 12 sentence 13" in render_document(rec, UTC)


def test_notes_keep_their_sections_nested_under_the_note() -> None:
    rec = recording("Q3", [], [], ["# Note 0\nintro\n## Decisions\n- ship\n### Owners\n- Dana"])
    document = render_document(rec, UTC)
    assert "## Note 0\n\nintro\n\n### Decisions\n\n- ship\n\n#### Owners\n\n- Dana\n" in \
        document


@pytest.mark.parametrize("title", HOSTILE)
def test_a_hostile_title_makes_a_name_inside_the_folder(title: str, tmp_path: Path) -> None:
    rec = recording(title, [], [], [])
    name = pick_name(base_stem(rec, ZONE), rec.file_id, lambda n: False)
    assert name.startswith("2026-07-08 ") and name.endswith(".md")
    assert "/" not in name and "\\" not in name and not name.startswith(".")
    assert len(name.encode()) <= 200 and name.isprintable()
    assert (tmp_path / name).resolve().parent == tmp_path.resolve()
    (tmp_path / name).write_text("ok")  # the file system takes it


@pytest.mark.parametrize(("title", "expected"), [
    ("Q3 budget: review / plan?", "Q3 budget review plan"), ("..", "Untitled"),
    ("", "Untitled"), ("CON", "CON_"), ("lpt1.txt", "lpt1.txt_"), ("...secret", "secret"),
    ("a #b ^c [d] |e|", "a b c d e"), ("é" * 100, "é" * 75), ("Cafe\u0301", "Café")])
def test_safe_titles(title: str, expected: str) -> None:
    assert safe_title(title) == expected


def test_a_clash_is_told_apart_by_the_file_id_then_a_counter() -> None:
    taken = {"2026-07-08 Standup.md", "2026-07-08 Standup (abc123).md"}
    assert pick_name("2026-07-08 Standup", "abc-123", lambda n: n in taken) == \
        "2026-07-08 Standup (abc123 2).md"
    assert pick_name("2026-07-08 Standup", "x", lambda n: False, "updated") == \
        "2026-07-08 Standup (updated).md"
