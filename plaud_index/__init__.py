"""plaud-index-mcp: private, local semantic search over Plaud recordings."""

__version__ = "0.1.0"
