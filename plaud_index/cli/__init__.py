"""The command line: argparse subcommands over ``answers``; errors become exit codes.

The commands live beside it by what they do: reading the index (``cli.read``), keeping it
(``cli.sync``), setting up (``cli.setup``, ``cli.clients``, ``cli.serve``). Here: the
parser, logging, and ``main``.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from .. import __version__
from ..config import HTTP_PORT, load_config
from ..errors import InvalidQueryError, PlaudIndexError, UnknownRecordingError
from ..fsio import raise_open_file_limit
from ..redact import RedactingFilter, redact
from ..search.browse import DEFAULT_LIST_LIMIT, MAX_LIST_LIMIT
from ..search.people import DEFAULT_PEOPLE_LIMIT, MAX_PEOPLE_LIMIT
from ..search.rank import DEFAULT_LIMIT, MAX_LIMIT, MODES, SOURCE_KINDS, SOURCES
from ..search.transcript import DEFAULT_WINDOW_S
from ..setup.clients import CLIENTS
from ..sync.terminal import LineSafeHandler
from .clients import cmd_config, cmd_install, cmd_uninstall
from .read import (
    as_flags,
    cmd_get,
    cmd_list,
    cmd_name_speaker,
    cmd_notes,
    cmd_people,
    cmd_search,
    cmd_transcript,
)
from .serve import cmd_serve
from .setup import (
    cmd_auth_status,
    cmd_doctor,
    cmd_install_agent,
    cmd_login,
    cmd_logout,
    cmd_uninstall_agent,
)
from .sync import cmd_demo, cmd_indexer, cmd_mirror, cmd_status


@contextmanager
def logging_to_stderr(verbose: bool) -> Iterator[None]:
    """Our records on stderr while a command runs, and the caller's logging as it was
    after it: ``main`` called in-process (a test, a script) would otherwise leave a
    handler on a stream that has since closed, and every later record would fail there
    and print a stack (a hypothesis test that logs ran 10x slower after one)."""
    # stdout is reserved for the MCP protocol; a live progress line stays below the records
    handler = LineSafeHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.addFilter(RedactingFilter())
    root = logging.getLogger()
    kept, level = root.handlers[:], root.level
    root.handlers[:] = [handler]
    root.setLevel(logging.DEBUG if verbose else logging.INFO)
    try:
        yield
    finally:
        root.handlers[:] = kept
        root.setLevel(level)


def _http_options(parser: argparse.ArgumentParser, what: str) -> None:
    """``--http`` (what it does for this command) and the port of the shared server."""
    parser.add_argument("--http", action="store_true", help=what)
    parser.add_argument("--port", type=int, default=HTTP_PORT,
                        help=f"the HTTP server's port (default {HTTP_PORT})")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="plaud-index-mcp", description=(
        "Private, local semantic search over your Plaud recordings. Without a subcommand, "
        "serves MCP over stdio."))
    parser.add_argument("--version", action="version", version=__version__)
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging (stderr)")
    # -v after the subcommand too (`indexer --once -v`); SUPPRESS keeps one given before it
    verbose = argparse.ArgumentParser(add_help=False)
    verbose.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS,
                         help="debug logging (stderr)")
    sub = parser.add_subparsers(dest="command")
    # the flags several reading commands share, defined once
    days = argparse.ArgumentParser(add_help=False)
    days.add_argument("--from", dest="date_from", metavar="YYYY-MM-DD",
                      help="only recordings from this local day on")
    days.add_argument("--to", dest="date_to", metavar="YYYY-MM-DD",
                      help="only recordings up to this local day")
    days.add_argument("--folder", metavar="NAME",
                      help="only recordings filed in this Plaud folder (any case)")

    def add(name: str, *parents: argparse.ArgumentParser, **kwargs: Any
            ) -> argparse.ArgumentParser:
        return sub.add_parser(name, parents=[verbose, *parents], **kwargs)

    p = add("search", days, help="search the index from a terminal")
    p.add_argument("query", help="what to look for, in words or a question")
    p.add_argument("--limit", type=int, default=DEFAULT_LIMIT,
                   help=f"recordings to show, 1..{MAX_LIMIT} (default {DEFAULT_LIMIT})")
    p.add_argument("--speaker", help="only passages by a speaker whose name contains this")
    p.add_argument("--source", choices=SOURCES, default="any",
                   help="what was said (transcript), Plaud's AI notes, or both (any)")
    p.add_argument("--source-kind", choices=SOURCE_KINDS, default="any",
                   help="plaud recordings or folder files only")
    p.add_argument("--mode", choices=MODES, default="hybrid",
                   help="meaning and keywords (hybrid), meaning only, or keywords only")
    p.add_argument("--json", action="store_true", help="the MCP tool's structured result")
    p.set_defaults(func=cmd_search)

    p = add("get", help="one recording's details and snippets")
    p.add_argument("file_id", help="a file_id from search or list")
    p.add_argument("--query", help="choose snippets about this topic")
    p.add_argument("--at", metavar="HH:MM:SS", help="show what was said around this time")
    p.add_argument("--window", type=int, metavar="SECONDS",
                   help=f"before and after --at (default {DEFAULT_WINDOW_S})")
    p.add_argument("--json", action="store_true", help="the MCP tool's structured result")
    p.set_defaults(func=cmd_get)

    p = add("list", days, help="recordings newest first, by local date")
    p.add_argument("--limit", type=int, default=DEFAULT_LIST_LIMIT,
                   help=f"recordings per page, 1..{MAX_LIST_LIMIT} (default "
                   f"{DEFAULT_LIST_LIMIT})")
    p.add_argument("--speaker", help="only recordings with a speaker whose name contains this")
    p.add_argument("--source", choices=SOURCES, default="any",
                   help="only recordings that have AI notes, or a transcript")
    p.add_argument("--source-kind", choices=SOURCE_KINDS, default="any",
                   help="plaud recordings or folder files only")
    p.add_argument("--cursor", help="next_cursor of the previous page")
    p.add_argument("--json", action="store_true", help="the MCP tool's structured result")
    p.set_defaults(func=cmd_list)

    p = add("transcript", help="a recording's whole transcript, page by page, from the index")
    p.add_argument("file_id", help="a file_id from search or list")
    p.add_argument("--cursor", help="next_cursor of the previous page")
    p.add_argument("--json", action="store_true", help="the MCP tool's structured result")
    p.set_defaults(func=cmd_transcript)

    p = add("notes", days,
            help="AI notes: one recording's, or a kind of section across recordings")
    p.add_argument("file_id", nargs="?", help="one recording's notes (else every recording's)")
    p.add_argument("--section", help='only this kind: "action items", "decisions", "risks", '
                   '"summary", "highlights", "marks", or words of a heading')
    p.add_argument("--speaker", help="only recordings with a speaker whose name contains this")
    p.add_argument("--cursor", help="next_cursor of the previous page")
    p.add_argument("--json", action="store_true", help="the MCP tool's structured result")
    p.set_defaults(func=cmd_notes)

    p = add("people", days, help="who appears in the recordings, how often, what they owe")
    p.add_argument("--name", help="only people whose name contains this")
    p.add_argument("--limit", type=int, default=DEFAULT_PEOPLE_LIMIT,
                   help=f"people per page, 1..{MAX_PEOPLE_LIMIT} (default "
                   f"{DEFAULT_PEOPLE_LIMIT})")
    p.add_argument("--cursor", help="next_cursor of the previous page")
    p.add_argument("--json", action="store_true", help="the MCP tool's structured result")
    p.set_defaults(func=cmd_people)

    p = add("name-speaker", help="name a speaker of one recording, on this machine only")
    p.add_argument("file_id", help="a file_id from search, list or people")
    p.add_argument("label", help='the speaker as the recording shows it ("Speaker 2")')
    p.add_argument("name", nargs="?", help="who it is")
    p.add_argument("--undo", action="store_true", help="remove the local name")
    p.add_argument("--json", action="store_true", help="the MCP tool's structured result")
    p.set_defaults(func=cmd_name_speaker)

    p = add("doctor", help="check the model, sign-in, Plaud, indexer and index")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=cmd_doctor)

    p = add("auth", help="the Plaud sign-in")
    auth = p.add_subparsers(dest="auth_command", required=True)
    a = auth.add_parser("status", parents=[verbose],
                        help="who is signed in, until when, where the token lives")
    a.add_argument("--offline", action="store_true", help="do not ask Plaud")
    a.add_argument("--json", action="store_true", help="print the result as JSON")
    a.set_defaults(func=cmd_auth_status)

    p = add("status", help="index health")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=cmd_status)

    p = add("indexer", help="keep the index fresh (foreground daemon)")
    p.add_argument("--once", action="store_true", help="one cycle, then exit")
    # a sync a server or the CLI started in a process of its own (sync.detached): who it is
    # in status, and the indexer lock its starter took for it
    p.add_argument("--role", help=argparse.SUPPRESS)
    p.add_argument("--lock-fd", type=int, help=argparse.SUPPRESS)
    p.set_defaults(func=cmd_indexer)

    p = add("login", help="sign in to Plaud in the browser (OAuth PKCE)")
    p.add_argument("--no-browser", action="store_true",
                   help="only print the sign-in URL (e.g. over ssh -L 8199:localhost:8199)")
    p.add_argument("--timeout", type=int, metavar="SECONDS",
                   help="how long to wait for the browser (default 300, or "
                   "PLAUD_LOGIN_TIMEOUT_S)")
    p.set_defaults(func=cmd_login)

    p = add("logout", help="revoke (best effort) and delete the Plaud sign-in")
    p.set_defaults(func=cmd_logout)

    p = add("install-agent", help="run the indexer at login (launchd / systemd)")
    p.add_argument("--print", action="store_true", help="only show what would be installed")
    p.set_defaults(func=cmd_install_agent)

    p = add("uninstall-agent", help="stop and remove the indexer agent")
    p.set_defaults(func=cmd_uninstall_agent)

    p = add("config", help="the MCP client config that starts this server")
    p.add_argument("client", choices=CLIENTS, help="the MCP client to set up")
    p.add_argument("--install", action="store_true",
                   help="add it to the client's config file (only our entry changes; the "
                   "old file is backed up first)")
    _http_options(p, "point the client at the shared HTTP server (serve --http), with its "
                  "bearer token, where the client speaks HTTP")
    p.set_defaults(func=cmd_config)

    p = add("install", help="add this server to every MCP client on this machine")
    p.add_argument("--dry-run", action="store_true", help="show the changes, write nothing")
    p.add_argument("--client", action="append", choices=CLIENTS,
                   help="only this client (repeatable; also one not found on the machine)")
    agent = p.add_mutually_exclusive_group()
    agent.add_argument("--agent", action="store_true", default=None,
                       help="also install the indexer agent without asking")
    agent.add_argument("--no-agent", dest="agent", action="store_false",
                       help="do not install the indexer agent")
    _http_options(p, "also run the shared HTTP server at login (launchd/systemd), and point "
                  "the clients that speak HTTP at it")
    p.set_defaults(func=cmd_install)

    p = add("uninstall", help="remove this server's entry from every MCP client")
    p.add_argument("--dry-run", action="store_true", help="show the changes, write nothing")
    p.add_argument("--client", action="append", choices=CLIENTS, help="only this client")
    p.set_defaults(func=cmd_uninstall)

    p = add("serve", help="the MCP server: stdio, or --http for every client at once")
    _http_options(p, "streamable HTTP on 127.0.0.1 (a bearer token in <home>/http-token)")
    p.add_argument("--host", default="127.0.0.1",
                   help="the address to listen on (default 127.0.0.1: this machine only)")
    p.add_argument("--public-url", metavar="URL",
                   help="your tunnel's https address: remote clients may sign in with OAuth, "
                   "each one approved by you")
    p.add_argument("--list-clients", action="store_true",
                   help="the remote clients that registered, and their approval")
    p.add_argument("--revoke", metavar="CLIENT_ID", help="end a remote client's access")
    p.add_argument("--json", action="store_true", help="--list-clients as JSON")
    p.set_defaults(func=cmd_serve)

    p = add("mirror", help="the Markdown mirror of your recordings (see README)")
    p.add_argument("--once", action="store_true",
                   help="fetch every Plaud recording now and write or refresh its file")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.set_defaults(func=cmd_mirror)
    p = add("demo", help="index the bundled sample with the real model and search it")
    p.add_argument("queries", nargs="*", help="your own queries (default: a few examples)")
    p.set_defaults(func=cmd_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    with logging_to_stderr(args.verbose):
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    raise_open_file_limit()
    if args.command is None:
        from ..server.app import serve  # the only path that imports mcp

        return serve(load_config())
    try:
        return int(args.func(args, load_config()))
    except PlaudIndexError as exc:
        message = redact(str(exc))
        if isinstance(exc, InvalidQueryError | UnknownRecordingError):
            message = as_flags(message)
        print(f"plaud-index-mcp: {message}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `… | head` closed the pipe: stop quietly, as cat does
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # Python flushes stdout again at exit
        return 0


def indexer_main() -> int:
    return main(["indexer", *sys.argv[1:]])


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
