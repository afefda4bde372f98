"""The TypeScript SDK's stdio client beside the Python one: a Node client (as Claude Desktop
and many others are) starts the server, lists the tools, searches, reads notes and ends
the session cleanly. Needs node; ``.ci/setup`` installs the SDK (tests/ts_client)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
CLIENT = REPO / "tests" / "ts_client"
NODE = shutil.which("node")


@pytest.mark.skipif(NODE is None, reason="node is not installed: the TypeScript client "
                    "cannot run here (the Python client's tests cover the server)")
def test_the_typescript_sdk_client_searches_and_ends_the_session(tmp_path: Path) -> None:
    assert (CLIENT / "node_modules" / "@modelcontextprotocol" / "sdk").is_dir(), \
        "the TypeScript SDK is not installed: run `bash .ci/setup` (npm ci in tests/ts_client)"
    home = tmp_path / "home"
    env = {**os.environ, "PLAUD_INDEX_HOME": str(home), "PLAUD_CLIENT": "mock",
           "PLAUD_EMBEDDER": "mock", "QUERY": "Q3 budget decision"}
    subprocess.run([sys.executable, "-m", "plaud_index", "indexer", "--once"], check=True,
                   capture_output=True, cwd=REPO, timeout=300, env=env)
    done = subprocess.run([str(NODE), "client.mjs", sys.executable, "-m", "plaud_index"],
                          capture_output=True, text=True, cwd=CLIENT, timeout=120,
                          env={**env, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["tools"] == ["plaud_get", "plaud_list", "plaud_name_speaker", "plaud_notes",
                               "plaud_people", "plaud_search", "plaud_sign_in",
                               "plaud_sign_out", "plaud_transcript"]
    assert not answer["search"]["isError"]
    assert answer["search"]["structured"]["results"][0]["title"] == "Q3 budget review"
    assert not answer["notes"]["isError"] and answer["notes"]["structured"]["recordings"]
