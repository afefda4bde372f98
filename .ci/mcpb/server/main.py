"""The Claude Desktop Extension's entry point: plaud-index-mcp's stdio server.

uv installs plaud-index-mcp (the wheel in wheels/, with its [offline] model) and its
dependencies for this machine from the bundle's pyproject.toml, then runs this file.
"""

import sys

from plaud_index_mcp import main

if __name__ == "__main__":
    sys.exit(main())
