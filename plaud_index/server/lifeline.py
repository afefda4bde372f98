"""The MCP server lives only as long as the client that started it.

An MCP client that crashes can leave the server's stdin open, so EOF alone is
not enough. The parent is recorded at the first instant of the process (before
any heavy import), so a parent that dies during start-up is still noticed; on
Linux the kernel is also asked to signal us when the parent dies
(``PR_SET_PDEATHSIG``), and a watchdog thread polls ``getppid`` everywhere.

The death signal fires when the parent *thread* that spawned us exits, which
is not always the parent process dying, so the handler exits only when
``getppid`` says the parent process is really gone.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import sys
import threading
import time
from types import FrameType

PR_SET_PDEATHSIG = 1
DEATH_SIGNAL = signal.SIGUSR1
_parent: int | None = None


def serves_mcp(argv: list[str]) -> bool:
    """No subcommand (options only, such as ``-v``), or ``serve`` without ``--http``, is the
    stdio server: it lives only as long as its client."""
    words = [a for a in argv if not a.startswith("-")]
    other = ("--http", "--list-clients", "--revoke", "-h", "--help", "--version")
    return (not words or words[0] == "serve") and not any(a.startswith(other) for a in argv)


def relay_if_shared(argv: list[str]) -> int | None:
    """The start of every way the program is run (the console script, ``python -m``): the
    stdio server holds on to its parent first, before the heavy imports, then relays to
    this home's ``serve --http`` when one runs (the exit code), else ``None``."""
    if not serves_mcp(argv):
        return None
    hold()  # a parent that dies from now on still counts
    from .forward import forward_if_shared

    return forward_if_shared()


def _exit_if_orphaned(*_: object) -> None:
    if _parent is not None and os.getppid() != _parent:
        sys.stderr.write(f"plaud-index-mcp: parent process {_parent} is gone; exiting\n")
        os._exit(0)


def _on_death_signal(signum: int, frame: FrameType | None) -> None:
    _exit_if_orphaned()


def _ask_the_kernel() -> None:
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, int(DEATH_SIGNAL), 0, 0, 0)
    except (OSError, AttributeError):  # no libc or no prctl: the watchdog still polls
        return


def hold(parent: int | None = None) -> int:
    """Record the parent now and exit when it dies. Call as early as possible."""
    global _parent
    _parent = os.getppid() if parent is None else parent
    signal.signal(DEATH_SIGNAL, _on_death_signal)
    _ask_the_kernel()
    _exit_if_orphaned()  # the parent may have died before the kernel was asked
    return _parent


def watch(interval_s: float = 1.0) -> None:
    """The portable fallback: poll ``getppid`` on a daemon thread."""
    if _parent is None:
        hold()

    def loop() -> None:
        while True:
            time.sleep(interval_s)
            _exit_if_orphaned()

    threading.Thread(target=loop, name="parent-watchdog", daemon=True).start()
