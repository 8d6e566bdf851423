"""Every registered tool under random and adversarial arguments, through the core's
``call_tool`` and through the in-process MCP server: the answer is a typed error or a
bounded, valid payload; never a crash, an ``internal_error`` or a stack trace."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from metabundle.search.errors import HTTP_STATUS, INTERNAL_ERROR
from metabundle.search.jsonsafe import MAX_PAYLOAD_BYTES
from metabundle.search.release import Release
from metabundle.search.tools import UNTRUSTED_NOTICE, ToolSpec, all_tools, call_tool
from tests.reliability.conftest import FUZZ, McpSession
from tests.support.fuzz import PROMPT_INJECTIONS, tool_arguments

SPECS = all_tools()
MAX_CALL_S = 30.0
STACK_MARKERS = ("Traceback (most recent call last)", 'File "/', "site-packages/")


def check_payload(name: str, arguments: Any, payload: Any) -> str | None:
    """Fail unless ``payload`` is a typed error or a bounded valid result; its error code."""
    where = f"{name}({arguments!r:.300})"
    assert isinstance(payload, dict), f"{where} returned {type(payload).__name__}"
    text = json.dumps(payload, allow_nan=False)  # valid JSON: no NaN/Infinity, no objects
    asked = json.dumps(arguments, default=str)  # an answer may quote the argument it refuses
    leaked = [m for m in STACK_MARKERS if m in text and m not in asked]
    assert not leaked, f"{where} leaked a stack trace ({leaked[0]!r})"
    if "error" in payload:
        error = payload["error"]
        assert set(payload) == {"error"}, f"{where}: an error payload carries more keys"
        assert error["code"] in HTTP_STATUS, f"{where}: untyped error {error}"
        assert error["code"] != INTERNAL_ERROR, f"{where}: internal_error: {error['message']}"
        assert isinstance(error["message"], str) and error["message"].strip()
        return error["code"]
    assert len(text) <= MAX_PAYLOAD_BYTES + len(UNTRUSTED_NOTICE) + 100, f"{where}: too large"
    assert payload.get("data_notice") == UNTRUSTED_NOTICE, f"{where}: no data_notice"
    return None


def is_json(value: Any) -> bool:
    """Whether ``value`` is representable in JSON as it is (no NaN or Infinity)."""
    try:
        json.dumps(value, allow_nan=False)
    except ValueError:
        return False
    return True


def timed_call(release: Release, name: str, arguments: Any) -> dict[str, Any]:
    started = time.perf_counter()
    payload = call_tool(release, name, arguments)
    elapsed = time.perf_counter() - started
    assert elapsed < MAX_CALL_S, f"{name}({arguments!r:.200}) took {elapsed:.1f} s"
    return payload


def test_every_tool_is_fuzzed() -> None:
    assert len(SPECS) >= 5
    assert {"run_sql", "search_all", "get_table_schema"} <= {spec.name for spec in SPECS}


@pytest.mark.parametrize("spec", SPECS, ids=[spec.name for spec in SPECS])
@FUZZ
@given(data=st.data())
def test_core_answers_hostile_arguments_with_a_typed_error_or_a_bounded_result(
    release: Release, spec: ToolSpec, data: st.DataObject
) -> None:
    arguments = data.draw(tool_arguments(spec.params.model_json_schema()), label="arguments")
    check_payload(spec.name, arguments, timed_call(release, spec.name, arguments))


def mcp_payload(session: McpSession, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """The payload an MCP client gets; its text and structured forms must agree."""
    result = session.call_tool(name, arguments)
    assert len(result.content) == 1, f"{name}: {len(result.content)} content blocks"
    payload = json.loads(result.content[0].text)
    assert payload == result.structured_content
    assert result.is_error == ("error" in payload)
    return payload


@pytest.mark.parametrize("spec", SPECS, ids=[spec.name for spec in SPECS])
@FUZZ
@given(data=st.data())
def test_mcp_answers_hostile_arguments_exactly_as_the_core(
    release: Release, mcp_session: McpSession, spec: ToolSpec, data: st.DataObject
) -> None:
    schema = spec.params.model_json_schema()
    arguments = data.draw(tool_arguments(schema, objects_only=True), label="arguments")
    assume(is_json(arguments))  # no client can send NaN or Infinity: JSON has neither
    over_mcp = mcp_payload(mcp_session, spec.name, arguments)
    code = check_payload(spec.name, arguments, over_mcp)
    direct = call_tool(release, spec.name, arguments)
    assert code == (direct.get("error") or {}).get("code"), f"{spec.name}: MCP and core differ"


EDGE_VALUES: tuple[Any, ...] = (
    2**31,
    2**63 - 1,
    -(2**63),
    10**30,
    -1,
    1.5,
    "\ud800",
    "a\x00b",
    "x" * 100_000,
    "",
    None,
    [],
    {"$gt": 1},
)


def minimal_value(schema: dict[str, Any]) -> Any:
    """A small valid value for a required parameter."""
    options = schema.get("anyOf") or [schema]
    first = options[0]
    kind = first.get("type")
    if "enum" in first:
        return first["enum"][0]
    if kind == "integer":
        return max(first.get("minimum", 1), 1)
    if kind == "array":
        return [minimal_value(first.get("items", {"type": "string"}))] * first.get("minItems", 1)
    if kind == "object":
        return {}
    return "lung"


def edge_cases() -> list[Any]:
    """(tool, arguments) for every parameter of every tool set to every edge value."""
    cases = []
    for spec in SPECS:
        schema = spec.params.model_json_schema()
        properties = schema.get("properties") or {}
        base = {name: minimal_value(properties[name]) for name in schema.get("required", ())}
        for name in properties:
            for index, value in enumerate(EDGE_VALUES):
                arguments = {**base, name: value}
                cases.append(pytest.param(spec.name, arguments, id=f"{spec.name}-{name}-{index}"))
    return cases


@pytest.mark.parametrize(("name", "arguments"), edge_cases())
def test_every_parameter_survives_every_edge_value(
    release: Release, name: str, arguments: dict[str, Any]
) -> None:
    check_payload(name, arguments, timed_call(release, name, arguments))


@pytest.mark.parametrize("field_id", [2**31, 2**63 - 1, 10**30, "p2147483648_i0"])
def test_a_ukb_field_id_past_the_integer_range_is_not_found(
    release: Release, field_id: int | str
) -> None:
    payload = call_tool(release, "get_ukb_field", {"field_id": field_id})
    assert check_payload("get_ukb_field", field_id, payload) == "not_found"


def test_unknown_tools_and_non_object_arguments_are_typed_errors(release: Release) -> None:
    for name, arguments in [
        ("no_such_tool", {}),
        ("", {}),
        ("run_sql; DROP TABLE x", {}),
        ("search_all", ["query", "lung"]),
        ("search_all", "lung"),
    ]:
        code = check_payload(name, arguments, call_tool(release, name, arguments))
        assert code in ("not_found", "invalid_request")


@pytest.mark.parametrize("text", PROMPT_INJECTIONS)
def test_instructions_in_a_query_are_searched_for_not_followed(release: Release, text: str) -> None:
    before = call_tool(release, "run_sql", {"sql": "SELECT count(*) FROM search_doc"})
    payload = call_tool(release, "search_all", {"query": text, "method": "keyword", "limit": 5})
    assert check_payload("search_all", text, payload) is None
    assert payload["query"] == text
    after = call_tool(release, "run_sql", {"sql": "SELECT count(*) FROM search_doc"})
    assert before["rows"] == after["rows"]
