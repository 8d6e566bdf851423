"""``run_sql`` in its bounded worker: queries that once exhausted memory or overran the
timeout answer a typed error, the serving process stays small and keeps answering,
and the release's own files and state-changing table functions are out of reach.

Every memory-heavy query runs in a worker whose address space is capped by the
operating system (``RLIMIT_AS``), so this test process cannot be killed by one."""

from __future__ import annotations

import resource
import threading
from pathlib import Path
from typing import Any

import pytest

from metabundle.search.errors import (
    INVALID_REQUEST,
    QUERY_TIMEOUT,
    RESOURCE_EXHAUSTED,
    RESULT_TOO_LARGE,
    SQL_ERROR,
)
from metabundle.search.release import Release
from metabundle.search.sql_pool import WORKER_ADDRESS_SPACE, SqlWorkers, run_sql
from metabundle.search.tools import call_tool
from tests.mcp.test_transports import http_server, payload_of

DEEP_PATH = "SELECT x." + ".".join(["a"] * 9900)
"""Binds in quadratic time inside DuckDB, where no interrupt reaches it."""
BOUNDED = (RESOURCE_EXHAUSTED, RESULT_TOO_LARGE, QUERY_TIMEOUT)
MEMORY_HEAVY = [
    "SELECT len(list_sort(range(1000000000)))",
    "SELECT range(100000) FROM range(1000)",
    "SELECT repeat('x', 1000000) || i FROM range(1000) t(i)",
    "SELECT range(30000) FROM range(1000)",
    "SELECT repeat('x', 1000000000)",
]
"""Each peaked at 4 to 8 GB in the serving process before the worker."""


def sql(release: Release, text: str, max_rows: int = 1000) -> dict[str, Any]:
    return call_tool(release, "run_sql", {"sql": text, "max_rows": max_rows})


def own_rss_mb() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024


@pytest.mark.parametrize("text", MEMORY_HEAVY)
def test_a_memory_heavy_query_is_a_typed_error_and_serving_goes_on(
    release: Release, text: str
) -> None:
    before = own_rss_mb()
    payload = sql(release, text)
    assert payload["error"]["code"] in BOUNDED, payload
    assert "Error" not in payload["error"]["message"].split(":")[0]
    assert own_rss_mb() - before < 300, "the serving process grew with the query"
    after = sql(release, "SELECT count(*) FROM release_info")
    assert after["rows"][0][0] >= 1


def test_a_big_sum_within_the_ceiling_still_answers(release: Release) -> None:
    payload = sql(release, "SELECT list_sum(range(100000000))")
    assert payload["rows"] == [[4999999950000000]]


def test_a_value_larger_than_the_payload_cap_is_refused_while_fetching(release: Release) -> None:
    payload = sql(release, "SELECT repeat('x', 3000000)")
    assert payload["error"]["code"] == RESULT_TOO_LARGE
    assert "2,000,000-byte cap" in payload["error"]["message"]


def test_workers_run_under_the_documented_address_space_limit(release: Release) -> None:
    workers = SqlWorkers(release.path / "metabundle.duckdb", size=1)
    try:
        assert run_sql(workers, "SELECT 1")["rows"] == [[1]]
        (pid,) = workers.idle_pids()
        limits = Path(f"/proc/{pid}/limits").read_text()
        line = next(row for row in limits.splitlines() if row.startswith("Max address space"))
        assert line.split()[3] == str(WORKER_ADDRESS_SPACE)
    finally:
        workers.close()


def test_a_slow_bind_is_stopped_at_the_timeout(release: Release) -> None:
    payload = sql(release, DEEP_PATH)
    assert payload["error"]["code"] == QUERY_TIMEOUT
    assert "10 s" in payload["error"]["message"]
    assert sql(release, "SELECT 42")["rows"] == [[42]]


def test_concurrent_slow_queries_all_time_out_and_the_pool_recovers(release: Release) -> None:
    workers = SqlWorkers(release.path / "metabundle.duckdb", size=2)
    codes: list[str] = []

    def slow() -> None:
        try:
            run_sql(workers, DEEP_PATH, timeout_s=2)
        except Exception as error:  # the ToolError each one must raise
            codes.append(getattr(error, "code", type(error).__name__))

    threads = [threading.Thread(target=slow) for _ in range(4)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        assert codes == [QUERY_TIMEOUT] * 4
        assert run_sql(workers, "SELECT 7", timeout_s=30)["rows"] == [[7]]
    finally:
        workers.close()


@pytest.mark.parametrize(
    "text",
    [
        "SELECT * FROM checkpoint()",
        "SELECT * FROM main.FORCE_CHECKPOINT ( )",
        'SELECT * FROM "checkpoint"()',
        "SELECT * FROM query('SELECT * FROM checkpoint()')",
        "SELECT * FROM query_table('release_info')",
        "SELECT * FROM json_execute_serialized_sql('{}')",
        "SELECT * FROM enable_logging()",
    ],
)
def test_state_changing_and_text_running_table_functions_are_refused(
    release: Release, text: str
) -> None:
    payload = sql(release, text)
    assert payload["error"]["code"] == INVALID_REQUEST, payload
    assert "does not allow the table function" in payload["error"]["message"]


def test_the_release_s_own_files_are_unreadable(release: Release) -> None:
    database = (release.path / "metabundle.duckdb").resolve()
    for text in [
        f"SELECT count(*) FROM read_blob('{database}')",
        f"SELECT count(*) FROM read_blob('{database}.wal')",
        f"SELECT count(*) FROM read_text('{database}.tmp')",
        f"SELECT * FROM read_duckdb('{database}', table_name='release_info')",
        f"SELECT * FROM glob('{database.parent}/*')",
        f"SELECT * FROM '{database}'",
        f"SELECT * FROM read_blob('{release.path}/manifest.json')",
    ]:
        payload = sql(release, text)
        assert payload["error"]["code"] in (SQL_ERROR, INVALID_REQUEST), (text, payload)


def test_a_pivot_is_a_read_only_query(release: Release) -> None:
    payload = sql(release, "PIVOT (SELECT source, kind FROM search_doc) ON kind USING count(*)")
    assert "error" not in payload, payload
    assert {row[0] for row in payload["rows"]} == set(release.source_masks)


def test_mcp_http_survives_a_query_that_killed_it(release: Release) -> None:
    import anyio
    from mcp import Client

    async def exchange(url: str) -> tuple[Any, Any]:
        async with Client(url) as client:
            heavy = await client.call_tool("run_sql", {"sql": MEMORY_HEAVY[0]})
            after = await client.call_tool("list_tables", {})
            return heavy, after

    with http_server(release.path) as url:
        heavy, after = anyio.run(exchange, url)
    assert heavy.is_error and payload_of(heavy)["error"]["code"] in BOUNDED
    assert not after.is_error
