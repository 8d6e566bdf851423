"""The ``register_mcp_tools`` hook ``datasette-mcp`` calls, exercised on an MCP SDK
server (``datasette-mcp`` itself is not installed here): the search becomes an MCP
tool with the core's parameters and payloads."""

from __future__ import annotations

import json

import pytest
from datasette.app import Datasette
from mcp import Client
from mcp.server.mcpserver import MCPServer

import metabundle.datasette_plugin as plugin
from metabundle.search.release import Release
from metabundle.search.tools import TOOLS, call_tool

pytestmark = pytest.mark.anyio


@pytest.fixture
def mcp_server(datasette: Datasette) -> MCPServer:
    server = MCPServer(name="datasette")
    plugin.register_mcp_tools(datasette=datasette, mcp=server)
    return server


async def test_the_search_is_advertised_with_the_core_parameters(mcp_server: MCPServer) -> None:
    async with Client(mcp_server) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(tools) == {"search_all"}
    spec = TOOLS["search_all"]
    schema = tools["search_all"].input_schema
    assert tools["search_all"].description == spec.description
    assert set(schema["properties"]) == set(spec.params.model_fields)
    assert schema["required"] == ["query"]
    assert schema["properties"]["query"]["description"]


async def test_a_call_returns_the_core_payload(mcp_server: MCPServer, release: Release) -> None:
    arguments = {"query": "waist circumference", "sources": ["ukb"], "limit": 3}
    async with Client(mcp_server) as client:
        result = await client.call_tool("search_all", arguments)
    assert not result.is_error
    assert result.structured_content == json.loads(
        json.dumps(call_tool(release, "search_all", arguments))
    )


async def test_a_refused_call_is_an_error_with_the_core_json(
    mcp_server: MCPServer, release: Release
) -> None:
    arguments = {"query": "lung", "sources": ["nowhere"]}
    async with Client(mcp_server) as client:
        result = await client.call_tool("search_all", arguments)
    assert result.is_error
    assert json.dumps(call_tool(release, "search_all", arguments)) in result.content[0].text
