"""The OpenAPI 3.1 description of ``/-/api``, generated from the tool registry.

Each tool becomes one path with a GET operation (its parameters as query parameters)
and a POST operation (a JSON body with the parameters model's schema); its 200
response is its response model (:mod:`metabundle.search.payload`) plus the keys every
answer may carry (``data_notice``, ``size_cap``, ``clamped``). Schemas come from the
pydantic models, with their ``$defs`` hoisted into ``components/schemas``; two different
models under one name are refused rather than silently merged.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from metabundle import __version__
from metabundle.search.budget import SIZE_CAP_KEY
from metabundle.search.errors import HTTP_STATUS
from metabundle.search.params import parameters_schema
from metabundle.search.payload import Clamped
from metabundle.search.tools import CLAMPED_KEY, UNTRUSTED_NOTICE, ToolSpec

OPENAPI_VERSION = "3.1.0"
REF_TEMPLATE = "#/components/schemas/{model}"
ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["code", "message"],
            "properties": {
                "code": {"type": "string", "enum": sorted(HTTP_STATUS)},
                "message": {"type": "string", "description": "One sentence."},
                "details": {"type": "object", "description": "E.g. suggestions."},
            },
        }
    },
}
ENVELOPE_PROPERTIES: dict[str, Any] = {
    "data_notice": {"type": "string", "const": UNTRUSTED_NOTICE},
    SIZE_CAP_KEY: {
        "type": "object",
        "description": "Present when the answer was cut to the payload cap: which list, "
        "its total, how many were returned and the offset of the rest.",
    },
    CLAMPED_KEY: {
        "type": "array",
        "items": Clamped.model_json_schema(mode="serialization"),
        "description": "Present when a parameter outside its range was moved into it: "
        "the answer is to the parameter used, not the one asked.",
    },
}


def _hoisted(schema: dict[str, Any], shared: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with its definitions moved into ``shared`` (pydantic's empty schema of
    ``JsonValue``, any JSON value, described as such)."""
    for name, definition in schema.pop("$defs", {}).items():
        definition = definition or {"description": "Any JSON value, as the data holds it."}
        if shared.setdefault(name, definition) != definition:
            raise ValueError(f"two different models are both named {name}")
    return schema


def _model_schema(model: type[BaseModel], shared: dict[str, Any]) -> dict[str, Any]:
    """The JSON schema of parameters model ``model``, its definitions in ``shared``."""
    return _hoisted(parameters_schema(model, REF_TEMPLATE), shared)


def _response_ref(spec: ToolSpec, shared: dict[str, Any]) -> dict[str, Any]:
    """A reference to the schema of ``spec``'s payload, added to ``shared``."""
    model = spec.response
    schema = model.model_json_schema(ref_template=REF_TEMPLATE, mode="serialization")
    schema = _hoisted(schema, shared)
    schema["properties"] = {**schema["properties"], **ENVELOPE_PROPERTIES}
    schema["required"] = [*schema.get("required", []), "data_notice"]
    _hoisted({"$defs": {model.__name__: schema}}, shared)
    return {"$ref": REF_TEMPLATE.format(model=model.__name__)}


def _query_parameter(name: str, schema: dict[str, Any], required: bool) -> dict[str, Any]:
    is_list = schema.get("type") == "array" or any(
        option.get("type") == "array" for option in schema.get("anyOf", [])
    )
    description = schema.get("description", "")
    if is_list:
        description = (description + " Repeat the parameter or separate values by commas.").strip()
    parameter: dict[str, Any] = {
        "name": name,
        "in": "query",
        "required": required,
        "schema": schema,
    }
    if description:
        parameter["description"] = description
    if is_list:
        parameter.update(style="form", explode=True)
    return parameter


def _responses(payload: dict[str, Any]) -> dict[str, Any]:
    responses: dict[str, Any] = {
        "200": {
            "description": "The tool's payload.",
            "content": {"application/json": {"schema": payload}},
        }
    }
    by_status: dict[int, list[str]] = {}
    for code, status in HTTP_STATUS.items():
        by_status.setdefault(status, []).append(code)
    for status, codes in sorted(by_status.items()):
        responses[str(status)] = {
            "description": "Typed error: " + ", ".join(sorted(codes)) + ".",
            "content": {
                "application/json": {"schema": {"$ref": REF_TEMPLATE.format(model="Error")}}
            },
        }
    return responses


def _path_item(spec: ToolSpec, shared: dict[str, Any]) -> dict[str, Any]:
    schema = _model_schema(spec.params, shared)
    payload = _response_ref(spec, shared)
    required = set(schema.get("required", []))
    summary = spec.description.split(". ")[0].rstrip(".")
    common = {"tags": [spec.group], "summary": summary, "description": spec.full_description}
    return {
        "get": {
            **common,
            "operationId": f"{spec.name}_get",
            "parameters": [
                _query_parameter(name, property_schema, name in required)
                for name, property_schema in schema.get("properties", {}).items()
            ],
            "responses": _responses(payload),
        },
        "post": {
            **common,
            "operationId": spec.name,
            "requestBody": {
                "required": bool(required),
                "content": {"application/json": {"schema": schema}},
            },
            "responses": _responses(payload),
        },
    }


def openapi_document(specs: list[ToolSpec], api_path: str, release_version: str) -> dict[str, Any]:
    """The OpenAPI document of every tool in ``specs``, served under ``api_path``."""
    shared: dict[str, Any] = {"Error": ERROR_SCHEMA}
    paths = {f"{api_path}/{spec.name}": _path_item(spec, shared) for spec in specs}
    return {
        "openapi": OPENAPI_VERSION,
        "info": {
            "title": "metabundle search API",
            "version": __version__,
            "description": (
                f"Read-only search over metabundle release {release_version}: every tool "
                "of the search core, with the same parameters and payloads as the MCP "
                "server and the CLI. " + UNTRUSTED_NOTICE
            ),
        },
        "paths": paths,
        "components": {"schemas": shared},
        "tags": [{"name": group} for group in sorted({spec.group for spec in specs})],
    }
