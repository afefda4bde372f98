"""The text rendering of what is read whole: a transcript page, AI notes. Pure.

Every line passes through ``render.printable`` like the rest of the answers.
"""

from __future__ import annotations

from .render import index_line, more_lines, partial_lines, printable, today_lines, when
from .results import NoteItem, NotesResult, TranscriptPage

_KINDS = {"highlight": "highlight", "mark": "your mark"}


def render_transcript(page: TranscriptPage, terminal: bool = False) -> str:
    last = page.first + len(page.utterances)
    where = f"  file {page.path}" if page.path else ""
    lines = [f"{page.title}  [{when(page.created_at)}]  {page.duration}  file_id "
             f"{page.file_id}{where}",
             f"Utterances {page.first + 1}–{last} of {page.total}" if page.utterances
             else "No utterances."]
    lines += [f"[{s.start}] {s.speaker or '?'}: {s.text}" for s in page.utterances]
    if page.note:
        lines.append(page.note)
    lines += more_lines(page.next_cursor, terminal, "plaud_transcript")
    return printable("\n".join(lines))


def _item(item: NoteItem) -> str:
    kind = _KINDS.get(item.kind)
    at = f"@{item.start} " if item.start else ""
    label = f"({kind}) " if kind else ""
    owner = f"  [owner: {item.owner}]" if item.owner else ""
    return f"  - {at}{label}{item.text}{owner}"


def render_notes(result: NotesResult, terminal: bool = False) -> str:
    lines = partial_lines(result.index)
    what = f'sections of the kind "{result.section}"' if result.section else "notes"
    lines += [f"AI {what} of {len(result.recordings)} recording(s), newest first "
              f"({index_line(result.index)})"]
    lines += today_lines(result.today)
    for rec in result.recordings:
        where = f"  file {rec.path}" if rec.path else ""
        lines.append(f"\n{rec.title}  [{when(rec.created_at)}]  file_id {rec.file_id}{where}")
        heading = None
        for item in rec.items:
            if item.heading != heading:
                heading = item.heading
                lines.append(f" {heading}:")
            lines.append(_item(item))
        if rec.more:
            lines.append("  (continued on the next page)")
    if result.note:
        lines.append(result.note)
    lines += more_lines(result.next_cursor, terminal, "plaud_notes")
    return printable("\n".join(lines))
