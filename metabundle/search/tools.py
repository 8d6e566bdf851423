"""Every tool of the search core, registered: importing this module loads each
service (:mod:`metabundle.search.services`), whose tools register themselves in
:mod:`metabundle.search.registry`. The adapters (CLI, MCP, Datasette) call tools
through here; a service registers its own with :func:`~metabundle.search.registry.tool`
and never imports this module.
"""

from __future__ import annotations

import metabundle.search.services  # noqa: F401  (registers every tool)
from metabundle.search.registry import (
    CLAMPED_KEY,
    TOOLS,
    UNTRUSTED_NOTICE,
    ToolSpec,
    all_tools,
    call_tool,
    invoke,
    release_tools,
)

__all__ = [
    "CLAMPED_KEY",
    "TOOLS",
    "UNTRUSTED_NOTICE",
    "ToolSpec",
    "all_tools",
    "call_tool",
    "invoke",
    "release_tools",
]
