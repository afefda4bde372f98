"""The text rendering of what is read whole (a transcript page, AI notes) and of the
people in the recordings. Pure.

Every line passes through ``answers.printable`` like the rest of the answers.
"""

from __future__ import annotations

from ..results import NoteItem, NotesResult, PeopleList, SpeakerNamed, TranscriptPage
from .answers import (
    in_folders,
    index_line,
    more_lines,
    partial_lines,
    printable,
    today_lines,
    when,
)

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


def render_people(listing: PeopleList, terminal: bool = False) -> str:
    index = listing.index
    lines = partial_lines(index)
    lines += [f"{len(listing.people)} of {listing.matched} people, in the most recordings "
              f"first ({index_line(index)})"]
    lines += today_lines(listing.today)
    for person in listing.people:
        named = " (named on this machine)" if person.locally_named else ""
        only = f"  only in {person.title!r}, file_id {person.file_id}" if person.file_id else ""
        span = when(person.first_met)[:10]
        if person.last_met != person.first_met:
            span += f" to {when(person.last_met)[:10]}"
        spoke = "" if person.spoke_in == person.recordings else \
            f", speaks in {person.spoke_in}"
        lines.append(f"\n- {person.name}{named}: {person.recordings} recording(s){spoke}, "
                     f"{span}{in_folders(person.folders)}{only}")
        for item in person.open_items:
            lines.append(f"  open: {item.text}  ({item.title}, {when(item.created_at)[:10]}, "
                         f"file_id {item.file_id})")
        if person.more_open_items:
            lines.append(f"  and {person.more_open_items} more open item(s): plaud_notes("
                         'section="action items")')
    if listing.note:
        lines.append(listing.note)
    lines += more_lines(listing.next_cursor, terminal, "plaud_people")
    return printable("\n".join(lines))


def render_named(named: SpeakerNamed) -> str:
    return printable(named.note)
