"""List and object arguments sent as text, by an independent MCP client.

Some clients (the MCP Inspector among them) send every argument as text. fastmcp's
client drives the real ``metabundle mcp`` process over stdio and calls every tool that
has a list or object parameter three ways: the JSON list or object, the same value as
JSON-encoded text and, for lists, as comma-separated text; and it calls every
registered tool with its representative call (:data:`EXAMPLE_CALLS`), list and object
arguments also as text. The payloads must be identical to the core's, and the
published schemas must type those parameters as plain ``array`` or ``object`` (no
``anyOf`` with ``null``), saying the text forms are accepted.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport

from metabundle.datasette_plugin.serve import make_datasette
from metabundle.search.params import ARRAY_FORMS, OBJECT_FORMS, parameters_schema
from metabundle.search.release import Release
from metabundle.search.tools import all_tools, call_tool
from tests.support.cli import clean_env, metabundle_command
from tests.support.examples import TEST_CALLS
from tests.support.idc_generated import CLINICAL_TABLE

pytestmark = pytest.mark.anyio

CT = {"Modality": ["CT"]}


def container_parameters() -> dict[str, dict[str, str]]:
    """Tool → its list and object parameters with their published type."""
    found: dict[str, dict[str, str]] = {}
    for spec in all_tools():
        for name, schema in parameters_schema(spec.params).get("properties", {}).items():
            kinds = {schema.get("type")} | {o.get("type") for o in schema.get("anyOf", [])}
            for kind in kinds & {"array", "object"}:
                found.setdefault(spec.name, {})[name] = kind
    return found


def ancestors(release: Release) -> list[int]:
    """Two concepts with many descendants in the release's vocabulary."""
    rows = release.query(
        "SELECT ancestor_concept_id FROM omop_concept_ancestor GROUP BY 1 "
        "ORDER BY count(*) DESC, 1 LIMIT 2"
    )
    return [int(row[0]) for row in rows]


def list_form_calls(release: Release) -> dict[str, dict[str, Any]]:
    """One valid call of every tool with a list or object parameter, every such
    parameter given as a JSON list or object."""
    non_standard = [
        int(row[0])
        for row in release.query(
            "SELECT concept_id FROM omop_concept WHERE standard_concept IS NULL "
            "AND concept_id > 0 ORDER BY concept_id LIMIT 3"
        )
    ]
    return {
        "search_all": {
            "query": "lung",
            "method": "keyword",
            "sources": ["idc", "ukb"],
            "kinds": ["collection", "field"],
            "limit": 5,
        },
        "concept_navigate_to_standard": {"concept_ids": non_standard},
        "concept_ground": {"query": "diabetes", "limit": 3, "parent_ids": ancestors(release)},
        "get_attribute_values": {"attribute": "BodyPartExamined", "filters": CT, "limit": 5},
        "build_cohort": {"filters": CT, "limit": 3},
        "get_citations": {"filters": CT, "limit": 3},
        "get_licenses": {"filters": CT},
        "get_cohort_urls": {"filters": {"Modality": ["US"], "collection_id": ["cptac_pda"]}},
        "find_variables_across_studies": {
            "query": "systolic blood pressure",
            "studies": ["phs000286", "phs001252"],
            "per_study": 2,
        },
        "concept_set_resolve": {
            "expression": {
                "items": [{"concept": {"CONCEPT_ID": 201826}, "includeDescendants": True}]
            }
        },
        "get_clinical_values": {
            "table": CLINICAL_TABLE,
            "columns": ["stage", "survival_days"],
            "filters": CT,
        },
    }


def stdio_transport(release_path: Path) -> StdioTransport:
    """fastmcp's transport to a ``metabundle mcp`` process serving ``release_path``."""
    command, *args = metabundle_command()
    return StdioTransport(command, [*args, "mcp", "--release", str(release_path)], env=clean_env())


def text_forms(value: Any) -> list[str]:
    """The text forms of a list or object argument."""
    forms = [json.dumps(value)]
    if isinstance(value, list):
        forms.append(",".join(str(item) for item in value))
    return forms


def test_the_calls_cover_every_list_and_object_parameter(release: Release) -> None:
    calls = list_form_calls(release)
    expected = container_parameters()
    assert set(calls) == set(expected)
    for name, parameters in expected.items():
        assert set(parameters) <= set(calls[name]), name


def test_published_schemas_are_plain_and_name_the_text_forms() -> None:
    for tool, parameters in container_parameters().items():
        spec = next(spec for spec in all_tools() if spec.name == tool)
        properties = parameters_schema(spec.params)["properties"]
        for name, kind in parameters.items():
            schema = properties[name]
            assert "anyOf" not in schema and schema["type"] == kind, (tool, name)
            forms = ARRAY_FORMS if kind == "array" else OBJECT_FORMS
            assert schema["description"].endswith(forms), (tool, name)


def test_a_malformed_text_form_is_refused_in_the_parameter_name(release: Release) -> None:
    payload = call_tool(release, "get_licenses", {"filters": "{Modality: CT"})
    assert payload["error"]["code"] == "invalid_request"
    assert "'filters'" in payload["error"]["message"]
    assert "\n" not in payload["error"]["message"]


async def test_text_arguments_over_stdio_answer_as_lists_and_objects(
    release_path: Path, release: Release
) -> None:
    transport = stdio_transport(release_path)
    calls = list_form_calls(release)
    async with Client(transport) as client:
        for tool, arguments in calls.items():
            reference = await client.call_tool_mcp(tool, arguments)
            expected = json.loads(reference.content[0].text)
            assert not reference.is_error, (tool, expected)
            assert expected == json.loads(json.dumps(call_tool(release, tool, arguments)))
            for name, value in arguments.items():
                if not isinstance(value, list | dict):
                    continue
                for text in text_forms(value):
                    result = await client.call_tool_mcp(tool, {**arguments, name: text})
                    assert not result.is_error, (tool, name, text, result.content[0].text)
                    assert json.loads(result.content[0].text) == expected, (tool, name, text)


async def test_every_tool_answers_the_independent_client_as_the_core(
    release_path: Path, release: Release
) -> None:
    transport = stdio_transport(release_path)
    async with Client(transport) as client:
        for spec in all_tools():
            arguments = TEST_CALLS[spec.name]
            expected = json.loads(json.dumps(call_tool(release, spec.name, arguments)))
            assert "error" not in expected, (spec.name, expected)
            forms = [arguments] + [
                {**arguments, name: text}
                for name, value in arguments.items()
                if isinstance(value, list | dict)
                for text in text_forms(value)
            ]
            for sent in forms:
                result = await client.call_tool_mcp(spec.name, sent)
                assert not result.is_error, (spec.name, sent, result.content[0].text)
                assert json.loads(result.content[0].text) == expected, (spec.name, sent)


DEEP_TEXT = "[" * 5000 + "]" * 5000


def test_deeply_nested_text_is_refused_in_the_parameters_name(release: Release) -> None:
    """Nesting is bounded before parsing: no parser recursion, no internal_error."""
    calls = list_form_calls(release)
    for tool, parameters in container_parameters().items():
        for name, kind in parameters.items():
            text = DEEP_TEXT if kind == "array" else '{"a":' * 5000 + "1" + "}" * 5000
            payload = call_tool(release, tool, {**calls[tool], name: text})
            assert payload["error"]["code"] == "invalid_request", (tool, name, payload)
            assert f"parameter '{name}'" in payload["error"]["message"], (tool, name)


async def test_deeply_nested_text_over_stdio_and_rest(release_path: Path) -> None:
    arguments = {"query": "lung", "sources": DEEP_TEXT}
    async with Client(stdio_transport(release_path)) as client:
        result = await client.call_tool_mcp("search_all", arguments)
    assert json.loads(result.content[0].text)["error"]["code"] == "invalid_request"
    datasette = make_datasette(release_path)  # the instance `metabundle datasette` serves
    await datasette.invoke_startup()
    response = await datasette.client.post("/-/api/search_all", json=arguments)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_request"
