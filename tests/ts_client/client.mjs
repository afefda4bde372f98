// The TypeScript SDK's clients, as Claude Desktop and other Node clients run servers:
//   node client.mjs COMMAND [ARGS…]        the stdio client, starting the server from argv
//   node client.mjs --http URL             the streamable HTTP client (bearer from MCP_TOKEN)
// Initialize, list the tools, ask one question, close. Prints one JSON object: the tool
// names and the plaud_search and plaud_notes results.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const argv = process.argv.slice(2);
let transport;
if (argv[0] === "--http") {
  transport = new StreamableHTTPClientTransport(new URL(argv[1]), {
    requestInit: { headers: { Authorization: `Bearer ${process.env.MCP_TOKEN}` } },
  });
} else {
  const [command, ...args] = argv;
  transport = new StdioClientTransport({ command, args, env: process.env, stderr: "ignore" });
}
const client = new Client({ name: "plaud-index-ts-test", version: "1.0.0" });
await client.connect(transport);
const tools = await client.listTools();
const search = await client.callTool({ name: "plaud_search", arguments: { query: process.env.QUERY } });
const notes = await client.callTool({ name: "plaud_notes", arguments: { section: "summary" } });
await client.close();
console.log(JSON.stringify({
  tools: tools.tools.map((t) => t.name).sort(),
  search: { isError: search.isError ?? false, structured: search.structuredContent },
  notes: { isError: notes.isError ?? false, structured: notes.structuredContent },
}));
