"""One slow call does not stall the others: while a ``run_sql`` runs to its deadline in
its worker process, other clients' calls over streamable HTTP are answered, also when
every call ends with DuckDB over its kept budget (``METABUNDLE_DUCKDB_KEPT_MB=1``), which
makes the release let DuckDB's memory go between calls."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from mcp import Client

from tests.mcp.test_server import payload_of
from tests.mcp.test_transports import http_server

pytestmark = pytest.mark.anyio

SLOW_SQL = "SELECT sum(hash(i)) FROM range(100000000000) t(i)"
"""Runs until ``run_sql``'s deadline stops it."""


async def test_fast_calls_are_answered_while_run_sql_runs_to_its_deadline(
    release_path: Path,
) -> None:
    order: list[str] = []
    with http_server(release_path, METABUNDLE_DUCKDB_KEPT_MB="1") as url:
        async with Client(url) as slow_client, Client(url) as fast_client:
            await fast_client.call_tool("get_release_info", {})  # the process is warm

            async def slow() -> None:
                result = await slow_client.call_tool("run_sql", {"sql": SLOW_SQL})
                assert payload_of(result)["error"]["code"] == "query_timeout"
                order.append("run_sql")

            async def fast() -> None:
                await anyio.sleep(1)  # the slow query is running
                for _ in range(6):
                    for tool, arguments in (
                        ("get_release_info", {}),
                        ("concept_get", {"concept_id": 3038553}),
                        ("search_ukb_fields", {"query": "body mass index", "limit": 3}),
                    ):
                        result = await fast_client.call_tool(tool, arguments)
                        assert not result.is_error, payload_of(result)
                order.append("fast calls")

            async with anyio.create_task_group() as group:
                group.start_soon(slow)
                group.start_soon(fast)
    assert order == ["fast calls", "run_sql"]
