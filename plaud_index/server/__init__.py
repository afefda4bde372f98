"""The MCP server, one of the two processes: the tools (``tools``), the stdio transport
and its JSON-RPC guard, and the lifeline that ends it with its client.

Nothing is imported here: ``lifeline`` runs at the first instant of the process, before
any heavy import.
"""
