"""One MCP session against an installed console script: initialize, tools/list, and a
plaud_search that gets its answer (the first sync runs in the background on the sample).

    python .ci/mcp_smoke.py /path/to/venv/bin/plaud-index-mcp
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


async def main(command: str) -> int:
    home = tempfile.mkdtemp(prefix="plaud-smoke-")
    env = {**os.environ, "PLAUD_INDEX_HOME": home, "PLAUD_CLIENT": "mock"}
    params = StdioServerParameters(command=command, args=[], env=env)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        init = await session.initialize()
        tools = sorted(t.name for t in (await session.list_tools()).tools)
        assert tools == ["plaud_get", "plaud_list", "plaud_notes", "plaud_search",
                         "plaud_transcript"], tools
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
    sys.exit(asyncio.run(main(sys.argv[1])))
