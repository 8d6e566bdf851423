"""The MCP server: tools and resources over the search core, nothing more."""
