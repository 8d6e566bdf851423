"""The core's tools on ``datasette-mcp``'s MCP server (its ``/-/mcp`` endpoint).

``datasette-mcp`` calls the ``register_mcp_tools(datasette, mcp)`` hook with its MCP
SDK server. This module adds there every tool the served release offers, as the very
tool objects ``metabundle mcp`` serves (:func:`metabundle.mcp.server.core_tool` over
the shipped tool catalogue): the same name, description, published parameter schema
and read-only annotations, and the core's payload as the result, so both servers
answer a call identically.
"""

from __future__ import annotations

from typing import Any

from metabundle.datasette_plugin.release_link import NoRelease, release_for
from metabundle.mcp.catalogue import load as load_catalogue
from metabundle.mcp.handle import ReleaseHandle
from metabundle.mcp.server import core_tool, offered


def register_tools(datasette: Any, mcp: Any) -> None:
    """Add the release's core tools to an MCP SDK server (``datasette-mcp``'s); an
    instance serving no release adds none (its SQL tools still work)."""
    try:
        release = release_for(datasette)
    except NoRelease:
        return
    # The SDK's public add_tool builds a tool from a Python signature (and would
    # publish optional parameters as anyOf); a ready Tool goes into its manager.
    manager = mcp._tool_manager
    handle = ReleaseHandle(opened=release)
    for entry in load_catalogue():
        if offered(release.manifest, entry) and manager.get_tool(entry["name"]) is None:
            manager._tools[entry["name"]] = core_tool(handle, entry)
