"""Text for people: every answer and report drawn once, for the terminal and for MCP
text content alike (``answers``, ``reading``: what the tools return; ``reports``: what the
tool says about itself). Pure."""
