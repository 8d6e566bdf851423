"""``datasette-mcp``'s real ``/-/mcp`` endpoint on ``metabundle datasette`` (loopback
HTTP, an MCP client session): it lists the release's core tools exactly as
``metabundle mcp`` does, and answers them with the same payloads."""

from __future__ import annotations

import json

import pytest
from mcp import Client

from metabundle.mcp.server import build_server
from metabundle.search.release import Release
from metabundle.search.tools import release_tools

pytestmark = pytest.mark.anyio

CALLS = (
    ("search_all", {"query": "waist circumference", "sources": ["ukb"], "limit": 3}),
    ("search_all", {"query": "lung", "sources": ["nowhere"]}),  # a typed error
    ("get_release_info", {}),
)


def _schemas(tools: list) -> dict[str, dict]:
    return {
        tool.name: {
            "description": tool.description,
            "input_schema": tool.input_schema,
            "read_only": tool.annotations.read_only_hint if tool.annotations else None,
        }
        for tool in tools
    }


async def test_the_endpoint_lists_the_core_tools_as_metabundle_mcp_does(
    served_url: str, release: Release
) -> None:
    async with Client(served_url + "/-/mcp") as client:
        listed = _schemas((await client.list_tools()).tools)
    async with Client(build_server(release)) as client:
        reference = _schemas((await client.list_tools()).tools)
    names = [spec.name for spec in release_tools(release)]
    assert set(names) <= set(listed), "every tool the release offers"
    assert "execute_sql" in listed, "datasette-mcp's own tools stay"
    assert {name: listed[name] for name in names} == reference
    schema = listed["search_all"]["input_schema"]
    assert "anyOf" not in json.dumps(schema), "plain types, as parameters_schema publishes"
    assert schema["properties"]["sources"]["type"] == "array"


@pytest.mark.parametrize(("tool", "arguments"), CALLS)
async def test_a_call_answers_as_metabundle_mcp_does(
    served_url: str, release: Release, tool: str, arguments: dict
) -> None:
    async with Client(served_url + "/-/mcp") as client:
        answer = await client.call_tool(tool, arguments)
    async with Client(build_server(release)) as client:
        reference = await client.call_tool(tool, arguments)
    assert answer.is_error == reference.is_error
    assert answer.structured_content == reference.structured_content
    assert [c.text for c in answer.content] == [c.text for c in reference.content]
    if tool == "search_all" and not answer.is_error:
        assert answer.structured_content["results"], "the search finds the field"
