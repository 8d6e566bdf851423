"""Every tool answers with its response model, and the model is the payload's exact
description: what the registry returns, what the OpenAPI document publishes."""

from __future__ import annotations

import typing
from typing import Any

import jsonschema
import pytest
from pydantic import BaseModel

from metabundle.datasette_plugin.openapi import openapi_document
from metabundle.search.budget import SIZE_CAP_KEY
from metabundle.search.examples import EXAMPLE_CALLS
from metabundle.search.payload import ResponseModel, to_payload
from metabundle.search.release import Release
from metabundle.search.tools import CLAMPED_KEY, all_tools, call_tool

SPECS = {spec.name: spec for spec in all_tools()}
ENVELOPE = {"data_notice", SIZE_CAP_KEY, CLAMPED_KEY}
UNMIRRORED = {"get_clinical_table_schema", "get_clinical_values"}
"""Tools whose example reads IDC clinical tables, which the mirror lacks: their payloads
are checked on generated tables in tests/tools/test_idc_indices.py."""


def _models(model: type[BaseModel], seen: set[type[BaseModel]]) -> set[type[BaseModel]]:
    """``model`` and every model nested in its fields."""
    if model in seen:
        return seen
    seen.add(model)
    for field in model.model_fields.values():
        pending = [field.annotation]
        while pending:
            annotation = pending.pop()
            if isinstance(annotation, type) and issubclass(annotation, BaseModel):
                _models(annotation, seen)
            pending.extend(typing.get_args(annotation))
    return seen


def _mentions_any(annotation: Any) -> bool:
    return annotation is Any or any(_mentions_any(arg) for arg in typing.get_args(annotation))


@pytest.mark.parametrize("name", sorted(SPECS))
def test_every_tool_returns_its_response_model(name: str) -> None:
    spec = SPECS[name]
    assert spec.response is not None and issubclass(spec.response, ResponseModel)
    assert typing.get_type_hints(spec.handler)["return"] is spec.response


@pytest.mark.parametrize("name", sorted(SPECS))
def test_response_models_declare_every_key_and_no_any(name: str) -> None:
    for model in _models(SPECS[name].response, set()):
        assert issubclass(model, ResponseModel), f"{model.__name__} allows undeclared keys"
        for field_name, field in model.model_fields.items():
            assert not _mentions_any(field.annotation), f"{model.__name__}.{field_name} is Any"


@pytest.mark.parametrize("name", sorted(SPECS))
def test_no_response_model_declares_a_key_the_registry_adds(name: str) -> None:
    assert not ENVELOPE & set(SPECS[name].response.model_fields)


@pytest.fixture(scope="module")
def response_schemas(release: Release) -> dict[str, dict[str, Any]]:
    """Each tool's published 200 schema, with the document's shared definitions."""
    document = openapi_document(all_tools(), "/-/api", release.version)
    shared = document["components"]["schemas"]
    schemas = {}
    for path, item in document["paths"].items():
        schema = item["post"]["responses"]["200"]["content"]["application/json"]["schema"]
        schemas[path.rsplit("/", 1)[1]] = {**schema, "components": {"schemas": shared}}
    return schemas


@pytest.mark.parametrize("name", sorted(set(EXAMPLE_CALLS) - UNMIRRORED))
def test_payloads_are_their_models_and_match_the_published_schema(
    name: str, release: Release, response_schemas: dict[str, dict[str, Any]]
) -> None:
    payload = call_tool(release, name, EXAMPLE_CALLS[name])
    assert "error" not in payload, payload
    body = {key: value for key, value in payload.items() if key not in ENVELOPE}
    # the model reads the payload back exactly: same keys, same order, same values
    assert list(to_payload(SPECS[name].response.model_validate(body)).items()) == list(body.items())
    jsonschema.validate(payload, response_schemas[name])


def test_a_clamped_answer_matches_the_published_schema(
    release: Release, response_schemas: dict[str, dict[str, Any]]
) -> None:
    payload = call_tool(release, "list_collections", {"limit": 10**6})
    assert [entry["used"] for entry in payload[CLAMPED_KEY]] == [100]
    jsonschema.validate(payload, response_schemas["list_collections"])
    with pytest.raises(jsonschema.ValidationError):
        entry = {**payload[CLAMPED_KEY][0], "used": "100"}
        jsonschema.validate({**payload, CLAMPED_KEY: [entry]}, response_schemas["list_collections"])


def test_an_undeclared_key_breaks_the_published_schema(
    release: Release, response_schemas: dict[str, dict[str, Any]]
) -> None:
    payload = call_tool(release, "list_tables", {})
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**payload, "surprise": 1}, response_schemas["list_tables"])
    with pytest.raises(ValueError):
        SPECS["list_tables"].response.model_validate({"tables": [], "surprise": 1})
