"""The MCP server: tools and resources over the search core, nothing more.

:func:`metabundle.mcp.server.build_server` turns every tool registered in
:mod:`metabundle.search.tools` into an MCP tool (same name, description and JSON
schema; the core validates the arguments and its payload, or typed error payload,
is returned unchanged) and adds read-only reference resources
(:mod:`metabundle.mcp.resources`). ``metabundle mcp`` serves it over stdio or
streamable HTTP. No search logic lives here: a capability is added to the core once
and appears in every adapter.
"""
