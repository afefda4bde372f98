import sys

from .server import lifeline

if lifeline.serves_mcp(sys.argv[1:]):
    lifeline.hold()  # before the heavy imports below: a parent that dies now still counts
    from .server.forward import forward_if_shared

    shared = forward_if_shared()  # a serve --http of this home runs: relay to it
    if shared is not None:
        sys.exit(shared)

from .cli import main  # noqa: E402

sys.exit(main())
