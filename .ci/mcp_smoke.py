"""One MCP session against an installed server: initialize, tools/list, and a plaud_search
that gets its answer (the first sync runs in the background on the sample).

    python .ci/mcp_smoke.py /path/to/venv/bin/plaud-index-mcp
    python .ci/mcp_smoke.py --bundle UNPACKED_MCPB_DIR   # started as its manifest says
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from pathlib import Path

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

TOOLS = ["plaud_get", "plaud_list", "plaud_name_speaker", "plaud_notes", "plaud_people",
         "plaud_search", "plaud_sign_in", "plaud_sign_out", "plaud_transcript"]


def launch(argv: list[str]) -> tuple[str, list[str], dict[str, str]]:
    if argv[0] != "--bundle":
        return argv[0], [], {}
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from mcpb import host_command

    return host_command(Path(argv[1]).resolve())


async def main(argv: list[str]) -> int:
    command, args, settings = launch(argv)
    home = tempfile.mkdtemp(prefix="plaud-smoke-")
    env = {**os.environ, **settings, "PLAUD_INDEX_HOME": home, "PLAUD_CLIENT": "mock"}
    params = StdioServerParameters(command=command, args=args, env=env)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        init = await asyncio.wait_for(session.initialize(), 600)  # uv may install first
        tools = sorted(t.name for t in (await session.list_tools()).tools)
        assert tools == TOOLS, tools
        for _ in range(600):  # partial answers come first: wait for the whole sample
            result = await session.call_tool("plaud_search", {"query": "Q3 budget"})
            if not result.is_error and result.structured_content["index"]["complete"]:
                break
            await asyncio.sleep(0.5)
        assert not result.is_error and result.structured_content, result.content
        top = result.structured_content["results"][0]["title"]
    print(f"{init.server_info.name} {init.server_info.version}: tools {tools}; "
          f"plaud_search found {top!r}")
    assert top == "Q3 budget review", top
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1:])))
