"""The reading commands: ``search``, ``get``, ``list``, ``transcript``, ``notes``,
``people``; and ``name-speaker``, which names a speaker on this machine.

Each asks the index as the MCP server would (``answer``): an empty or partial index has
its first sync started in a process of its own, and the answer comes from what is
committed. Errors are raised; ``cli.main`` turns them into messages and exit codes.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections.abc import Callable
from dataclasses import asdict
from typing import TypeVar

from ..answers import Answers
from ..answers.readiness import NotReadyYet, SyncFailed
from ..config import Config
from ..errors import InvalidQueryError
from ..home import Home
from ..render.answers import render_list, render_recording, render_search
from ..render.pages import render_named, render_notes, render_people, render_transcript
from ..search.browse import make_list_request
from ..search.notes import make_notes_request
from ..search.people import make_people_request
from ..search.rank import make_request
from ..search.transcript import parse_at, parse_window
from ..sync.detached import DetachedSync
from ..sync.keeper import Keeper
from ..sync.progress import SyncProgress
from ..sync.terminal import reporter_for
from .setup import show

CLI = "plaud-index-mcp"
T = TypeVar("T")

# The tools' argument names, as this command line spells them (errors are worded for
# the MCP tools; a terminal user typed flags).
FLAGS = {"date_from": "--from", "date_to": "--to", "source_kind": "--source-kind",
         "limit": "--limit", "speaker": "--speaker", "source": "--source", "mode": "--mode",
         "cursor": "--cursor", "window": "--window", "folder": "--folder", "at_ms": "--at",
         "at": "--at",
         "plaud_search": "plaud-index-mcp search", "plaud_list": "plaud-index-mcp list",
         "plaud_get": "plaud-index-mcp get"}
_FLAG_WORDS = re.compile(r"(?<![\w-])(" + "|".join(sorted(FLAGS, key=len, reverse=True)) +
                         r")(?![\w-])(=?)")


def as_flags(message: str) -> str:
    """``date_from must be YYYY-MM-DD`` → ``--from must be YYYY-MM-DD``."""
    return _FLAG_WORDS.sub(lambda m: FLAGS[m.group(1)] + (" " if m.group(2) else ""), message)


def cmd_search(args: argparse.Namespace, config: Config) -> int:
    request = make_request(args.query, date_from=args.date_from, date_to=args.date_to,
                           limit=args.limit, speaker=args.speaker, source=args.source,
                           mode=args.mode, source_kind=args.source_kind, folder=args.folder)
    result = answer(config, lambda answers: answers.search.search(request))
    show(args.json, asdict(result), lambda: render_search(result, terminal=True))
    return 0


def cmd_get(args: argparse.Namespace, config: Config) -> int:
    at_ms = parse_at(args.at) if args.at is not None else None
    window = parse_window(args.window)
    info = answer(config, lambda answers: answers.search.get(args.file_id, args.query, at_ms,
                                                              window))
    show(args.json, asdict(info), lambda: render_recording(info, terminal=True))
    return 0


def cmd_list(args: argparse.Namespace, config: Config) -> int:
    request = make_list_request(date_from=args.date_from, date_to=args.date_to,
                                limit=args.limit, speaker=args.speaker, source=args.source,
                                cursor=args.cursor, source_kind=args.source_kind,
                                folder=args.folder)
    listing = answer(config, lambda answers: answers.browse.list(request))
    show(args.json, asdict(listing), lambda: render_list(listing, terminal=True))
    return 0


def answer(config: Config, ask: Callable[[Answers], T]) -> T:
    """``ask`` the index as the server would: an empty or partial index has its first sync
    started in the background (``DetachedSync``); an empty one is waited for, its progress
    shown, until the first commit (seconds), then answered from what is committed."""
    sync = DetachedSync(started_by="cli")
    answers = Answers.of(config, keeper=Keeper(config, sync))
    try:
        result = ask(answers)
    except NotReadyYet:
        if sync.process is None and not sync.running(config):
            raise
        _wait_for_first_commit(answers, sync)  # (at once when the child already ended)
        try:
            result = ask(answers)
        except NotReadyYet:
            if why := sync.failure(config):  # e.g. a full disk: no state could record it
                raise NotReadyYet(SyncFailed(why)) from None
            raise
    if sync.process is not None:
        print(f"The first sync goes on in the background (pid {sync.process.pid}): "
              f"`{CLI} status` shows how far it is; its log is "
              f"{Home(config.home).sync_log}", file=sys.stderr)
    return result


def _wait_for_first_commit(answers: Answers, sync: DetachedSync) -> None:
    """A Ctrl-C stops the waiting, not the sync (it runs in a session of its own)."""
    progress = reporter_for(sys.stderr)
    try:
        while sync.running(answers.config):
            snapshot = answers.index.snapshot()
            if snapshot is not None and snapshot.recordings:
                break
            if now := SyncProgress.from_state(answers.index.state.read().progress):
                progress(now)
            time.sleep(0.5)  # a poll of the sync's own record, not a race with it
    finally:
        progress.finish(then="answering from what is committed")


def cmd_transcript(args: argparse.Namespace, config: Config) -> int:
    page = answer(config, lambda answers: answers.pages.transcript(args.file_id,
                                                                     args.cursor))
    show(args.json, asdict(page), lambda: render_transcript(page, terminal=True))
    return 0


def cmd_notes(args: argparse.Namespace, config: Config) -> int:
    request = make_notes_request(file_id=args.file_id, date_from=args.date_from,
                                 date_to=args.date_to, section=args.section,
                                 folder=args.folder, speaker=args.speaker, cursor=args.cursor)
    result = answer(config, lambda answers: answers.pages.notes(request))
    show(args.json, asdict(result), lambda: render_notes(result, terminal=True))
    return 0


def cmd_people(args: argparse.Namespace, config: Config) -> int:
    request = make_people_request(date_from=args.date_from, date_to=args.date_to,
                                  folder=args.folder, name=args.name, limit=args.limit,
                                  cursor=args.cursor)
    result = answer(config, lambda answers: answers.people.list(request))
    show(args.json, asdict(result), lambda: render_people(result, terminal=True))
    return 0


def cmd_name_speaker(args: argparse.Namespace, config: Config) -> int:
    if args.undo == bool(args.name):
        raise InvalidQueryError("give the name, or --undo to remove the local name")
    named = Answers.of(config, keeper=Keeper(config)).naming.name(args.file_id, args.label,
                                            None if args.undo else args.name)
    show(args.json, asdict(named), lambda: render_named(named))
    return 0
