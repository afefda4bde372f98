"""The set-up commands: sign-in, ``auth status``, ``doctor``, the agent, client configs."""

from __future__ import annotations

import argparse
import json
import sys
import webbrowser
from collections.abc import Callable
from dataclasses import asdict, replace
from typing import Any

from ..config import Config
from ..plaud import auth_status, sign_in, sign_out
from ..render.reports import render_auth, render_checks
from ..setup.agent import install, plan, uninstall
from ..setup.doctor import run_checks


def print_json(data: Any) -> None:
    print(json.dumps(data, indent=2, ensure_ascii=False))


def show(as_json: bool, data: Any, text: Callable[[], str]) -> None:
    """A result as the tool's JSON (``--json``) or as its text rendering."""
    if as_json:
        print_json(data)
    else:
        print(text())


def cmd_auth_status(args: argparse.Namespace, config: Config) -> int:
    auth = auth_status(config, online=not args.offline)
    show(args.json, asdict(auth), lambda: render_auth(auth))
    return 0 if auth.signed_in and auth.problem is None else 1


def cmd_doctor(args: argparse.Namespace, config: Config) -> int:
    checks = run_checks(config)
    show(args.json, [asdict(c) for c in checks], lambda: render_checks(checks))
    return 1 if any(c.status == "fail" for c in checks) else 0


def cmd_login(args: argparse.Namespace, config: Config) -> int:
    def announce(url: str) -> None:
        how = "Open this URL" if args.no_browser else "Your browser should open; if not, open"
        print(f"{how} to sign in to Plaud:\n\n  {url}\n\nWaiting for the browser… "
              "(Ctrl-C to cancel)", file=sys.stderr, flush=True)

    if args.timeout is not None:
        config = replace(config, login_timeout_s=float(args.timeout))
    account = sign_in(config, open_browser=None if args.no_browser else webbrowser.open,
                      announce=announce)
    print(f"Signed in to Plaud as {account}.")
    return 0


def cmd_logout(args: argparse.Namespace, config: Config) -> int:
    print("Signed out of Plaud; local tokens deleted." if sign_out(config)
          else "Not signed in.")
    return 0


def cmd_install_agent(args: argparse.Namespace, config: Config) -> int:
    agent = plan()
    if args.print:
        print(f"# would write {agent.path}\n{agent.content}")
        for argv in agent.load:
            print(f"# then run: {' '.join(argv)}")
        return 0
    for command in install(agent):
        print(f"ran: {command}")
    print(f"Installed {agent.path}: the indexer now runs in the background and at login.")
    return 0


def cmd_uninstall_agent(args: argparse.Namespace, config: Config) -> int:
    agent = plan()
    for command in uninstall(agent):
        print(f"ran: {command}")
    print(f"Removed {agent.path}.")
    return 0
