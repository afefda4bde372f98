"""Connections ``serve --http`` keeps open only while they are used.

uvicorn's HTTP/1.1 protocol starts no timer until a first response is done: a connection
that sends nothing, or half a request, is held for ever. With macOS's default of 256 open
files, 300 such connections from one program kept every good client out. Here:
- a request's head must be complete within ``HEAD_S`` of the connection opening (or of
  its last response, the keep-alive wait), else the connection is closed;
- at most ``WAITING_PER_ADDRESS`` connections of one address wait for a request at once;
  one more closes the address's oldest waiting one. Evicting the oldest, not refusing the
  newest, is what lets a good client through: behind a tunnel, or on this machine, the
  good client and the stranger come from one address, and the good client sends its
  request at once.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict, defaultdict
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

log = logging.getLogger(__name__)

HEAD_S = 10.0
WAITING_PER_ADDRESS = 32


class Waiting:
    """The connections of each address that wait for a request, oldest first."""

    def __init__(self, most: int = WAITING_PER_ADDRESS) -> None:
        self.most = most
        self.by_address: defaultdict[str, OrderedDict[int, BoundedH11]] = \
            defaultdict(OrderedDict)

    def add(self, conn: BoundedH11) -> None:
        queue = self.by_address[conn.address]
        queue[id(conn)] = conn
        while len(queue) > self.most:
            _, oldest = queue.popitem(last=False)
            oldest.evict()

    def discard(self, conn: BoundedH11) -> None:
        queue = self.by_address.get(conn.address)
        if queue is not None:
            queue.pop(id(conn), None)
            if not queue:
                del self.by_address[conn.address]


WAITING = Waiting()


class BoundedH11(H11Protocol):
    """uvicorn's h11 protocol with a deadline for each request's head and a bound on the
    connections one address keeps waiting."""

    waiting = WAITING
    head_s = HEAD_S

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.address = str((self.client or ("?", 0))[0])
        self._deadline: asyncio.TimerHandle | None = None
        self._wait_for_request()

    def _wait_for_request(self) -> None:
        self._stop_deadline()
        self._deadline = self.loop.call_later(self.head_s, self.evict)
        self.waiting.add(self)

    def _stop_deadline(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def evict(self) -> None:
        """Close a connection that waits for a request (too long, or one too many)."""
        self._stop_deadline()
        self.waiting.discard(self)
        idle = self.cycle is None or self.cycle.response_complete
        if idle and not self.transport.is_closing():
            self.transport.close()

    def handle_events(self) -> None:
        before = self.cycle
        super().handle_events()
        if self.cycle is not before and self.cycle is not None:  # a request's head came
            self._stop_deadline()
            self.waiting.discard(self)

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing() and (self.cycle is None or
                                                self.cycle.response_complete):
            self._wait_for_request()

    def connection_lost(self, exc: Any) -> None:
        self._stop_deadline()
        self.waiting.discard(self)
        super().connection_lost(exc)
