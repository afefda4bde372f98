"""The text rendering of each answer (search results, a recording, a listing), for the
terminal and MCP text content. Pure.

Every rendering passes through ``printable``: titles and transcripts are other people's
text, and an ESC or BEL in one must not reach a terminal as a control sequence.
"""

from __future__ import annotations

import re

from ..clock import format_clock
from ..results import Around, IndexInfo, Moment, RecordingInfo, RecordingList, SearchResult, Today

_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """``text`` without control characters (newlines and tabs stay)."""
    return _CONTROLS.sub("", text)


# what a moment is, when it is not something said: a reader must not take a note for a quote
_KIND_LABELS = {"highlight": " (highlight)", "mark": " (your mark)"}


def _moment_line(moment: Moment, indent: str) -> str:
    where = moment.start or moment.source
    who = f" {moment.speaker}" if moment.speaker else ""
    kind = _KIND_LABELS.get(moment.source, "")
    return f'{indent}@{where}{who}{kind}: "{moment.snippet}"'


# In a terminal there is no Plaud MCP to call: point at what a person can run instead.
TERMINAL_HINT = ("More about one recording: plaud-index-mcp get FILE_ID [--query TOPIC | --at "
                 "hh:mm:ss]; all of it: plaud-index-mcp transcript FILE_ID / notes FILE_ID.")


def when(iso: str) -> str:
    """``2026-07-08 21:30 -04:00`` from a local ISO time with offset."""
    return f"{iso[:10]} {iso[11:16]} {iso[-6:]}" if len(iso) >= 25 else iso[:16]


def today_lines(today: Today | None) -> list[str]:
    if today is None:
        return []
    return [f"Today is {today.weekday} {today.date} ({today.timezone}, UTC{today.utc_offset});"
            " times below are local."]


def render_search(result: SearchResult, terminal: bool = False) -> str:
    index = result.index
    lines = partial_lines(index)  # first: a reader must not miss it
    lines += [f'{len(result.results)} recording(s) for "{result.query}" ({index_line(index)})']
    lines += today_lines(result.today)
    for rank, hit in enumerate(result.results, 1):
        where = f"  file {hit.path}" if hit.path else ""
        lines.append(f"\n{rank}. {hit.title}  [{when(hit.created_at)}]  "
                     f"score {hit.score:.3f}  file_id {hit.file_id}{where}"
                     f"{in_folders(hit.folders)}")
        lines.extend(_moment_line(m, "   ") for m in hit.moments)
    if result.note:
        lines.append(result.note)
    if result.results:
        lines.append(f"\n{TERMINAL_HINT if terminal else result.results[0].fetch}")
        files = [h for h in result.results if h.path]
        if files and not terminal:
            lines.append("Folder files: " + "; ".join(f"{h.title}: {h.path}" for h in files))
    return printable("\n".join(lines))


def _who(speakers: tuple[str, ...], more: int) -> str:
    return (", ".join(speakers) or "-") + (f" and {more} more" if more else "")


def in_folders(folders: tuple[str, ...]) -> str:
    return f"  folder {', '.join(folders)}" if folders else ""


def _marks(marks: tuple[Moment, ...], indent: str, most: int = 5) -> list[str]:
    """The moments the user marked, on one line: ``your marks: @00:12:30 budget; …``."""
    if not marks:
        return []
    shown = "; ".join(f"@{m.start} {m.snippet}".rstrip() for m in marks[:most])
    more = f" (+{len(marks) - most} more)" if len(marks) > most else ""
    return [f"{indent}your marks: {shown}{more}"]


def index_line(index: IndexInfo) -> str:
    """``index: 12 recordings, last sync 2026-07-08T21:30:00-04:00`` (before a sync has
    finished: ``last commit …``, as ``status`` says no sync is on record yet)."""
    count = f"{index.recordings} recording" + ("" if index.recordings == 1 else "s")
    if index.last_sync:
        return f"index: {count}, last sync {index.last_sync}"
    if index.last_commit:
        return f"index: {count}, no sync finished yet, last commit {index.last_commit}"
    return f"index: {count}, no sync finished yet"


def partial_lines(index: IndexInfo) -> list[str]:
    """The first line of an answer from an index still being built; an index nobody is
    signed in to fill says so in the answer's note, with its link, instead."""
    if index.complete or index.sign_in_url:
        return []
    return [f"PARTIAL INDEX: the first sync is not finished ({index.progress or 'not running'}"
            "); recordings not yet indexed cannot appear. Ask again later for a complete "
            "answer."]


def render_recording(info: RecordingInfo, terminal: bool = False) -> str:
    if info.note and not info.title:  # nothing to show yet: what to do instead
        return printable(info.note)
    lines = [f"{info.title}  [{when(info.created_at)}]  file_id {info.file_id}"
             f"{in_folders(info.folders)}",
             f"duration {info.duration}; speakers: {_who(info.speakers, info.more_speakers)}; "
             f"notes: {', '.join(info.notes) or '-'}"]
    lines += _marks(info.marks, "", most=20)
    lines.extend(_moment_line(m, "  ") for m in info.snippets)
    if info.around is not None:
        lines.extend(_around(info.around))
    lines.append(f"The whole transcript: plaud-index-mcp transcript {info.file_id}; the notes: "
                 f"plaud-index-mcp notes {info.file_id}" if terminal else info.fetch)
    return printable("\n".join(lines))


def _around(window: Around) -> list[str]:
    lines = [f"Around {window.at} ({format_clock(window.from_ms)}–{format_clock(window.to_ms)}):"]
    lines += [f"  [{s.start}] {s.speaker or '?'}: {s.text}" for s in window.utterances]
    if window.truncated:
        lines.append(f"  (cut to {window.max_chars} characters nearest {window.at}; ask with a "
                     "smaller window or another at for the rest)")
    return lines


def render_list(listing: RecordingList, terminal: bool = False) -> str:
    index = listing.index
    lines = partial_lines(index)
    lines += [f"{len(listing.recordings)} of {listing.matched} recording(s), newest first "
              f"({index_line(index)})"]
    lines += today_lines(listing.today)
    for rec in listing.recordings:
        where = f"  file {rec.path}" if rec.path else ""
        lines.append(f"\n- {rec.title}  [{when(rec.created_at)}]  {rec.duration}  "
                     f"file_id {rec.file_id}{where}{in_folders(rec.folders)}")
        lines.append(f"  speakers: {_who(rec.speakers, rec.more_speakers)}; notes: "
                     f"{', '.join(rec.notes) or '-'}")
        lines += _marks(rec.marks, "  ")
        if rec.summary:
            lines.append(f"  summary: {rec.summary}")
    if listing.note:
        lines.append(listing.note)
    lines += more_lines(listing.next_cursor, terminal, "plaud_list")
    return printable("\n".join(lines))


def more_lines(cursor: str | None, terminal: bool, tool: str) -> list[str]:
    """How to get the next page: the CLI's flag, or the tool's argument."""
    if not cursor:
        return []
    more = f"--cursor {cursor}" if terminal else f"call {tool} again with cursor={cursor}"
    return [f"\nMore: {more} for the next page."]
