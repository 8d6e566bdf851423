"""A release built without some sources offers none of their tools.

The dbGaP-only ``--profile dev`` release lacks UK Biobank, All of Us, OMOP and Imaging
Data Commons: their tools are not listed by the MCP server, the REST adapter or
``metabundle call``, and a call to one, through the core, MCP or ``/-/api``, answers
``not_in_release`` with the release's coverage and the build flag that adds the
source (``details.remedy`` the rebuild), never an empty success; so does a search
restricted to one of them, and ``metabundle search`` prints the message and the remedy.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from datasette.app import Datasette
from mcp import Client

from metabundle.mcp.server import build_server
from metabundle.search.errors import HTTP_STATUS, NOT_IN_RELEASE
from metabundle.search.release import Release
from metabundle.search.tools import all_tools, call_tool, release_tools
from tests.support.build import Build
from tests.support.cli import run_cli
from tests.support.datasette_instance import running_datasette

PRESENT = ("dbgap",)
ABSENT_CALLS = [
    ("search_aou_catalog", {"query": "smoking"}),
    ("get_ukb_field", {"field_id": 21001}),
    ("concept_get", {"concept_id": 201826}),
    ("list_collections", {}),
    ("search_idc", {"query": "lung"}),
]


@pytest.fixture(scope="module")
def partial(dev_build: Build) -> Iterator[Release]:
    with Release.open(dev_build.release) as opened:
        yield opened


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def datasette(dev_build: Build) -> AsyncIterator[Datasette]:
    async with running_datasette(dev_build.release) as instance:
        yield instance


def offered_names() -> list[str]:
    return [spec.name for spec in all_tools() if spec.source is None or spec.source in PRESENT]


def absent_error(payload: dict[str, Any], source: str) -> dict[str, Any]:
    assert "error" in payload, payload
    error = payload["error"]
    assert error["code"] == NOT_IN_RELEASE
    details = error["details"]
    assert details["source"] == source
    assert details["sources_in_release"] == ["dbgap"]
    assert details["coverage"] == {"profile": "dev", "complete": False}
    assert details["flag"] == "--sources " + ",".join(sorted(["dbgap", source]))
    assert details["remedy"] == f"rebuild with `metabundle build {details['flag']}`"
    assert details["flag"] in error["message"] and "\n" not in error["message"]
    return error


def test_the_release_offers_only_the_tools_of_its_sources(
    partial: Release, release: Release
) -> None:
    assert sorted(partial.manifest["sources"]) == list(PRESENT)
    assert [spec.name for spec in release_tools(partial)] == offered_names()
    assert "search_aou_catalog" not in offered_names() and "search_all" in offered_names()
    assert release_tools(release) == all_tools()  # the shared build has every source


def test_every_tool_of_an_absent_source_answers_not_in_release(partial: Release) -> None:
    absent = [spec for spec in all_tools() if spec.source not in (None, *PRESENT)]
    assert {spec.source for spec in absent} == {"ukb", "aou", "omop", "idc"}
    for spec in absent:
        absent_error(call_tool(partial, spec.name, {}), str(spec.source))
    assert HTTP_STATUS[NOT_IN_RELEASE] == 404


@pytest.mark.parametrize(("name", "arguments"), ABSENT_CALLS)
def test_a_well_formed_call_is_not_an_empty_success(
    partial: Release, name: str, arguments: dict[str, Any]
) -> None:
    spec = next(spec for spec in all_tools() if spec.name == name)
    absent_error(call_tool(partial, name, arguments), str(spec.source))


def test_the_tools_of_present_sources_still_answer(partial: Release) -> None:
    payload = call_tool(partial, "resolve_dbgap_study", {"query": "phs000001"})
    assert "error" not in payload and payload["recommended"]["study_id"].startswith("phs000001")
    info = call_tool(partial, "get_release_info", {})
    assert "error" not in info


def test_a_search_of_an_absent_source_answers_not_in_release(partial: Release) -> None:
    payload = call_tool(partial, "search_all", {"query": "lung", "sources": ["dbgap", "idc"]})
    error = absent_error(payload, "idc")
    assert error["message"].startswith("search_all: this release holds no idc data")
    unknown = call_tool(partial, "search_all", {"query": "lung", "sources": ["nowhere"]})
    assert unknown["error"]["code"] == "invalid_request"


def test_metabundle_search_prints_the_message_and_the_remedy(dev_build: Build) -> None:
    release = str(dev_build.release)
    result = run_cli("search", "lung", "--source", "idc", "--release", release)
    assert result.returncode == 1 and result.stdout == ""
    message, remedy = result.stderr.splitlines()
    assert message.startswith("metabundle: search_all: this release holds no idc data")
    assert remedy == "to add it: rebuild with `metabundle build --sources dbgap,idc`."


def test_metabundle_call_lists_only_the_release_tools(dev_build: Build) -> None:
    result = run_cli("call", "--release", str(dev_build.release))
    assert result.returncode == 0, result.stderr
    assert [line.split()[0] for line in result.stdout.splitlines()] == offered_names()


@pytest.mark.anyio
async def test_mcp_does_not_list_them_and_a_call_is_the_core_error(partial: Release) -> None:
    async with Client(build_server(partial)) as client:
        listed = [tool.name for tool in (await client.list_tools()).tools]
        result = await client.call_tool("search_aou_catalog", {"query": "smoking"})
        instructions = client.instructions or ""
    assert listed == offered_names()
    assert result.is_error
    payload = json.loads(result.content[0].text)
    assert payload == call_tool(partial, "search_aou_catalog", {"query": "smoking"})
    absent_error(payload, "aou")
    assert "- aou:" not in instructions and "- dbgap:" in instructions


@pytest.mark.anyio
async def test_the_rest_adapter_does_not_list_them_and_answers_404(
    datasette: Datasette, partial: Release
) -> None:
    index = (await datasette.client.get("/-/api")).json()
    assert [tool["name"] for tool in index["tools"]] == offered_names()
    document = (await datasette.client.get("/-/api/openapi.json")).json()
    assert set(document["paths"]) == {f"/-/api/{name}" for name in offered_names()}
    response = await datasette.client.get("/-/api/search_aou_catalog?query=smoking")
    assert response.status_code == 404
    expected = call_tool(partial, "search_aou_catalog", {"query": "smoking"})
    assert response.json() == json.loads(json.dumps(expected))
    absent_error(response.json(), "aou")


@pytest.mark.anyio
async def test_datasette_pages_offer_only_the_present_sources(datasette: Datasette) -> None:
    index = (await datasette.client.get("/")).text
    assert index.count('class="source-card"') == 1 and 'data-source="dbgap"' in index
    assert (await datasette.client.get("/-/sources/dbgap")).status_code == 200
    assert (await datasette.client.get("/-/sources/idc")).status_code == 404
    assert (await datasette.client.get("/-/dashboards/dbgap")).status_code == 200
    assert (await datasette.client.get("/-/dashboards/idc")).status_code == 404
