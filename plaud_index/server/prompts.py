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


def action_items(since: str | None, owner: str | None = None) -> str:
    day = _day(since, "since")
    when = f"from {day.isoformat()} until today" if day else "from the last 7 days (use " \
        "the answer's today to work out the date)"
    who = f" Keep only the items owned by {_name(owner, 'owner')} (or naming them)." \
        if owner else ""
    since_arg = f'date_from="{day.isoformat()}"' if day else "date_from=<7 days before today>"
    return (f"List my action items {when}. Call plaud_notes(section=\"action items\", "
            f"{since_arg}) and follow next_cursor until it is null.{who} Group the items by "
            "owner, each with its recording's title and local date, and say which have no "
            "owner. Quote the items as written; do not invent deadlines.")


def week_recap(week_of: str | None = None) -> str:
    day = _day(week_of, "week_of")
    if day:
        monday = day - timedelta(days=day.weekday())
        span = f'date_from="{monday.isoformat()}", date_to="{(monday + timedelta(days=6))}"'
        which = f"the week of {monday.isoformat()}"
    else:
        span = "date_from=<Monday of this week>, date_to=<today>"
        which = "this week (use the answer's today for the dates)"
    return (f"Recap {which} from my recordings. First call plaud_list({span}) for the "
            f"meetings, then plaud_notes({span}) for their summaries, decisions and action "
            "items (follow next_cursor). Write: the meetings day by day (title, time, who), "
            "the decisions, the open action items with owners, and anything that looks at "
            "risk. Cite each point with its recording's title and date.")


def meeting_prep(person: str, topic: str | None = None) -> str:
    who = _name(person, "person")
    about = f" about {_name(topic, 'topic')}" if topic else ""
    query = f"{who} {topic}" if topic else who
    return (f"Prepare me for a meeting with {who}{about}. Call plaud_list(speaker={echo(who)}) "
            f"for our recent meetings and plaud_search(query={echo(query)}) for where they or "
            "the topic came up; read the most relevant moments with plaud_get(file_id, "
            "at=<moment start>) and open action items with plaud_notes(section=\"action "
            f"items\", speaker={echo(who)}). Give: what we last discussed and decided, what "
            f"is still open between us, and questions I should ask. Cite titles and dates.")


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
# description, its arguments and its text with ${arguments.…} in place of them.
PROMPT_SUMMARIES = {
    "action_items_since": (
        "Every action item in the AI notes since a day, grouped by owner.",
        ["since", "owner"],
        "List my action items since ${arguments.since}: call plaud_notes(section=\"action "
        "items\", date_from=\"${arguments.since}\") and group them by owner."),
    "week_recap": (
        "The meetings, decisions and open action items of one week.",
        ["week_of"],
        "Recap the week of ${arguments.week_of} from my recordings: plaud_list and "
        "plaud_notes for that week, day by day, with decisions and open action items."),
    "prepare_meeting": (
        "What was discussed and decided with someone, before meeting them.",
        ["person", "topic"],
        "Prepare me for a meeting with ${arguments.person} about ${arguments.topic}: "
        "plaud_list, plaud_search and plaud_notes for what we discussed and what is open."),
}
