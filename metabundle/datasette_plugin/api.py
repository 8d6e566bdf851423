"""The REST adapter: every registered tool of the search core at ``/-/api/<tool>``.

``GET /-/api/<tool>?name=value`` and ``POST /-/api/<tool>`` with a JSON object body
take the tool's parameters and return exactly the payload of
:func:`~metabundle.search.tools.call_tool`, so the same call gives the same JSON here,
over MCP and in the CLI. Errors are the core's typed errors with the HTTP status of
:data:`~metabundle.search.errors.HTTP_STATUS` (``invalid_request`` 400,
``not_found`` 404, ...).

Query parameters are converted by the JSON schema of the tool's parameters model: a
list parameter takes repeated parameters (``?sources=dbgap&sources=ukb``) or
comma-separated values (``?sources=dbgap,ukb``), or both; an item that itself holds a
comma needs POST. Integers, numbers and booleans (``true``/``false``) are parsed,
objects are JSON text, and a scalar given twice is an ``invalid_request``. Unknown
parameters reach the core, which refuses them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

import anyio.to_thread
from datasette.utils.asgi import Request, Response

from metabundle.datasette_plugin.release_link import release_for
from metabundle.errors import MetabundleError
from metabundle.search.errors import HTTP_STATUS, INTERNAL_ERROR, ToolError, invalid
from metabundle.search.params import parameters_schema
from metabundle.search.tools import TOOLS, ToolSpec, all_tools, call_tool, release_tools

API_PREFIX = "/-/api"
JSON_TYPE = "application/json; charset=utf-8"
_INTEGER = re.compile(r"[+-]?\d+")
MAX_INTEGER_DIGITS = 4300  # Python's int() refuses longer text
_TRUE, _FALSE = {"true", "1", "yes", "on"}, {"false", "0", "no", "off"}


def json_response(payload: Mapping[str, Any], status: int = 200, **headers: str) -> Response:
    """``payload`` as UTF-8 JSON."""
    body = json.dumps(payload, ensure_ascii=False)
    return Response(body, status=status, headers=dict(headers), content_type=JSON_TYPE)


def payload_status(payload: Mapping[str, Any]) -> int:
    """The HTTP status of a core payload: 200, or its error code's status."""
    if "error" in payload:
        return HTTP_STATUS.get(payload["error"].get("code"), 500)
    return 200


def error_payload(error: Exception) -> dict[str, Any]:
    """A typed error payload for a failure outside the core (no release, bad body)."""
    if isinstance(error, ToolError):
        return error.payload()
    return ToolError(INTERNAL_ERROR, str(error).rstrip(".") + ".").payload()


def tool_spec(name: str) -> ToolSpec | None:
    all_tools()  # registers every tool
    return TOOLS.get(name)


# -- query parameters -> arguments --------------------------------------------------------


def _kind(schema: Mapping[str, Any] | None, defs: Mapping[str, Any]) -> str | None:
    """The JSON type of a parameter schema, looking through ``$ref`` and ``anyOf`` with
    ``null``: array, object, integer, number, boolean, string or None (unknown)."""
    if not schema:
        return None
    if "$ref" in schema:
        return _kind(defs.get(schema["$ref"].rsplit("/", 1)[-1]), defs)
    if "type" in schema:
        kind = schema["type"]
        return kind if isinstance(kind, str) else next((k for k in kind if k != "null"), None)
    options = [s for s in schema.get("anyOf", schema.get("oneOf", [])) if s.get("type") != "null"]
    kinds = {_kind(option, defs) for option in options}
    return kinds.pop() if len(kinds) == 1 else None


def split_values(values: Iterable[str]) -> list[str]:
    return [item.strip() for value in values for item in value.split(",") if item.strip()]


def _scalar(name: str, value: str, kind: str | None) -> Any:
    text = value.strip()
    if kind == "integer" and _INTEGER.fullmatch(text):
        if len(text) > MAX_INTEGER_DIGITS:
            raise invalid(
                f"Parameter {name!r} is an integer of more than {MAX_INTEGER_DIGITS} digits."
            )
        return int(text)
    if kind == "number":
        try:
            return float(text)
        except ValueError:
            return value
    if kind == "boolean" and text.lower() in _TRUE | _FALSE:
        return text.lower() in _TRUE
    if kind == "object":
        try:
            return json.loads(value)
        except (ValueError, RecursionError):
            raise invalid(f"Parameter {name!r} must be a JSON object.") from None
    return value  # strings, and anything the core should refuse in its own words


def query_arguments(spec: ToolSpec, params: Any) -> dict[str, Any]:
    """The arguments of ``spec`` given as query parameters (a Datasette MultiParams)."""
    schema = parameters_schema(spec.params)
    properties, defs = schema.get("properties", {}), schema.get("$defs", {})
    arguments: dict[str, Any] = {}
    for name in params.keys():  # noqa: SIM118  (MultiParams is not a Mapping)
        values = params.getlist(name)
        kind = _kind(properties.get(name), defs)
        if kind == "array" and len(values) == 1:
            arguments[name] = values[0]  # the core decodes a JSON-encoded or comma list
        elif kind == "array":
            arguments[name] = split_values(values)
        elif len(values) > 1:
            raise invalid(f"{spec.name}: parameter {name!r} takes one value, got {len(values)}.")
        else:
            arguments[name] = _scalar(name, values[0], kind)
    return arguments


async def body_arguments(request: Request) -> Any:
    """The JSON body of a POST (an empty body means no arguments)."""
    body = await request.post_body()
    if not body.strip():
        return {}
    try:
        return json.loads(body)
    except (ValueError, RecursionError):  # not JSON, an integer past 4,300 digits, too deep
        raise invalid(
            "The request body must be a JSON object of the tool's parameters, nested at "
            "most a few hundred levels, with integers of at most 4,300 digits."
        ) from None


# -- running a tool -----------------------------------------------------------------------


async def run_tool(datasette: Any, name: str, arguments: Any) -> dict[str, Any]:
    """``call_tool`` on the instance's release, on a worker thread."""
    release = release_for(datasette)
    return await anyio.to_thread.run_sync(call_tool, release, name, arguments)


async def tool_payload(
    datasette: Any, request: Request, name: str, params: Any = None
) -> dict[str, Any]:
    """The payload of tool ``name`` for a GET or POST request, or a typed error; a GET
    takes its arguments from ``params`` (by default the query parameters)."""
    try:
        spec = tool_spec(name)
        if request.method == "POST":
            arguments = await body_arguments(request)
        elif spec is None:
            arguments = {}
        else:
            arguments = query_arguments(spec, request.args if params is None else params)
        return await run_tool(datasette, name, arguments)
    except (ToolError, MetabundleError) as error:
        return error_payload(error)


async def api_tool(datasette: Any, request: Request) -> Response:
    """``GET|POST /-/api/<tool>``."""
    if request.method not in ("GET", "POST"):
        error = invalid(f"{request.method} is not supported here; use GET or POST.")
        return json_response(error.payload(), 405, Allow="GET, POST")
    payload = await tool_payload(datasette, request, request.url_vars["tool"])
    return json_response(payload, payload_status(payload))


def served_tools(datasette: Any) -> list[ToolSpec]:
    """The tools the instance's release offers (every tool when it serves none)."""
    try:
        return release_tools(release_for(datasette))
    except MetabundleError:
        return all_tools()


def tool_index(datasette: Any) -> dict[str, Any]:
    """``/-/api``: every tool the release offers with its description, URL and
    parameters."""
    return {
        "openapi": datasette.urls.path(f"{API_PREFIX}/openapi.json"),
        "conventions": {
            "get": "GET /-/api/<tool>?param=value; lists as repeated or comma-separated "
            "parameters (?sources=dbgap&sources=ukb or ?sources=dbgap,ukb).",
            "post": "POST /-/api/<tool> with a JSON object of the parameters.",
            "errors": '{"error": {"code", "message", "details"}} with HTTP status '
            + ", ".join(f"{code} {status}" for code, status in HTTP_STATUS.items())
            + ".",
        },
        "tools": [
            {
                "name": spec.name,
                "group": spec.group,
                "description": spec.full_description,
                "url": datasette.urls.path(f"{API_PREFIX}/{spec.name}"),
                "parameters": parameters_schema(spec.params),
            }
            for spec in served_tools(datasette)
        ],
    }
