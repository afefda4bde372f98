"""Requests the MCP SDK cannot read still get a reply: the pure guard, then a sweep of raw
malformed lines against the real server process."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from plaud_index.server.jsonrpc_guard import INVALID_REQUEST, PARSE_ERROR, refusal

REPO = Path(__file__).resolve().parent.parent
DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize(("line", "parsed", "expected"), [
    ('{"jsonrpc":"2.0","id":7,"method":"ping","params":{"q":"\\ud800"}}', False,
     (7, INVALID_REQUEST)),
    ('{"jsonrpc":"2.0","method":"ping","params":' + DEEP + ',"id":"deep"}', False,
     ("deep", PARSE_ERROR)),
    ('{"jsonrpc":"2.0","id":9,"method":"ping",}', False, (9, PARSE_ERROR)),
    ('{"jsonrpc":"2.0","id":10,"method":"ping"', False, (10, PARSE_ERROR)),
    ('{"jsonrpc":"2.0","id":true,"method":"ping"}', True, (None, INVALID_REQUEST)),
    ('{"jsonrpc":"2.0","id":1.5,"method":"ping"}', True, (None, INVALID_REQUEST)),
    ('{"jsonrpc":"2.0","id":"\\udc00","method":5}', False, (None, INVALID_REQUEST)),
    ('{"jsonrpc":"2.0","id":"a2"}', False, ("a2", INVALID_REQUEST)),  # no method
])
def test_a_request_the_sdk_drops_is_owed_an_error_for_its_id(
        line: str, parsed: bool, expected: tuple[Any, int]) -> None:
    owed = refusal(line, parsed)
    assert owed is not None and (owed.id, owed.code) == expected


@pytest.mark.parametrize(("line", "parsed"), [
    ('{"jsonrpc":"2.0","method":"notifications/initialized"}', True),  # a notification
    ('{"jsonrpc":"2.0","id":3,"result":{}}', False),  # a response is never answered
    ('{"jsonrpc":"2.0","method":"x",', False),  # no id to reply to
    ("[1, 2]", False),
    ("not json at all", False),
    ('"just a string"', False),
    ('{"jsonrpc":"2.0","id":4,"method":"ping"}', True),  # the SDK replies itself
])
def test_nothing_is_owed_without_a_request_id_or_when_the_sdk_replies(
        line: str, parsed: bool) -> None:
    assert refusal(line, parsed) is None


@given(st.text(max_size=300), st.booleans())
def test_the_guard_never_raises_on_any_text(line: str, parsed: bool) -> None:
    refusal(line, parsed)


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(),
                    lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner),
                    max_leaves=20),
       st.integers(min_value=-(2**53), max_value=2**53) | st.text(), st.booleans())
def test_the_id_is_found_whatever_comes_before_it(params: object, sent: int | str,
                                                  params_first: bool) -> None:
    members = [("jsonrpc", "2.0"), ("method", "tools/call"), ("params", params), ("id", sent)]
    if not params_first:
        members.reverse()
    line = "{" + ",".join(f"{json.dumps(k)}:{json.dumps(v)}" for k, v in members) + "}"
    owed = refusal(line, parsed=False)
    expected = sent if not (isinstance(sent, str) and _has_surrogate(sent)) else None
    assert owed is not None and owed.id == expected


def _has_surrogate(text: str) -> bool:
    return any(0xD800 <= ord(c) <= 0xDFFF for c in text)


# Raw lines, each a request with an id that the SDK's reader cannot take as sent.
MALFORMED = {
    "lone surrogate in an argument": '{"jsonrpc":"2.0","id":101,"method":"tools/call",'
    '"params":{"name":"plaud_search","arguments":{"query":"\\ud800"}}}',
    "lone surrogate in the method": '{"jsonrpc":"2.0","id":102,"method":"ping\\udfff"}',
    "100k-deep params": '{"jsonrpc":"2.0","id":103,"method":"tools/call","params":'
    + DEEP + "}",
    "100k-deep params before the id": '{"jsonrpc":"2.0","method":"ping","params":{"a":'
    + DEEP + '},"id":104}',
    "trailing comma": '{"jsonrpc":"2.0","id":105,"method":"ping",}',
    "truncated": '{"jsonrpc":"2.0","id":106,"method":"ping"',
    "method a number": '{"jsonrpc":"2.0","id":107,"method":5}',
    "jsonrpc 1.0": '{"jsonrpc":"1.0","id":108,"method":"ping"}',
    "no jsonrpc": '{"id":109,"method":"ping"}',
    "params a string": '{"jsonrpc":"2.0","id":110,"method":"ping","params":"x"}',
    "NaN in params": '{"jsonrpc":"2.0","id":111,"method":"ping","params":{"x":NaN}}',
    "single quotes after the id": """{"id":112,"method":"ping",'jsonrpc':'2.0'}""",
    "no method": '{"jsonrpc":"2.0","id":113}',
    "an id of true": '{"jsonrpc":"2.0","id":true,"method":"ping"}',
    "an id of 1.5": '{"jsonrpc":"2.0","id":1.5,"method":"ping"}',
    "an id that is an object": '{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}',
    "an id that is a lone surrogate": '{"jsonrpc":"2.0","id":"\\ud800","method":5}',
}
NULL_ID = {"an id of true", "an id of 1.5", "an id that is an object",
           "an id that is a lone surrogate"}


class Server:
    """The real server process over pipes, its stdout read by a thread into a queue."""

    def __init__(self, home: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "plaud_index"], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=REPO,
            env={**os.environ, "PLAUD_INDEX_HOME": str(home)})
        self.replies: queue.Queue[dict[str, Any]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.replies.put(json.loads(line))  # every line must be JSON-RPC

    def send(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line.encode("utf-8", "surrogatepass") + b"\n")
        self.process.stdin.flush()

    def until(self, wanted: object, deadline_s: float = 60.0) -> list[dict[str, Any]]:
        """Every reply up to and including the one with id ``wanted``."""
        seen: list[dict[str, Any]] = []
        deadline = time.monotonic() + deadline_s
        while not any(r.get("id") == wanted for r in seen):
            seen.append(self.replies.get(timeout=max(deadline - time.monotonic(), 0.1)))
        return seen


def test_every_malformed_request_with_an_id_gets_a_json_rpc_error_and_the_server_lives(
        index_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    server = Server(index_home)
    try:
        server.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "sweep", "version": "1"}}}))
        server.until(1)
        server.send('{"jsonrpc":"2.0","method":"notifications/initialized"}')
        for line in MALFORMED.values():
            server.send(line)
        server.send('{"jsonrpc":"2.0","id":"after","method":"ping"}')
        replies = server.until("after")
        # the refusals travel beside the SDK's replies: wait for each, not for an order
        wanted = {json.loads(json.dumps(i)) for i in range(101, 114)}
        while not wanted <= {r.get("id") for r in replies} or \
                sum(r.get("id") is None for r in replies) < len(NULL_ID):
            replies.append(server.replies.get(timeout=60))
        ids = [r["id"] for r in replies if r.get("id") is not None]
        assert len(ids) == len(set(ids)), "a request answered twice"
        by_id = {r["id"]: r for r in replies if r.get("id") is not None}
        codes = []
        for name, line in MALFORMED.items():
            if name in NULL_ID:
                continue
            sent = json.loads(line[line.index('"id":') + 5:].split(",")[0].split("}")[0])
            assert sent in by_id, name  # answered: an error, or the SDK's own reply
            codes.append(by_id[sent].get("error", {}).get("code"))
        nulls = [r for r in replies if r.get("id") is None]
        assert len(nulls) == len(NULL_ID) and all("error" in r for r in nulls)
        ours = codes.count(PARSE_ERROR) + codes.count(INVALID_REQUEST)
        print(f"{len(MALFORMED)} malformed requests: {len(codes)} answered for their id "
              f"({codes.count(PARSE_ERROR)} parse errors, {codes.count(INVALID_REQUEST)} "
              f"invalid requests, {len(codes) - ours} by the SDK), {len(nulls)} with id "
              "null (an id no reply may carry)")
        server.send(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))
        assert server.until(2)[-1]["result"]["tools"]
    finally:
        assert server.process.stdin is not None
        server.process.stdin.close()
        server.process.wait(timeout=30)
