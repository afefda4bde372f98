"""Everyone named in the recordings: speakers and the owners of action items. Pure.

A person is one key of ``browse.person_key`` ("Mr. Garnett Genuis (Sherwood Park, CPC)"
and "Mr. Garnett Genuis" are one), whether they speak in a recording or own an item of
its AI notes. A label Plaud gives a voice it could not name ("Speaker 2") is a different
person in every recording, so it is never merged across recordings: each is listed with
its recording, to be named there (``plaud_name_speaker``). Paged like ``plaud_list``,
by a keyset cursor over the order (most recordings, last met, name).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, timezone

from ..clock import UTC, UserZone, stamps
from ..errors import InvalidQueryError
from ..index.records import IndexedRecording
from ..index.snapshot import Snapshot
from ..results import NoteItem, Owed, Person
from . import cursors
from .browse import person_key
from .rank import check_limit, echo, in_folder, parse_filters

DEFAULT_PEOPLE_LIMIT = 20
MAX_PEOPLE_LIMIT = 50
OPEN_ITEMS = 5  # shown per person; the rest are counted
UNNAMED = re.compile(r"(?i)^(?:speaker|spk|sprecher|intervenant|hablante|orador)[\s_-]*\d+$")


def unnamed(label: str) -> bool:
    """A label for a voice nobody named: one person in one recording only."""
    return UNNAMED.match(label.strip()) is not None


@dataclass(frozen=True)
class PeopleRequest:
    date_from: date | None = None
    date_to: date | None = None
    folder: str | None = None
    name: str | None = None  # only people whose name contains this (any case)
    limit: int = DEFAULT_PEOPLE_LIMIT
    after: tuple[int, str, str] | None = None  # (recordings, last met UTC, key) last shown
    zone: UserZone = UTC


def make_people_request(*, date_from: object = None, date_to: object = None,
                        folder: object = None, name: object = None,
                        limit: object = DEFAULT_PEOPLE_LIMIT,
                        cursor: object = None) -> PeopleRequest:
    """Validate ``plaud_people`` arguments as sent; each problem an ``InvalidQueryError``."""
    filters = parse_filters(date_from, date_to, None, "any", "any", folder)
    if name is not None and not isinstance(name, str):
        raise InvalidQueryError(f"name must be text, got {echo(name)}")
    return PeopleRequest(filters.date_from, filters.date_to, filters.folder,
                         " ".join((name or "").split())[:100] or None,
                         check_limit(limit, MAX_PEOPLE_LIMIT), decode_cursor(cursor))


def decode_cursor(cursor: object) -> tuple[int, str, str] | None:
    parts = cursors.decode(cursor, 3, "plaud_people", "start from the first")
    if parts is None:
        return None
    count, instant, key = parts
    with cursors.checked(cursor, "plaud_people", "start from the first"):
        return cursors.count(count), cursors.instant(instant), key


@dataclass
class _Tally:
    """What is known of one person while the recordings are read."""

    names: dict[str, None] = field(default_factory=dict)  # every form seen, in order
    recordings: dict[int, None] = field(default_factory=dict)
    spoke: set[int] = field(default_factory=set)
    owed: list[tuple[int, NoteItem]] = field(default_factory=list)
    local: bool = False

    def name(self) -> str:
        return min(self.names, key=len)


def _in_range(record: IndexedRecording, request: PeopleRequest) -> bool:
    if request.folder and not in_folder(record.folders, request.folder):
        return False
    day = record.created.astimezone(request.zone.tz).date()
    return not ((request.date_from and day < request.date_from) or
                (request.date_to and day > request.date_to))


def tally(snapshot: Snapshot, request: PeopleRequest,
          open_items: Callable[[int], list[NoteItem]]) -> dict[str, _Tally]:
    """Each person's tally by key; ``open_items(index)`` reads a recording's open action
    items (its note chunks are read only for that)."""
    people: dict[str, _Tally] = {}
    for index, record in enumerate(snapshot.recordings):
        if not _in_range(record, request):
            continue
        local = snapshot.names.of(record.file_id).values()
        for speaker in record.speakers:
            key = _key(speaker, record)
            entry = people.setdefault(key, _Tally())
            entry.names.setdefault(speaker)
            entry.recordings.setdefault(index)
            entry.spoke.add(index)
            entry.local |= speaker in local
        for item in open_items(index) if record.note_titles else ():
            if item.owner:
                entry = people.setdefault(_key(item.owner, record), _Tally())
                entry.names.setdefault(item.owner)
                entry.recordings.setdefault(index)
                entry.owed.append((index, item))
    if request.name:
        wanted = request.name.casefold()
        people = {k: v for k, v in people.items()
                  if any(wanted in n.casefold() for n in v.names)}
    return people


def _key(name: str, record: IndexedRecording) -> str:
    return f"{person_key(name)}\0{record.file_id}" if unnamed(name) else person_key(name)


def people_page(snapshot: Snapshot, request: PeopleRequest,
                open_items: Callable[[int], list[NoteItem]]
                ) -> tuple[list[Person], int, str | None]:
    """One page of people (most recordings first, then the most recently met), how many
    match in all, and the next page's cursor."""
    found = tally(snapshot, request, open_items)
    recs = snapshot.recordings

    def last_utc(t: _Tally) -> str:
        return max(recs[i].created.astimezone(timezone.utc) for i in t.recordings).isoformat()

    order = sorted(((len(t.recordings), last_utc(t), key) for key, t in found.items()),
                   key=lambda o: (-o[0], _desc(o[1]), o[2]))
    start = 0
    if request.after is not None:
        after = (-request.after[0], _desc(request.after[1]), request.after[2])
        start = next((i for i, o in enumerate(order) if (-o[0], _desc(o[1]), o[2]) > after),
                     len(order))
    page = order[start:start + request.limit]
    more = start + len(page) < len(order)
    cursor = cursors.encode(*page[-1]) if page and more else None
    return [_person(found[key], snapshot, request.zone) for *_, key in page], len(order), \
        cursor


def _desc(instant: str) -> tuple[int, ...]:
    """An ISO UTC instant as a key that sorts newest first."""
    return tuple(-ord(c) for c in instant)


def _person(t: _Tally, snapshot: Snapshot, zone: UserZone) -> Person:
    recs = snapshot.recordings
    met = sorted(t.recordings, key=lambda i: recs[i].created)
    owed = sorted(t.owed, key=lambda o: recs[o[0]].created, reverse=True)
    folders = sorted({f for i in t.recordings for f in recs[i].folders})
    one = recs[met[0]] if len(met) == 1 and unnamed(t.name()) else None
    return Person(
        name=t.name(), recordings=len(met), first_met=stamps(zone, recs[met[0]].created_at)[0],
        last_met=stamps(zone, recs[met[-1]].created_at)[0], folders=tuple(folders),
        open_items=tuple(Owed(item.text, recs[i].file_id, recs[i].title,
                              stamps(zone, recs[i].created_at)[0])
                         for i, item in owed[:OPEN_ITEMS]),
        more_open_items=max(0, len(owed) - OPEN_ITEMS), spoke_in=len(t.spoke),
        file_id=one.file_id if one else None, title=one.title if one else None,
        locally_named=t.local)


def known_names(snapshot: Snapshot, prefix: str, limit: int = 100) -> list[str]:
    """Names of speakers that start with ``prefix`` (any case) or have a word that does, the
    most frequent first: what a prompt's person argument completes from. Unnamed labels
    are left out (they name nobody outside their recording)."""
    wanted = prefix.casefold().strip()
    counts: dict[str, int] = {}
    forms: dict[str, str] = {}
    for record in snapshot.recordings:
        for speaker in record.speakers:
            if unnamed(speaker):
                continue
            key = person_key(speaker)
            if wanted and not (speaker.casefold().startswith(wanted) or any(
                    w.startswith(wanted) for w in speaker.casefold().split())):
                continue
            counts[key] = counts.get(key, 0) + 1
            if key not in forms or len(speaker) < len(forms[key]):
                forms[key] = speaker
    ranked = sorted(counts, key=lambda k: (-counts[k], forms[k].casefold()))
    return [forms[k] for k in ranked[:limit]]
