"""Prompts for what people ask most: action items since a day, the recap of a week, and
preparing for a meeting with someone. Each is a message that tells the model which tools
to call with which arguments, built from the person's own arguments (checked: a date is a
date), so a client's prompt menu gives a good first answer in one pick. A person or owner
argument completes from the people the index knows (``completion/complete``), read from
the index as it is: completing never starts a sync.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date, timedelta
from typing import Annotated, Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, Completion, CompletionArgument, PromptReference
from pydantic import Field

from ..answers import Answers
from ..errors import InvalidQueryError, PlaudIndexError
from ..search.rank import echo, parse_day


def _bad(message: str) -> MCPError:
    """An argument the person must fix: a JSON-RPC error with our one line."""
    return MCPError(INVALID_PARAMS, message)


def _day(value: str | None, name: str) -> date | None:
    try:
        return parse_day(value, name)
    except InvalidQueryError as exc:
        raise _bad(str(exc)) from exc


def _name(value: str, what: str) -> str:
    name = " ".join(str(value).split())[:100]
    if not name:
        raise _bad(f"{what} is empty: say who (or what) it is")
    return name


def action_items_text(when: str, since_arg: str, owner: str | None) -> str:
    """The action-items prompt for values already written out (a day, or a placeholder)."""
    who = f" Keep only the items owned by {owner} (or naming them)." if owner else ""
    return (f"List my action items {when}. Call plaud_notes(section=\"action items\", "
            f"{since_arg}) and follow next_cursor until it is null.{who} Group the items by "
            "owner, each with its recording's title and local date, and say which have no "
            "owner. Quote the items as written; do not invent deadlines.")


def action_items(since: str | None, owner: str | None = None) -> str:
    day = _day(since, "since")
    when = f"from {day.isoformat()} until today" if day else "from the last 7 days (use " \
        "the answer's today to work out the date)"
    since_arg = f'date_from="{day.isoformat()}"' if day else "date_from=<7 days before today>"
    return action_items_text(when, since_arg, _name(owner, "owner") if owner else None)


def week_recap_text(which: str, span: str) -> str:
    return (f"Recap {which} from my recordings. First call plaud_list({span}) for the "
            f"meetings, then plaud_notes({span}) for their summaries, decisions and action "
            "items (follow next_cursor). Write: the meetings day by day (title, time, who), "
            "the decisions, the open action items with owners, and anything that looks at "
            "risk. Cite each point with its recording's title and date.")


def week_recap(week_of: str | None = None) -> str:
    day = _day(week_of, "week_of")
    if day:
        monday = day - timedelta(days=day.weekday())
        span = f'date_from="{monday.isoformat()}", date_to="{(monday + timedelta(days=6))}"'
        which = f"the week of {monday.isoformat()}"
    else:
        span = "date_from=<Monday of this week>, date_to=<today>"
        which = "this week (use the answer's today for the dates)"
    return week_recap_text(which, span)


def meeting_prep_text(who: str, about: str, query: str, quoted_who: str) -> str:
    return (f"Prepare me for a meeting with {who}{about}. Call plaud_list(speaker="
            f"{quoted_who}) for our recent meetings and plaud_search(query={query}, "
            f"speaker={quoted_who}) for what they said, and plaud_search(query={query}) for "
            "where the topic came up; read the most relevant moments with plaud_get("
            "file_id, at=<moment start>) and open action items with plaud_notes(section="
            f"\"action items\", speaker={quoted_who}). Give: what we last discussed and "
            "decided, what is still open between us, and questions I should ask. Cite "
            "titles and dates.")


def meeting_prep(person: str, topic: str | None = None) -> str:
    who = _name(person, "person")
    about = f" about {_name(topic, 'topic')}" if topic else ""
    query = f"{who} {topic}" if topic else who
    return meeting_prep_text(who, about, echo(query), echo(who))


REQUIRED_ARGUMENTS = {"prepare_meeting": ("person",)}


async def prompt_requests_checked(ctx: Any, call_next: Any) -> Any:
    """Server middleware: ``prompts/get`` for a prompt that does not exist, or without an
    argument it needs, is a JSON-RPC invalid-params error (-32602) of one line, as the MCP
    spec says (the SDK answers both with code 0 and a traceback in the log)."""
    params = ctx.params
    if ctx.method == "prompts/get" and isinstance(params, Mapping):
        name = params.get("name")
        if name not in PROMPT_SUMMARIES:
            raise _bad(f"No prompt named {echo(name)}: the prompts are "
                       f"{', '.join(PROMPT_SUMMARIES)}")
        given = params.get("arguments") or {}
        missing = [a for a in REQUIRED_ARGUMENTS.get(str(name), ())
                   if not isinstance(given, Mapping) or not given.get(a)]
        if missing:
            raise _bad(f"{name} needs {', '.join(missing)}")
    return await call_next(ctx)


# The prompt arguments that name a person, and so complete from the people in the index.
PERSON_ARGUMENTS = {"prepare_meeting": {"person"}, "action_items_since": {"owner"}}
MAX_COMPLETIONS = 100  # the most values one completion may carry (the MCP spec)


async def complete_person(answers: Answers, ref: object, argument: CompletionArgument,
                          ) -> Completion | None:
    """The names that begin with what was typed, the most frequent first; nothing for any
    other argument (the SDK answers that with an empty list)."""
    if not isinstance(ref, PromptReference) or \
            argument.name not in PERSON_ARGUMENTS.get(ref.name, ()):
        return None
    try:
        names = await anyio.to_thread.run_sync(answers.people.names, argument.value,
                                               MAX_COMPLETIONS + 1)
    except PlaudIndexError:  # a damaged index: nothing to offer, and no error to show
        return None
    return Completion(values=names[:MAX_COMPLETIONS], total=None,
                      has_more=len(names) > MAX_COMPLETIONS)


def register_prompts(server: MCPServer[Any], answers: Answers) -> None:
    async def complete(ref: Any, argument: CompletionArgument, context: Any
                       ) -> Completion | None:
        return await complete_person(answers, ref, argument)

    server.completion()(complete)  # type: ignore[no-untyped-call]  # (the SDK's is untyped)

    @server.prompt(name="action_items_since", title="My action items since …",
                   description="Every action item in the AI notes since a day, grouped by "
                   "owner.")
    def action_items_since(
        since: Annotated[str | None, Field(description="YYYY-MM-DD; default: the last 7 "
                                                       "days")] = None,
        owner: Annotated[str | None, Field(description="Only items of this person")] = None,
    ) -> str:
        return action_items(since, owner)

    @server.prompt(name="week_recap", title="Recap of a week",
                   description="The meetings, decisions and open action items of one week.")
    def recap(week_of: Annotated[str | None, Field(description="Any day of the week, "
                                                              "YYYY-MM-DD; default: this "
                                                              "week")] = None) -> str:
        return week_recap(week_of)

    @server.prompt(name="prepare_meeting", title="Prepare for a meeting with …",
                   description="What was discussed and decided with someone, and what is "
                   "still open, before meeting them.")
    def prepare(person: Annotated[str, Field(description="Who you are meeting (a speaker's "
                                                         "name)")],
                topic: Annotated[str | None, Field(description="Optional: what the meeting "
                                                               "is about")] = None) -> str:
        return meeting_prep(person, topic)


# For listings before the server runs (the extension's manifest): each prompt's
# description, its arguments and its text with ${arguments.…} in place of them, made by
# the same builders as the prompts the server serves.
PROMPT_SUMMARIES = {
    "action_items_since": (
        "Every action item in the AI notes since a day, grouped by owner.",
        ["since", "owner"],
        action_items_text("from ${arguments.since} until today",
                          'date_from="${arguments.since}"', "${arguments.owner}")),
    "week_recap": (
        "The meetings, decisions and open action items of one week.",
        ["week_of"],
        week_recap_text("the week of ${arguments.week_of}",
                        'date_from=<Monday of the week of ${arguments.week_of}>, '
                        'date_to=<its Sunday>')),
    "prepare_meeting": (
        "What was discussed and decided with someone, before meeting them.",
        ["person", "topic"],
        meeting_prep_text("${arguments.person}", " about ${arguments.topic}",
                          "'${arguments.person} ${arguments.topic}'",
                          "'${arguments.person}'")),
}
