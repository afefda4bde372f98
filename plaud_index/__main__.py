import sys

from .server import lifeline

if lifeline.serves_mcp(sys.argv[1:]):
    lifeline.hold()  # before the heavy imports below: a parent that dies now still counts

from .cli import main  # noqa: E402

sys.exit(main())
