import sys

from .server.lifeline import relay_if_shared

shared = relay_if_shared(sys.argv[1:])  # the stdio server, relayed: before heavy imports
if shared is not None:
    sys.exit(shared)

from .cli import main  # noqa: E402

sys.exit(main())
