"""Search across Plaud and a local folder through the SDK's stdio client."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import tool_result
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from test_folders import SRT

REPO = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("both")
    (root / "meetings").mkdir()
    (root / "meetings" / "vendor-call.srt").write_text(SRT)
    values = {"PLAUD_INDEX_HOME": str(root / "home"), "PLAUD_CLIENT": "mock",
              "PLAUD_EMBEDDER": "mock", "PLAUD_INDEX_FOLDERS": str(root / "meetings")}
    subprocess.run([sys.executable, "-m", "plaud_index", "indexer", "--once"], check=True,
                   capture_output=True, cwd=REPO, timeout=300, env={**os.environ, **values})
    return values



async def test_search_list_and_get_across_plaud_and_a_folder(env: dict[str, str]) -> None:
    params = StdioServerParameters(command=sys.executable, args=["-m", "plaud_index"],
                                   env=env, cwd=REPO)
    path = str(Path(env["PLAUD_INDEX_FOLDERS"]) / "vendor-call.srt")
    with open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), \
                ClientSession(read, write) as session:
            await session.initialize()
            query = "vendor contract storage pricing"
            both = await tool_result(session, "plaud_search", query=query)
            plaud_only = await tool_result(session, "plaud_search", query=query,
                                                  source_kind="plaud")
            files = await tool_result(session, "plaud_list", source_kind="folder")
            budget = await tool_result(session, "plaud_search", query="Q3 budget decision")
            top = both["results"][0]
            around = await tool_result(session, "plaud_get", file_id=top["file_id"], at="00:00:05",
                                       window=2)
    assert top["source_kind"] == "folder" and top["path"] == path
    assert f"The file: {path}" in top["fetch"] and "Plaud's MCP" not in top["fetch"]
    assert top["moments"][0]["speaker"] == "Ann" and top["moments"][0]["start"]
    assert all(h["source_kind"] == "plaud" for h in plaud_only["results"])
    assert [r["path"] for r in files["recordings"]] == [path]
    assert budget["results"][0]["source_kind"] == "plaud"  # Plaud recordings still there
    assert budget["index"]["recordings"] > 1
    assert [u["speaker"] for u in around["around"]["utterances"]] == ["Ann", "Bo"]  # 3 s on
    assert around["path"] == path and around["source_kind"] == "folder"
