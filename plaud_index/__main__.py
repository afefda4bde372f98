"""``python -m plaud_index`` and the ``plaud-index-mcp`` command (``plaud_index_mcp.main``):
a stdio entry relays to the shared server when one runs for this home (``lifeline``),
decided before the heavy imports; anything else is the command line."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from .server.lifeline import relay_if_shared


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    shared = relay_if_shared(args)
    if shared is not None:
        return shared
    from .cli import main as cli_main

    return cli_main(args)


if __name__ == "__main__":
    sys.exit(main())
