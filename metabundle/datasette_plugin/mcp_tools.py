"""The cross-source search as a tool of ``datasette-mcp``'s MCP server.

``datasette-mcp`` (not a dependency) serves ``/-/mcp`` and calls the
``register_mcp_tools(datasette, mcp)`` hook with its MCP SDK server. This module adds
``search_all`` there through the SDK's public ``add_tool``: a function whose
signature is built from the tool's pydantic parameters model, so the SDK advertises
the same parameters, and which returns the core's payload (a typed error is raised
as the tool's error, carrying the same JSON).
"""

from __future__ import annotations

import importlib
import inspect
import json
from typing import Annotated, Any

from pydantic import BaseModel, Field

from metabundle.datasette_plugin.api import run_tool, tool_spec

MCP_TOOLS = ("search_all",)


def tool_error_class(mcp: Any) -> type[Exception]:
    """The SDK's ``ToolError`` of ``mcp``'s server class (``mcp.server.mcpserver`` or
    ``mcp.server.fastmcp``): its message reaches the client; other exceptions are
    reported as crashes without their message."""
    package = type(mcp).__module__.rsplit(".", 1)[0]
    try:
        return importlib.import_module(f"{package}.exceptions").ToolError
    except (ImportError, AttributeError):
        return RuntimeError


def _signature(model: type[BaseModel]) -> inspect.Signature:
    """Keyword-only parameters mirroring ``model``'s fields (type, default, description)."""
    parameters = []
    for name, field in model.model_fields.items():
        annotation = Annotated[field.annotation, Field(description=field.description)]
        default = (
            inspect.Parameter.empty
            if field.is_required()
            else field.get_default(call_default_factory=True)
        )
        parameters.append(
            inspect.Parameter(
                name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation
            )
        )
    return inspect.Signature(parameters, return_annotation=dict[str, Any])


def mcp_function(datasette: Any, name: str, error: type[Exception] = RuntimeError) -> Any:
    """An async function calling core tool ``name`` on the instance's release; a typed
    error of the core is raised as ``error`` carrying the core's JSON."""
    spec = tool_spec(name)
    if spec is None:
        raise KeyError(f"no core tool named {name}")

    async def call(**arguments: Any) -> dict[str, Any]:
        payload = await run_tool(datasette, name, arguments)
        if "error" in payload:
            raise error(json.dumps(payload, ensure_ascii=False))
        return payload

    call.__name__ = name
    call.__doc__ = spec.description
    call.__signature__ = _signature(spec.params)  # type: ignore[attr-defined]
    return call


def register_tools(datasette: Any, mcp: Any) -> None:
    """Add the core's search tools to an MCP SDK server (``datasette-mcp``'s)."""
    for name in MCP_TOOLS:
        spec = tool_spec(name)
        if spec is None:
            continue
        function = mcp_function(datasette, name, tool_error_class(mcp))
        mcp.add_tool(function, name=name, description=spec.description)
