// The TypeScript SDK's stdio client, as Claude Desktop and other Node clients run servers:
// start the server from argv, initialize, list the tools, ask one question, close.
// Prints one JSON object: the tool names and the plaud_search result.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [command, ...args] = process.argv.slice(2);
const transport = new StdioClientTransport({ command, args, env: process.env, stderr: "ignore" });
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
