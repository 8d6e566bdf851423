"""Every tool call has a deadline for its queries (``METABUNDLE_CALL_DEADLINE_S``): past
it the call answers ``query_timeout`` instead of holding a thread, through a real
client over stdio; within it, calls answer as before."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport

from tests.support.cli import clean_env, metabundle_command

pytestmark = pytest.mark.anyio

QUERYING = [
    ("concept_get", {"concept_id": 3038553}),
    ("search_ukb_fields", {"query": "body mass index", "limit": 3}),
    ("search_all", {"query": "systolic blood pressure"}),
]


def transport(release: Path, deadline: str) -> StdioTransport:
    command, *args = metabundle_command()
    env = clean_env(METABUNDLE_CALL_DEADLINE_S=deadline)
    return StdioTransport(command, [*args, "mcp", "--release", str(release)], env=env)


@pytest.mark.parametrize(("deadline", "code"), [("0", "query_timeout"), ("30", None)])
async def test_a_call_past_its_deadline_is_query_timeout(
    release_path: Path, deadline: str, code: str | None
) -> None:
    async with Client(transport(release_path, deadline)) as client:
        for tool, arguments in QUERYING:
            result = await client.call_tool_mcp(tool, arguments)
            payload = json.loads(result.content[0].text)
            assert payload.get("error", {}).get("code") == code, (tool, payload)
        info = await client.call_tool_mcp("get_release_info", {})  # no query: answers
        assert "error" not in json.loads(info.content[0].text)
    if code:
        assert payload["error"]["message"] == "The call ran longer than 0 s and was stopped."
