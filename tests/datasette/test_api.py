"""The REST adapter: the same calls give the same payloads in the core, over MCP and
at /-/api (GET and POST); typed errors carry their HTTP status; the OpenAPI document
matches the tool registry."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import pytest
from datasette.app import Datasette
from mcp import Client

from metabundle.datasette_plugin.api import payload_status
from metabundle.datasette_plugin.openapi import REF_TEMPLATE
from metabundle.mcp.server import build_server
from metabundle.search.errors import HTTP_STATUS, INVALID_REQUEST, ToolError
from metabundle.search.params import parameters_schema
from metabundle.search.release import Release
from metabundle.search.tools import all_tools, call_tool
from tests.datasette.conftest import get_json

pytestmark = pytest.mark.anyio

CALLS = [
    ("get_release_info", {}),
    ("list_tables", {}),
    ("get_table_schema", {"table": "ukb_field"}),
    ("run_sql", {"sql": "SELECT field_id, title FROM ukb_field ORDER BY 1", "max_rows": 3}),
    ("search_all", {"query": "body mass index", "method": "keyword", "limit": 5}),
    ("search_all", {"query": "heavy drinking", "sources": ["ukb", "aou"], "limit": 4}),
    ("search_all", {"query": "lung CT", "kinds": ["collection"], "method": "hybrid"}),
]

BAD_ARGUMENTS = [
    ("search_all", {"query": "   "}),
    ("search_all", {}),
    ("search_all", {"query": "lung", "bogus": 1}),
    ("search_all", {"query": "lung", "method": "fuzzy"}),
    ("search_all", {"query": "lung", "sources": ["nowhere"]}),
    ("run_sql", {"sql": "DROP TABLE ukb_field"}),
    ("run_sql", {"sql": "SELECT 1", "max_rows": "many"}),
    ("list_tables", {"verbose": "yes"}),
]


def query_string(arguments: dict[str, Any]) -> str:
    """Arguments as GET parameters: lists repeated, scalars as text."""
    pairs: list[tuple[str, str]] = []
    for name, value in arguments.items():
        values = value if isinstance(value, list) else [value]
        pairs += [(name, str(item)) for item in values]
    return urlencode(pairs)


def core(release: Release, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """The core's payload, as JSON carries it."""
    return json.loads(json.dumps(call_tool(release, name, arguments)))


async def mcp_payload(release: Release, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    async with Client(build_server(release)) as client:
        result = await client.call_tool(name, arguments)
    payload = json.loads(result.content[0].text)
    assert payload == result.structured_content
    assert result.is_error == ("error" in payload)
    return payload


async def rest_get(datasette: Datasette, name: str, arguments: dict[str, Any]) -> tuple[int, Any]:
    response = await datasette.client.get(f"/-/api/{name}?{query_string(arguments)}")
    assert response.headers["content-type"].startswith("application/json")
    return response.status_code, response.json()


async def rest_post(datasette: Datasette, name: str, body: Any) -> tuple[int, Any]:
    response = await datasette.client.post(f"/-/api/{name}", json=body)
    return response.status_code, response.json()


@pytest.mark.parametrize(("name", "arguments"), CALLS)
async def test_core_mcp_and_rest_return_the_same_payload(
    datasette: Datasette, release: Release, name: str, arguments: dict[str, Any]
) -> None:
    expected = core(release, name, arguments)
    assert "error" not in expected
    assert await mcp_payload(release, name, arguments) == expected
    assert await rest_get(datasette, name, arguments) == (200, expected)
    assert await rest_post(datasette, name, arguments) == (200, expected)


@pytest.mark.parametrize(("name", "arguments"), BAD_ARGUMENTS)
async def test_errors_are_the_core_errors_with_their_http_status(
    datasette: Datasette, release: Release, name: str, arguments: dict[str, Any]
) -> None:
    expected = core(release, name, arguments)
    assert expected["error"]["code"] == INVALID_REQUEST
    assert await mcp_payload(release, name, arguments) == expected
    assert await rest_post(datasette, name, arguments) == (400, expected)
    assert await rest_get(datasette, name, arguments) == (400, expected)


async def test_list_parameters_repeat_separate_by_commas_or_come_as_json(
    datasette: Datasette, release: Release
) -> None:
    expected = core(release, "search_all", {"query": "asthma", "sources": ["ukb", "dbgap"]})
    as_json = "sources=" + quote(json.dumps(["ukb", "dbgap"]))
    for query in (
        "sources=ukb&sources=dbgap",
        "sources=ukb,dbgap",
        "sources=ukb, dbgap",
        as_json,
        'sources=["ukb","dbgap"]',
    ):
        payload = await get_json(datasette, f"/-/api/search_all?query=asthma&{query}")
        assert payload == expected
    assert {item["source"] for item in expected["results"]} <= {"ukb", "dbgap"}


async def test_a_scalar_given_twice_is_refused(datasette: Datasette) -> None:
    payload = await get_json(datasette, "/-/api/search_all?query=a&query=b", status=400)
    assert payload["error"]["code"] == INVALID_REQUEST
    assert "'query'" in payload["error"]["message"]


async def test_unknown_tools_are_invalid_and_unknown_tables_not_found(
    datasette: Datasette,
) -> None:
    payload = await get_json(datasette, "/-/api/no_such_tool", status=400)
    assert payload["error"]["code"] == INVALID_REQUEST
    assert payload["error"]["details"]["tools"] == sorted(s.name for s in all_tools())
    payload = await get_json(datasette, "/-/api/get_table_schema?table=ukb_feld", status=404)
    assert "ukb_field" in payload["error"]["details"]["suggestions"]


async def test_a_body_that_is_not_json_or_not_an_object_is_refused(datasette: Datasette) -> None:
    response = await datasette.client.post("/-/api/search_all", content=b"query=lung")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == INVALID_REQUEST
    assert await rest_post(datasette, "search_all", ["lung"]) == (
        400,
        {"error": {"code": INVALID_REQUEST, "message": "search_all: arguments must be an object."}},
    )


async def test_other_methods_are_refused(datasette: Datasette) -> None:
    response = await datasette.client.request("DELETE", "/-/api/search_all")
    assert response.status_code == 405
    assert response.headers["allow"] == "GET, POST"
    assert response.json()["error"]["code"] == INVALID_REQUEST


def test_every_error_code_has_its_status() -> None:
    for code, status in HTTP_STATUS.items():
        assert payload_status(ToolError(code, "x.").payload()) == status
    assert payload_status({"results": []}) == 200


async def test_search_json_is_the_search_all_payload(
    datasette: Datasette, release: Release
) -> None:
    arguments = {"query": "breast MRI", "sources": ["idc"], "limit": 3}
    payload = await get_json(datasette, f"/-/search.json?{query_string(arguments)}")
    assert payload == core(release, "search_all", arguments)


async def test_the_api_index_lists_every_tool(datasette: Datasette) -> None:
    index = await get_json(datasette, "/-/api")
    assert [t["name"] for t in index["tools"]] == [spec.name for spec in all_tools()]
    assert index["openapi"] == "/-/api/openapi.json"


def _resolve(document: dict[str, Any], ref: str) -> Any:
    assert ref.startswith("#/")
    node: Any = document
    for part in ref[2:].split("/"):
        node = node[part]
    return node


def _refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        own = [node["$ref"]] if "$ref" in node else []
        return own + [r for v in node.values() for r in _refs(v)]
    if isinstance(node, list):
        return [r for v in node for r in _refs(v)]
    return []


async def test_openapi_describes_every_tool_from_its_model(
    datasette: Datasette, release: Release
) -> None:
    document = await get_json(datasette, "/-/api/openapi.json")
    assert document["openapi"].startswith("3.1")
    assert release.version in document["info"]["description"]
    specs = all_tools()
    assert set(document["paths"]) == {f"/-/api/{spec.name}" for spec in specs}
    for spec in specs:
        item = document["paths"][f"/-/api/{spec.name}"]
        schema = parameters_schema(spec.params, REF_TEMPLATE)
        schema.pop("$defs", None)
        assert item["post"]["requestBody"]["content"]["application/json"]["schema"] == schema
        parameters = {p["name"]: p for p in item["get"]["parameters"]}
        assert set(parameters) == set(schema.get("properties", {}))
        for name, parameter in parameters.items():
            assert parameter["in"] == "query"
            assert parameter["required"] == (name in schema.get("required", []))
        assert item["get"]["description"] == spec.full_description  # guide included
        for status in {str(s) for s in HTTP_STATUS.values()} | {"200"}:
            assert status in item["get"]["responses"] and status in item["post"]["responses"]
    for ref in _refs(document):
        assert _resolve(document, ref), ref
    sources = document["paths"]["/-/api/search_all"]["get"]["parameters"]
    (listed,) = [p for p in sources if p["name"] == "sources"]
    assert listed["explode"] is True and "commas" in listed["description"]
    assert listed["schema"]["type"] == "array" and "anyOf" not in listed["schema"]


async def test_without_a_release_browsing_works_and_the_api_says_why(
    release_path: Path, tmp_path: Path
) -> None:
    alone = tmp_path / "metabundle.sqlite"  # as `datasette publish` ships it: no release
    os.link(release_path / "metabundle.sqlite", alone)
    instance = Datasette(immutables=[str(alone)])
    await instance.invoke_startup()
    payload = await get_json(instance, "/-/api/search_all?query=asthma", status=500)
    assert payload["error"]["code"] == "internal_error"
    assert "metabundle datasette" in payload["error"]["message"]
    page = await instance.client.get("/-/search?query=asthma")
    assert page.status_code == 500 and "<strong>internal_error</strong>" in page.text
    assert (await instance.client.get("/metabundle/ukb_field?_size=1")).status_code == 200
    for database in instance.databases.values():
        database.close()
