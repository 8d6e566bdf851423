"""Answers stay bounded and typed through a real client over stdio: an engine error
that quotes a 20 MB value is cut, a query that would spill to disk is
``resource_exhausted``, and citations over many collections page with ``next_offset``
instead of answering none."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastmcp import Client

from metabundle.search.budget import PAYLOAD_MAX_BYTES
from metabundle.search.sql_guard import MAX_ERROR_CHARS
from tests.mcp.test_text_arguments import stdio_transport

pytestmark = pytest.mark.anyio

SPILLING = (
    "SELECT s, count(*) c FROM (SELECT md5(i::VARCHAR) || md5((i + 1)::VARCHAR) s "
    "FROM range(15000000) t(i)) GROUP BY s ORDER BY c DESC"
)
MANY_COLLECTIONS = {"Modality": ["CT", "MR", "SM", "PT", "SEG"]}


async def call(client: Client, tool: str, arguments: dict) -> tuple[dict, int]:
    result = await client.call_tool_mcp(tool, arguments)
    text = result.content[0].text
    return json.loads(text), len(text)


async def test_an_engine_error_quoting_a_huge_value_is_cut(release_path: Path) -> None:
    async with Client(stdio_transport(release_path)) as client:
        sql = "SELECT CAST(repeat('x', 20000000) AS INTEGER)"
        payload, size = await call(client, "run_sql", {"sql": sql})
    assert payload["error"]["code"] == "sql_error"
    assert size < MAX_ERROR_CHARS + 500
    assert payload["error"]["message"].endswith("(20,000,054 characters in all)")


async def test_a_query_that_would_spill_is_resource_exhausted(release_path: Path) -> None:
    async with Client(stdio_transport(release_path)) as client:
        payload, _ = await call(client, "run_sql", {"sql": SPILLING})
    assert payload["error"]["code"] == "resource_exhausted", payload
    assert "LocalFileSystem" not in payload["error"]["message"]


async def test_citations_of_many_collections_page_in_turtle(release_path: Path) -> None:
    arguments = {"format": "turtle", "filters": MANY_COLLECTIONS, "limit": 300}
    seen: list[str] = []
    async with Client(stdio_transport(release_path)) as client:
        offset: int | None = 0
        while offset is not None:
            payload, size = await call(client, "get_citations", {**arguments, "offset": offset})
            assert size <= PAYLOAD_MAX_BYTES
            assert payload["returned"] > 0 and payload["document"].startswith("@prefix")
            assert "size_cap" not in payload
            seen += [citation["doi"] for citation in payload["citations"]]
            offset = payload["page"]["next_offset"]
    assert len(seen) == payload["total"] == len(set(seen)) > 100
