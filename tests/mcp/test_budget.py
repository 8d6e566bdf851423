"""The payload budget on the complete mirror build, for every registered tool.

``tools/list`` as a real MCP client receives it stays under 25 KB with descriptions
that say when to call each tool (the longer guidance is in the tool guide resource);
every tool's representative call (:data:`EXAMPLE_CALLS`) answers within the 128 KB
cap, a search tool's default 10 hits within 8 KB; an answer over the cap is cut to
fit with a ``size_cap`` block whose ``next_offset`` pages on; and the server
instructions state the budget.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from mcp import Client

from metabundle.mcp.resources import TOOLS_URI
from metabundle.mcp.server import build_server
from metabundle.search.budget import (
    PAYLOAD_MAX_BYTES,
    SEARCH_ANSWER_MAX_BYTES,
    SIZE_CAP_KEY,
    TOOLS_LIST_MAX_BYTES,
    fit_payload,
    payload_bytes,
)
from metabundle.search.examples import EXAMPLE_CALLS, SEARCH_TOOLS
from metabundle.search.release import Release
from metabundle.search.tools import all_tools, call_tool
from tests.support.examples import TEST_CALLS
from tests.support.payloads import json_objects

TOOL_NAMES = [spec.name for spec in all_tools()]
WHEN_TO_CALL = re.compile(r"\b(call|use)\b", re.IGNORECASE)


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


def test_every_tool_has_a_representative_call() -> None:
    assert sorted(EXAMPLE_CALLS) == sorted(TOOL_NAMES), "add the new tool to EXAMPLE_CALLS"
    assert set(SEARCH_TOOLS) <= set(TOOL_NAMES)


@pytest.mark.anyio
async def test_tools_list_fits_the_budget_and_says_when_to_call(
    complete_release: Release,
) -> None:
    async with Client(build_server(complete_release)) as client:
        listed = (await client.list_tools()).tools
        guide = await client.read_resource(TOOLS_URI)
        instructions = client.instructions or ""
    tools = [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in listed]
    assert [tool["name"] for tool in tools] == TOOL_NAMES  # the complete build has every source
    assert payload_bytes({"tools": tools}) <= TOOLS_LIST_MAX_BYTES
    text = guide.contents[0].text
    for spec in all_tools():
        assert WHEN_TO_CALL.search(spec.description), f"{spec.name}: say when to call it"
        assert spec.full_description in text
    assert "Payload budget" in instructions and SIZE_CAP_KEY in instructions


@pytest.fixture(scope="module")
def answers(complete_release: Release) -> dict[str, dict[str, Any]]:
    """Every tool's default answer on the complete build."""
    return {name: call_tool(complete_release, name, TEST_CALLS[name]) for name in TOOL_NAMES}


@pytest.mark.parametrize("name", TOOL_NAMES)
def test_every_answer_fits_the_cap_and_searches_the_search_budget(
    answers: dict[str, dict[str, Any]], name: str
) -> None:
    payload = answers[name]
    assert "error" not in payload, payload["error"]
    size = payload_bytes(payload)
    assert size <= PAYLOAD_MAX_BYTES and SIZE_CAP_KEY not in payload, (name, size)
    if name in SEARCH_TOOLS:
        assert size <= SEARCH_ANSWER_MAX_BYTES, (name, size)


def test_sizes_are_bytes_with_a_human_string(answers: dict[str, dict[str, Any]]) -> None:
    sized = 0
    for name, payload in answers.items():
        for node in json_objects(payload):
            assert not {"KB", "MB", "GB", "size_mb", "size_gb"} & set(node), (name, node)
            if "human" in node:
                assert set(node) == {"bytes", "human"}, (name, node)
                sized += 1
    assert sized  # get_stats, get_collection and build_cohort report sizes


def test_an_answer_over_the_cap_is_cut_to_fit_and_says_so(complete_release: Release) -> None:
    sql = "SELECT *, repeat(concept_name, 4) AS padded FROM omop_concept ORDER BY concept_id"
    payload = call_tool(complete_release, "run_sql", {"sql": sql, "max_rows": 1000})
    cap = payload[SIZE_CAP_KEY]
    assert payload_bytes(payload) <= PAYLOAD_MAX_BYTES
    assert cap["list"] == "rows" and cap["total"] == 1000
    assert 0 < cap["returned"] == len(payload["rows"]) < 1000
    assert cap["next_offset"] is None and "narrow" in cap["hint"]


def test_a_cut_list_pages_on_with_next_offset(complete_release: Release) -> None:
    """A paging tool's answer cut to a small cap: the next call at ``next_offset``
    starts exactly where the cut one ended."""
    whole = call_tool(complete_release, "list_collections", {"limit": 40})
    ids = [item["collection_id"] for item in whole["collections"]]
    cut = fit_payload(json.loads(json.dumps(whole)), 0, max_bytes=payload_bytes(whole) // 3)
    cap = cut[SIZE_CAP_KEY]
    assert cap["list"] == "collections" and cap["total"] == 40
    kept = [item["collection_id"] for item in cut["collections"]]
    assert kept == ids[: cap["returned"]] and cap["next_offset"] == cap["returned"]
    following = call_tool(
        complete_release, "list_collections", {"limit": 40, "offset": cap["next_offset"]}
    )
    assert [item["collection_id"] for item in following["collections"]][:5] == ids[
        cap["returned"] : cap["returned"] + 5
    ]
