"""Console entry point: ``uvx plaud-index-mcp`` (MCP stdio server) and its subcommands."""

from __future__ import annotations

import sys


def main() -> int:
    from plaud_index.__main__ import main as run

    return run(sys.argv[1:])


def indexer_main() -> int:
    from plaud_index.cli import indexer_main as run

    return run()


if __name__ == "__main__":
    sys.exit(main())
