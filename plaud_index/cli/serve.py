"""``serve``: the MCP server on stdio (what no subcommand does), or with ``--http`` one
server for every client over streamable HTTP; ``--list-clients`` and ``--revoke`` for the
remote clients ``--public-url`` authorised."""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime, timezone
from typing import Any

from ..config import Config
from ..errors import ConfigError


def _when(epoch: Any, config: Config) -> str:
    if not isinstance(epoch, (int, float)):
        return "-"
    return config.zone.local(datetime.fromtimestamp(epoch, timezone.utc)).isoformat(
        timespec="minutes")


def cmd_serve(args: argparse.Namespace, config: Config) -> int:
    from ..server.remote_ledger import list_clients, revoke_client

    if args.list_clients:
        clients, problem = list_clients(config.home)
        if problem:
            print(problem, file=sys.stderr)
        if args.json:
            print(json.dumps(clients, indent=2))
            return 0
        if not clients:
            print("No remote client is registered now." if problem else
                  "No remote client has registered.")
        for c in clients:
            state = "revoked " + _when(c["revoked"], config) if c["revoked"] else \
                "approved " + _when(c["approved"], config) if c["approved"] else \
                "never approved"
            print(f"{c['client_id']}  {c['name'] or '(no name)'}  registered "
                  f"{_when(c['registered'], config)}, {state}")
        return 0
    if args.revoke:
        if not revoke_client(config.home, args.revoke):
            raise ConfigError(f"No remote client {args.revoke!r}: `plaud-index-mcp serve "
                              "--list-clients` shows them")
        print(f"Revoked {args.revoke}: its tokens no longer work, and it must be approved "
              "again.")
        return 0
    if args.public_url and not args.http:
        raise ConfigError("--public-url needs --http")
    if not args.http:
        from ..server.app import serve

        return serve(config)
    from ..server.http import serve_http

    return serve_http(config, port=args.port, host=args.host, public_url=args.public_url)
