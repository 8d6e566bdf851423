"""Answers a reader can trust, through the real adapters: what changes the conclusion
is said where the reader looks.

``metabundle search`` prints a low-confidence answer as such, names the study and
dataset of every dbGaP hit (so hits of one title can be told apart) and says when
a limit was clamped; the clamping note is one typed entry of the core's payload, so
the MCP server (a ``metabundle mcp`` process driven by fastmcp's client) and the REST
adapter (``/-/api``) return it too. An unknown parameter is named, with the closest
valid one, by the CLI's ``call``, MCP and REST alike.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from datasette.app import Datasette
from fastmcp import Client
from fastmcp.client.transports import StdioTransport

from metabundle.search.errors import INVALID_REQUEST
from metabundle.search.release import Release
from metabundle.search.tools import CLAMPED_KEY, call_tool
from tests.support.build import Build
from tests.support.cli import clean_env, metabundle_command, run_cli
from tests.support.datasette_instance import running_datasette

CLAMPED = {"query": "body mass index", "method": "keyword", "limit": 500}
CLAMPED_NOTE = {
    "parameter": "limit",
    "requested": 500,
    "used": 50,
    "message": "limit 500 is above the maximum 50; 50 was used.",
}
MISSPELT = {"qurey": "bmi"}
DID_YOU_MEAN = "search_all: unknown parameter 'qurey'; did you mean 'query'?"
HIT_LINE = "  1. ["


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def rest(mirror_build: Build) -> AsyncIterator[Datasette]:
    """The REST adapter of ``metabundle datasette``, started in-process."""
    async with running_datasette(mirror_build.release) as instance:
        yield instance


async def mcp_payloads(release_path: Path, calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The payloads a ``metabundle mcp`` process answers to ``search_all`` ``calls``."""
    command, *args = metabundle_command()
    transport = StdioTransport(
        command, [*args, "mcp", "--release", str(release_path)], env=clean_env()
    )
    payloads = []
    async with Client(transport) as client:
        for arguments in calls:
            result = await client.call_tool_mcp("search_all", arguments)
            payload = json.loads(result.content[0].text)
            assert result.is_error == ("error" in payload)
            payloads.append(payload)
    return payloads


def search_text(mirror_build: Build, *args: str) -> list[str]:
    """The lines ``metabundle search ARGS`` prints for a reader."""
    result = run_cli("search", *args, "--release", str(mirror_build.release))
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def test_a_nonsense_query_is_printed_as_low_confidence(
    mirror_build: Build, release: Release
) -> None:
    payload = call_tool(release, "search_all", {"query": "xyzzy plugh"})
    assert payload["retrieval"]["low_confidence"] is True
    lines = search_text(mirror_build, "xyzzy plugh")
    warning = next(i for i, line in enumerate(lines) if line.startswith("low confidence: "))
    first_hit = next(i for i, line in enumerate(lines) if line.startswith(HIT_LINE))
    assert warning < first_hit
    assert payload["retrieval"]["low_confidence_rule"] in lines[warning]
    confident = search_text(mirror_build, "body mass index", "--limit", "3")
    assert not any(line.startswith("low confidence") for line in confident)


def test_dbgap_hits_name_their_study_and_dataset(mirror_build: Build, release: Release) -> None:
    args = ("body mass index", "--source", "dbgap", "--kind", "variable", "--limit", "10")
    payload = call_tool(
        release,
        "search_all",
        {"query": args[0], "sources": ["dbgap"], "kinds": ["variable"], "limit": 10},
    )
    titles = [item["title"] for item in payload["results"]]
    assert len(set(titles)) < len(titles)  # hits of one title: the case to tell apart
    studies = dict(release.query("SELECT study_accession, name FROM dbgap_study"))
    datasets = dict(release.query("SELECT dataset_accession, name FROM dbgap_dataset"))
    lines = search_text(mirror_build, *args)
    shown = []
    for item in payload["results"]:
        at = lines.index(f"{item['rank']:>3}. [dbgap/variable] {item['id']}  {item['title']}")
        study, dataset = item["study_id"], item["parent_id"]
        context = f"study: {studies[study]} ({study}); dataset: {datasets[dataset]} ({dataset})"
        assert lines[at + 1] == f"     {context}"
        shown.append((item["title"], context))
    assert len(set(shown)) == len(shown)


def test_a_clamped_limit_is_noted_in_the_cli_text(mirror_build: Build) -> None:
    lines = search_text(mirror_build, CLAMPED["query"], "--method", "keyword", "--limit", "500")
    note = lines.index(f"note: {CLAMPED_NOTE['message']}")
    assert note < next(i for i, line in enumerate(lines) if line.startswith(HIT_LINE))
    assert sum(line.startswith(" ") and ". [" in line for line in lines) == 50
    assert not any(line.startswith("note:") for line in search_text(mirror_build, "bmi"))


@pytest.mark.anyio
async def test_the_clamping_note_is_in_the_mcp_and_rest_payloads(
    mirror_build: Build, release: Release, rest: Datasette
) -> None:
    expected = json.loads(json.dumps(call_tool(release, "search_all", CLAMPED)))
    assert expected[CLAMPED_KEY] == [CLAMPED_NOTE] and len(expected["results"]) == 50
    default = {"query": CLAMPED["query"], "method": "keyword"}
    assert CLAMPED_KEY not in call_tool(release, "search_all", default)
    over_mcp, unclamped = await mcp_payloads(mirror_build.release, [CLAMPED, default])
    assert over_mcp == expected and CLAMPED_KEY not in unclamped
    got = await rest.client.get("/-/api/search_all", params={**CLAMPED, "limit": "500"})
    assert got.status_code == 200 and got.json() == expected
    posted = await rest.client.post("/-/api/search_all", json=CLAMPED)
    assert posted.status_code == 200 and posted.json() == expected


def test_an_unknown_parameter_is_named_with_the_closest_one_by_the_cli(
    mirror_build: Build,
) -> None:
    result = run_cli(
        "call", "search_all", json.dumps(MISSPELT), "--release", str(mirror_build.release)
    )
    assert result.returncode == 1
    error = json.loads(result.stdout)["error"]
    assert error == {"code": INVALID_REQUEST, "message": DID_YOU_MEAN}


@pytest.mark.anyio
async def test_an_unknown_parameter_is_named_with_the_closest_one_over_mcp_and_rest(
    mirror_build: Build, release: Release, rest: Datasette
) -> None:
    expected = {"error": {"code": INVALID_REQUEST, "message": DID_YOU_MEAN}}
    assert call_tool(release, "search_all", MISSPELT) == expected
    assert await mcp_payloads(mirror_build.release, [MISSPELT]) == [expected]
    got = await rest.client.get("/-/api/search_all", params=MISSPELT)
    assert got.status_code == 400 and got.json() == expected
    posted = await rest.client.post("/-/api/search_all", json=MISSPELT)
    assert posted.status_code == 400 and posted.json() == expected


@pytest.mark.parametrize(
    ("name", "arguments", "message"),
    [
        (
            "get_ukb_field",
            {"field": 21001},
            "get_ukb_field: unknown parameter 'field'; did you mean 'field_id'?",
        ),
        (
            "search_all",
            {"qurey": "bmi", "limit": "many"},
            "search_all: unknown parameter 'qurey' (and 1 more problem); did you mean 'query'?",
        ),
        (
            "search_all",
            {"q": "bmi"},
            "search_all: unknown parameter 'q' (and 1 more problem); its parameters are "
            "query, method, sources, kinds, limit, explain.",
        ),
        (
            "list_tables",
            {"verbose": True},
            "list_tables: unknown parameter 'verbose'; it takes no parameters.",
        ),
        ("search_all", {}, "search_all: parameter 'query': Field required."),
    ],
)
def test_the_unknown_parameter_comes_first_with_a_hint(
    release: Release, name: str, arguments: dict[str, Any], message: str
) -> None:
    assert call_tool(release, name, arguments) == {
        "error": {"code": INVALID_REQUEST, "message": message}
    }
