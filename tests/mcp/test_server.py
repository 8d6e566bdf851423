"""The MCP server in-process: every core tool, advertised and answered exactly as the
core answers it, plus instructions and resources."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError
from mcp_types import CallToolResult

from metabundle.mcp.resources import (
    CONTRACT_URI,
    IDC_GUIDE_URI,
    INFO_URI,
    TABLE_URI,
    TABLES_URI,
    TOOLS_URI,
    contract_text,
)
from metabundle.search.errors import HTTP_STATUS, INVALID_REQUEST, NOT_FOUND
from metabundle.search.params import parameters_schema
from metabundle.search.release import Release
from metabundle.search.tools import all_tools, call_tool

pytestmark = pytest.mark.anyio

CALLS = [
    ("get_release_info", {}),
    ("list_tables", {}),
    ("get_table_schema", {"table": "idc_collection"}),
    ("run_sql", {"sql": "SELECT collection_id FROM idc_collection ORDER BY 1", "max_rows": 5}),
    ("search_all", {"query": "lung cancer CT", "method": "keyword", "limit": 5}),
    ("search_all", {"query": "breast MRI", "limit": 3}),
]

BAD_ARGUMENTS = [
    ("search_all", {"query": 5}),
    ("search_all", {"query": "lung", "bogus": 1}),
    ("search_all", {"query": "   "}),
    ("search_all", {}),
    ("search_all", {"query": "lung", "method": "fuzzy"}),
    ("run_sql", {"sql": "SELECT 1", "max_rows": "many"}),
    ("list_tables", {"verbose": True}),
]


def payload_of(result: CallToolResult) -> dict[str, Any]:
    """The JSON a result carries, checking that its text and structured forms agree."""
    assert len(result.content) == 1
    text = json.loads(result.content[0].text)
    assert text == result.structured_content
    return text


async def test_lists_every_registered_tool_with_its_schema(server: MCPServer) -> None:
    async with Client(server) as client:
        listed = {tool.name: tool for tool in (await client.list_tools()).tools}
    specs = all_tools()
    assert list(listed) == [spec.name for spec in specs]
    for spec in specs:
        tool = listed[spec.name]
        assert tool.description == spec.description
        assert tool.input_schema == parameters_schema(spec.params)
        assert tool.annotations is not None and tool.annotations.read_only_hint
    search = listed["search_all"].input_schema
    assert search["required"] == ["query"]
    assert "additionalProperties" not in search  # the core refuses unknown parameters
    assert search["properties"]["method"]["enum"] == ["keyword", "semantic", "hybrid"]
    assert search["properties"]["method"]["default"] == "hybrid"
    assert search["properties"]["limit"]["default"] == 10
    assert "description" in search["properties"]["query"]
    assert set(listed["run_sql"].input_schema["properties"]) == {"sql", "max_rows"}


@pytest.mark.parametrize(("name", "arguments"), CALLS)
async def test_a_call_returns_exactly_the_core_payload(
    server: MCPServer, release: Release, name: str, arguments: dict[str, Any]
) -> None:
    async with Client(server) as client:
        result = await client.call_tool(name, arguments)
    assert not result.is_error
    assert payload_of(result) == call_tool(release, name, arguments)


async def test_search_results_are_real_hits(server: MCPServer) -> None:
    async with Client(server) as client:
        result = await client.call_tool(
            "search_all", {"query": "lung", "method": "keyword", "sources": ["idc"]}
        )
    payload = payload_of(result)
    assert payload["results"], "a keyword search for lung finds IDC collections"
    assert {item["source"] for item in payload["results"]} == {"idc"}
    assert all("lung" in (item["title"] + item["snippet"]).lower() for item in payload["results"])
    assert "untrusted" in payload["data_notice"]


@pytest.mark.parametrize(("name", "arguments"), BAD_ARGUMENTS)
async def test_bad_arguments_give_the_core_invalid_request(
    server: MCPServer, release: Release, name: str, arguments: dict[str, Any]
) -> None:
    async with Client(server) as client:
        result = await client.call_tool(name, arguments)
    assert result.is_error
    payload = payload_of(result)
    assert payload == call_tool(release, name, arguments)
    assert payload["error"]["code"] == INVALID_REQUEST
    assert "Traceback" not in result.content[0].text


async def test_run_sql_refuses_drop_table_with_a_typed_code(
    server: MCPServer, release: Release
) -> None:
    arguments = {"sql": "DROP TABLE idc_collection"}
    async with Client(server) as client:
        refused = await client.call_tool("run_sql", arguments)
        count = await client.call_tool("run_sql", {"sql": "SELECT count(*) FROM idc_collection"})
    assert refused.is_error
    error = payload_of(refused)["error"]
    assert error["code"] in HTTP_STATUS
    assert error["code"] == INVALID_REQUEST
    assert "SELECT" in error["message"]
    assert payload_of(refused) == call_tool(release, "run_sql", arguments)
    assert payload_of(count)["rows"][0][0] > 0


async def test_an_unknown_table_is_not_found_with_suggestions(server: MCPServer) -> None:
    async with Client(server) as client:
        result = await client.call_tool("get_table_schema", {"table": "idc_colection"})
    assert result.is_error
    error = payload_of(result)["error"]
    assert error["code"] == NOT_FOUND
    assert "idc_collection" in error["details"]["suggestions"]


async def test_a_slow_call_does_not_block_other_calls(server: MCPServer) -> None:
    slow_sql = "SELECT sum(hash(a.range * 7 + b.range)) FROM range(12000) a, range(12000) b"
    finished: list[str] = []

    async def call(name: str, arguments: dict[str, Any]) -> None:
        async with Client(server) as client:
            await client.call_tool(name, arguments)
        finished.append(name)

    async with anyio.create_task_group() as group:
        group.start_soon(call, "run_sql", {"sql": slow_sql})
        await anyio.sleep(0.1)
        group.start_soon(call, "list_tables", {})
    assert finished == ["list_tables", "run_sql"]


async def test_instructions_give_the_workflow_and_every_tool(
    server: MCPServer, release: Release
) -> None:
    async with Client(server) as client:
        text = client.instructions
    assert text is not None
    assert release.version in text
    for phrase in ("get_release_info", "search_all", "list_tables", "get_table_schema"):
        assert phrase in text
    assert "untrusted" in text
    assert "check list_tables" in text
    for spec in all_tools():
        assert spec.name in text
    assert CONTRACT_URI in text and TABLES_URI in text


async def test_resources_are_listed(server: MCPServer) -> None:
    async with Client(server) as client:
        resources = {str(r.uri): r for r in (await client.list_resources()).resources}
        templates = (await client.list_resource_templates()).resource_templates
    assert set(resources) == {CONTRACT_URI, INFO_URI, TABLES_URI, IDC_GUIDE_URI, TOOLS_URI}
    assert resources[CONTRACT_URI].mime_type == "text/markdown"
    assert [t.uri_template for t in templates] == [TABLE_URI]


async def test_the_retrieval_contract_resource(server: MCPServer) -> None:
    async with Client(server) as client:
        contents = (await client.read_resource(CONTRACT_URI)).contents
    text = contents[0].text
    assert text == contract_text()
    for rule in ("Exact first", "Filters before candidate limits", "degrades to `keyword`"):
        assert rule in text
    assert "not calibrated probabilities" in text.replace("\n", " ")
    for code in HTTP_STATUS:
        assert f"`{code}`" in text


async def test_the_table_guide_covers_every_table(server: MCPServer, release: Release) -> None:
    async with Client(server) as client:
        text = (await client.read_resource(TABLES_URI)).contents[0].text
    assert release.version in text
    for table in call_tool(release, "list_tables", {})["tables"]:
        assert f"### {table['name']} ({table['rows']:,} rows)" in text
    schema = call_tool(release, "get_table_schema", {"table": "idc_collection"})
    assert f"- Primary key: {', '.join(schema['primary_key'])}" in text


async def test_release_info_and_table_schema_resources_match_the_tools(
    server: MCPServer, release: Release
) -> None:
    async with Client(server) as client:
        info = (await client.read_resource(INFO_URI)).contents[0].text
        uri = TABLE_URI.format(table="idc_series")
        schema = (await client.read_resource(uri)).contents[0].text
        with pytest.raises(MCPError, match="no table 'nope'"):
            await client.read_resource(TABLE_URI.format(table="nope"))
    assert json.loads(info) == call_tool(release, "get_release_info", {})
    assert json.loads(schema) == call_tool(release, "get_table_schema", {"table": "idc_series"})


async def test_an_unknown_tool_is_invalid_request_listing_the_tools(
    server: MCPServer, release: Release
) -> None:
    async with Client(server) as client:
        result = await client.call_tool("no_such_tool", {"x": 1})
    assert result.is_error
    payload = payload_of(result)
    assert payload == call_tool(release, "no_such_tool", {"x": 1})
    assert payload["error"]["code"] == INVALID_REQUEST
    assert payload["error"]["details"]["tools"] == sorted(spec.name for spec in all_tools())


async def test_an_offset_past_the_integer_range_is_clamped(
    server: MCPServer, release: Release
) -> None:
    arguments = {"filters": {"collection_id": ["tcga_luad"]}, "offset": 2**63, "limit": 5}
    async with Client(server) as client:
        result = await client.call_tool("build_cohort", arguments)
    assert not result.is_error, payload_of(result)
    assert payload_of(result)["series"] == []
