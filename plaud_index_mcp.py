"""Console entry point: ``uvx plaud-index-mcp`` (MCP stdio server) and its subcommands."""

from __future__ import annotations

import sys


def main() -> int:
    from plaud_index.server.lifeline import relay_if_shared

    shared = relay_if_shared(sys.argv[1:])
    if shared is not None:
        return shared
    from plaud_index.cli import main as cli_main

    return cli_main(sys.argv[1:])


def indexer_main() -> int:
    from plaud_index.cli import indexer_main as run

    return run()


if __name__ == "__main__":
    sys.exit(main())
