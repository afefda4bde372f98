"""AI notes read back from the index: sections, items, owners, kinds of section. Pure.

Note chunks hold a note's Markdown sections one paragraph (or highlight, or mark) per
unit: a section opens with its heading path on a line of its own (``Summary >
Action items``, always starting with the note's title), and consecutive chunks of a
note repeat a little of each other (the chunker's overlap). So the rebuild drops the
repeated lines, splits at heading lines and turns every line of a section's body into
an item (a bullet, a numbered line, a paragraph). Highlights and marks come back as
items at their moment.

``section`` names a kind of section the way people ask for it ("action items",
"decisions", "risks", "summary", "highlights", "marks"): each is matched against every
part of a section's heading path, in the languages Plaud transcribes; anything else is
matched as words in the heading.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, timezone

from ..clock import UTC, UserZone, format_clock
from ..errors import InvalidQueryError
from ..index.records import ChunkRow, IndexedRecording
from ..models import NOTE_TITLES
from ..results import NoteItem
from . import cursors
from .rank import echo, parse_filters

# What people call each kind of section, in Plaud's template languages. Matched as whole
# words (a phrase inside a heading: "Next steps for Q3"), CJK as a substring.
SECTION_WORDS: dict[str, tuple[str, ...]] = {
    "action items": (
        "action items", "action item", "action points", "actions", "to-dos", "to-do",
        "todos", "todo", "to do", "next steps", "next step", "follow-ups", "follow-up",
        "follow ups", "follow up", "tasks", "assignments",
        "aufgaben", "nächste schritte", "maßnahmen", "massnahmen", "offene punkte",
        "acciones", "tareas", "próximos pasos", "pendientes",
        "actions à mener", "prochaines étapes", "tâches", "suivi",
        "azioni", "prossimi passi", "attività", "compiti",
        "ações", "próximos passos", "tarefas", "pendências",
        "actiepunten", "volgende stappen", "taken",
        "åtgärder", "nästa steg", "uppgifter", "handlingspunkter", "opgaver",
        "действия", "следующие шаги", "задачи",
        "待办事项", "待辦事項", "行动项", "行動項目", "下一步", "后续步骤", "後續步驟", "任务",
        "アクションアイテム", "次のステップ", "やること", "タスク", "宿題",
        "액션 아이템", "다음 단계", "할 일", "후속 조치",
    ),
    "decisions": (
        "decisions", "decision", "key decisions", "decisions made", "agreed", "agreements",
        "entscheidungen", "beschlüsse", "vereinbarungen", "decisiones", "acuerdos",
        "décisions", "decisioni", "decisões", "besluiten", "beslut", "beslutninger",
        "решения", "决定", "决策", "決策", "決定事項", "결정 사항", "결정사항",
    ),
    "risks": (
        "risks", "risk", "concerns", "issues", "blockers", "open questions", "risiken",
        "probleme", "riesgos", "risques", "rischi", "riscos", "risico's", "risico",
        "risker", "risici", "риски", "风险", "風險", "问题", "リスク", "課題", "위험", "리스크",
    ),
    "summary": (
        "summary", "overview", "key points", "takeaways", "zusammenfassung", "überblick",
        "resumen", "résumé", "synthèse", "riepilogo", "sommario", "resumo", "samenvatting",
        "sammanfattning", "resumé", "резюме", "итоги", "摘要", "总结", "總結", "概要", "要約",
        "요약",
    ),
}
KINDS = {"highlights": "highlight", "highlight": "highlight", "marks": "mark",
         "mark": "mark"}
_BULLET = re.compile(r"^\s*(?:[-*+•·]|\d{1,3}[.)]|\[[ xX]\])\s+(?:\[[ xX]\]\s+)?")
_OWNER_KEY = (r"(?:owner|owners|assignee|assigned to|responsible|who|verantwortlich|"
              r"zuständig|responsable|responsabile|eigenaar|ansvarig|负责人|負責人|担当|담당)")
_NAME = r"[^\W\d_][\w.'’-]*(?: [^\W\d_][\w.'’-]*){0,2}"  # one to three words
_OWNER_NAMED = re.compile(rf"(?i)\b{_OWNER_KEY}\s*[:：]\s*@?(?P<who>{_NAME})")
_OWNER_LEAD = re.compile(r"^\**(?P<who>[^\W\d_][\w.'’-]*(?: [^\W\d_][\w.'’-]*){0,2})\**"
                         r"\s*(?:[:：]|\s[–—-]\s)\s*\S")
# a voice Plaud could not name owns an item too ("Speaker 2: send the deck")
_OWNER_LABEL = re.compile(r"(?i)^\**(?P<who>speaker[\s_-]*\d{1,3})\**\s*(?:[:：]|\s[–—-]\s)\s*\S")
_OWNER_TAIL = re.compile(r"\((?:@)?(?P<who>[^\W\d_][\w.'’ -]{0,38})\)\s*\.?$")
_MENTION = re.compile(r"(?<!\w)@(?P<who>[^\W\d_][\w.-]{1,30})")
# Words that open an item like a name would ("Note: …", "Deadline: …") but name nobody.
_NOT_NAMES = {"note", "notes", "action", "actions", "task", "tasks", "decision", "next",
              "summary", "tbd", "todo", "to-do", "follow-up", "update", "status", "risk",
              "issue", "question", "deadline", "due", "goal", "context", "outcome", "result",
              "why", "what", "when", "where", "how", "topic", "agenda", "background", "also",
              "owner", "priority", "timeline", "budget", "scope", "plan", "important"}


@dataclass(frozen=True)
class Section:
    note: str  # the note's (tab's) title
    heading: str  # the heading path, "Summary > Action items"
    kind: str  # "note" | "highlight" | "mark"
    lines: tuple[tuple[str, int | None], ...]  # each body line and its moment (timed notes)


def rebuild(rows: Sequence[ChunkRow]) -> list[Section]:
    """A recording's note sections, in order, from its note chunks in row order."""
    sections: list[Section] = []
    previous: list[str] = []
    group = ""
    for chunk in rows:
        lines = chunk.text.split("\n")
        times = list(chunk.line_ms) if len(chunk.line_ms) == len(lines) else [None] * len(lines)
        if chunk.heading == group:  # the same group: the chunk opens with an overlap
            skip = _overlap(previous, lines)
            lines, times = lines[skip:], times[skip:]
        else:
            previous = []
        group = chunk.heading
        previous += lines
        note = chunk.heading.split(" > ")[0]
        kind = next((k for k, title in NOTE_TITLES.items() if title == note), "note")
        for line, at in zip(lines, times, strict=True):
            if line == note or line.startswith(f"{note} > "):
                sections.append(Section(note, line, kind, ()))
            elif line.strip():
                if not sections or sections[-1].note != note:
                    sections.append(Section(note, chunk.heading, kind, ()))
                last = sections[-1]
                sections[-1] = Section(last.note, last.heading, last.kind,
                                       (*last.lines, (line, at)))
    return [s for s in sections if s.lines]


def _overlap(previous: list[str], lines: list[str]) -> int:
    """How many leading ``lines`` repeat the end of ``previous``: whole lines carried over,
    or the last words of the last one."""
    for k in range(min(len(previous), len(lines)), 0, -1):
        if previous[-k:] == lines[:k]:
            return k
    if previous and lines and lines[0] and previous[-1].endswith(lines[0]) and \
            len(lines[0]) < len(previous[-1]):
        return 1
    return 0


def _norm(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).casefold().replace("’", "'")
    return " ".join(re.sub(r"[^\w'\s-]", " ", text).split())


def matches(section: Section, wanted: str) -> bool:
    """Does ``section`` hold the kind of section ``wanted`` names?"""
    key = _norm(wanted)
    if key in KINDS:
        return section.kind == KINDS[key]
    # a kind by its name or by any of its words ("next steps" asks for action items)
    words = next((words for kind, words in SECTION_WORDS.items()
                  if key in (kind, kind.rstrip("s")) or key in map(_norm, words)), (wanted,))
    parts = [_norm(p) for p in section.heading.split(" > ")]
    return any(_has(part, _norm(word)) for part in parts for word in words)


def _has(heading: str, word: str) -> bool:
    if not word:
        return False
    if any(unicodedata.east_asian_width(c) in "WF" for c in word):
        return word in heading  # no spaces between words in CJK headings
    return re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", heading) is not None


def owner_of(item: str) -> str | None:
    """Who an item names as doing it, where the line says: "Ann: send the deck",
    "**Ann Lee** — book the room", "(Owner: Bo)", "send it (Bo)", "@carla"."""
    for pattern, capitalised in ((_OWNER_NAMED, False), (_OWNER_LABEL, False),
                                 (_OWNER_LEAD, True), (_OWNER_TAIL, True), (_MENTION, False)):
        match = pattern.search(item)
        if match is None:
            continue
        who = match.group("who").strip(" *_.").strip()
        words = who.split()
        # a line's opening words name someone only when capitalised like a name ("Ann Lee:",
        # "李明："; scripts without case pass); after "Owner:" or "@" any spelling does
        if words and words[0].casefold() not in _NOT_NAMES and \
                (not capitalised or all(not w[0].islower() for w in words)):
            return who
    return None


def items_of(sections: Sequence[Section], section: str | None) -> list[NoteItem]:
    """Every line of the sections (those of the kind ``section`` names, if given)."""
    return [item for s in sections if not section or matches(s, section)
            for line, at in s.lines if (item := _item(s, line, at)) is not None]


_DONE = re.compile(r"^\s*(?:[-*+•·]\s+)?\[[xX]\]\s")  # "- [x] …": checked off


def open_actions(sections: Sequence[Section]) -> list[NoteItem]:
    """The action items not checked off ("- [x] …" is done; any other line is open)."""
    return [item for s in sections if matches(s, "action items")
            for line, at in s.lines
            if not _DONE.match(line) and (item := _item(s, line, at)) is not None]


def _item(s: Section, line: str, at: int | None) -> NoteItem | None:
    text = _BULLET.sub("", line).strip()
    if not text:
        return None
    body = text.split(": ", 1)[1] if s.kind == "highlight" and ": " in text else text
    return NoteItem(text=text, heading=s.heading, note=s.note, kind=s.kind,
                    start=format_clock(at) if at is not None else "",
                    start_ms=at, owner=owner_of(body) if s.kind == "note" else None)


MAX_PAGE_CHARS = 10_000  # of item text per page (the rendered page stays under ~12,000)


@dataclass(frozen=True)
class NotesPage:
    recordings: list[tuple[int, list[NoteItem], bool]]  # (recording index, items, more)
    searched: int
    next_at: tuple[int, int] | None  # (recording index, item offset) the next page opens at


def item_chars(item: NoteItem) -> int:
    """About what an item takes on the page: its text, heading and labels."""
    return len(item.text) + len(item.heading) + len(item.owner or "") + 24


def paginate(order: Sequence[int], items_for: Callable[[int], list[NoteItem]],
             start: tuple[int, int] | None, max_chars: int = MAX_PAGE_CHARS) -> NotesPage:
    """Recordings in ``order`` (indexes, newest first) from ``start`` (a recording index
    and an item offset in it), their items while they fit in ``max_chars``; a page holds
    at least one item, and a recording's items are cut where the page ends."""
    begin, offset = 0, 0
    if start is not None:
        begin = order.index(start[0]) if start[0] in order else len(order)
        offset = start[1]
    page: list[tuple[int, list[NoteItem], bool]] = []
    used = searched = 0
    for position in range(begin, len(order)):
        index = order[position]
        items = items_for(index)[offset if position == begin else 0:]
        searched += 1
        taken: list[NoteItem] = []
        for at, item in enumerate(items):
            if (page or taken) and used + item_chars(item) > max_chars:
                skipped = (offset if position == begin else 0) + at
                if taken:
                    page.append((index, taken, True))
                return NotesPage(page, searched, (index, skipped))
            taken.append(item)
            used += item_chars(item)
        if taken:
            page.append((index, taken, False))
    return NotesPage(page, searched, None)


@dataclass(frozen=True)
class NotesRequest:
    file_id: str | None = None
    date_from: date | None = None
    date_to: date | None = None
    section: str | None = None
    folder: str | None = None
    speaker: str | None = None
    start: tuple[str, str, int] | None = None  # (UTC instant, file id, item offset)
    zone: UserZone = UTC  # whose calendar days date_from / date_to are


def make_notes_request(*, file_id: object = None, date_from: object = None,
                       date_to: object = None, section: object = None, folder: object = None,
                       speaker: object = None, cursor: object = None) -> NotesRequest:
    """Validate ``plaud_notes`` arguments as sent; each problem an ``InvalidQueryError``."""
    filters = parse_filters(date_from, date_to, speaker, "any", "any", folder)
    for name, value in (("file_id", file_id), ("section", section)):
        if value is not None and not isinstance(value, str):
            raise InvalidQueryError(f"{name} must be text, got {echo(value)}")
    if file_id is not None and (date_from or date_to):
        raise InvalidQueryError("give file_id (one recording's notes) or date_from/date_to "
                                "(every recording's in a range), not both")
    clean = " ".join(str(section or "").split())[:100] or None
    return NotesRequest(str(file_id).strip() if file_id else None, filters.date_from,
                        filters.date_to, clean, filters.folder, filters.speaker,
                        decode_position(cursor))


def encode_position(record: IndexedRecording, offset: int) -> str:
    """A cursor that opens the next page at ``record``'s item ``offset``."""
    return cursors.encode(offset, record.created.astimezone(timezone.utc).isoformat(),
                          record.file_id)


def decode_position(cursor: object) -> tuple[str, str, int] | None:
    parts = cursors.decode(cursor, 3, "plaud_notes", "start from the newest")
    if parts is None:
        return None
    offset, instant, file_id = parts
    with cursors.checked(cursor, "plaud_notes", "start from the newest"):
        return cursors.instant(instant), file_id, cursors.count(offset)
