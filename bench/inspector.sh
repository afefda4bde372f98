#!/usr/bin/env bash
# A session with the MCP Inspector CLI against the real server on the bundled sample:
# tools/list, then tools/call of plaud_search, plaud_list and plaud_get (with and without at).
#   bash bench/inspector.sh        (needs Node.js/npx and the .venv from .ci/setup)
set -euo pipefail
cd "$(dirname "$0")/.."
home=$(mktemp -d)
config="$home/mcp.json"
PLAUD_INDEX_HOME="$home" PLAUD_CLIENT=mock .venv/bin/python -m plaud_index indexer --once 2>/dev/null
cat > "$config" <<JSON
{"mcpServers": {"plaud-index": {"command": "$PWD/.venv/bin/plaud-index-mcp",
  "env": {"PLAUD_INDEX_HOME": "$home"}}}}
JSON
inspect() { npx -y @modelcontextprotocol/inspector --cli --config "$config" --server plaud-index "$@"; }
echo "### tools/list"
inspect --method tools/list
echo "### tools/call plaud_search"
inspect --method tools/call --tool-name plaud_search --tool-arg "query=what did we decide about the Q3 budget" --tool-arg limit=2
file_id=$(PLAUD_INDEX_HOME="$home" .venv/bin/python -m plaud_index search "kitchen renovation" --json --limit 1 2>/dev/null \
  | .venv/bin/python -c 'import json,sys; print(json.load(sys.stdin)["results"][0]["file_id"])')
echo "### tools/call plaud_get"
inspect --method tools/call --tool-name plaud_get --tool-arg "file_id=$file_id"
echo "### tools/call plaud_get around a moment"
inspect --method tools/call --tool-name plaud_get --tool-arg "file_id=$file_id" \
  --tool-arg at=00:00:20 --tool-arg window=15
echo "### tools/call plaud_list (September 2026, three at a time)"
inspect --method tools/call --tool-name plaud_list --tool-arg date_from=2026-09-01 \
  --tool-arg date_to=2026-09-30 --tool-arg limit=3
echo "### tools/call plaud_search with a bad limit (a tool error, not a crash)"
inspect --method tools/call --tool-name plaud_search --tool-arg query=budget --tool-arg limit=99 || true
