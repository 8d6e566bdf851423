"""Bounded load on the serving side: ``metabundle mcp --http`` and ``metabundle
datasette`` on loopback each answer 8 concurrent clients sending mixed searches for a
few seconds with no error, and several processes open the same release at once and
answer the same queries (read-only DuckDB, memory-mapped keyword and vector indexes).

Each run prints its p50/p95 latency and writes them to ``test-artifacts/reliability/``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client

from metabundle.search.release import Release
from metabundle.search.tools import TOOLS, all_tools, call_tool
from tests.support.build import Build
from tests.support.processes import free_port, latency_summary, serving

CLIENTS = 8
SECONDS = float(os.environ.get("METABUNDLE_LOAD_SECONDS", "12"))
P95_CEILING_S = 15.0  # generous: CI shares two cores between the clients and the server
PROCESSES = 6

MCP_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("search_all", {"query": "blood pressure", "method": "keyword", "limit": 10}),
    ("search_all", {"query": "history of smoking cigarettes", "limit": 10}),
    ("search_all", {"query": "lung cancer CT", "sources": ["idc"], "limit": 5}),
    ("search_ukb_fields", {"query": "body mass index", "limit": 5}),
    ("concept_search_fulltext", {"query": "myocardial infarction", "limit": 5}),
    ("search_aou_catalog", {"query": "alcohol use", "limit": 5}),
    ("resolve_dbgap_study", {"query": "Jackson Heart Study"}),
    ("search_idc", {"query": "breast MRI", "limit": 5}),
    (
        "run_sql",
        {"sql": "SELECT source, count(*) FROM search_doc GROUP BY 1 ORDER BY 1", "max_rows": 10},
    ),
    ("get_release_info", {}),
]
DATASETTE_PATHS = [
    "/-/search.json?query=blood+pressure&method=keyword",
    "/-/search.json?query=history+of+smoking",
    "/-/api/search_all?query=lung+cancer&sources=idc&limit=5",
    "/-/api/search_ukb_fields?query=body+mass+index&limit=5",
    "/-/api/concept_search_fulltext?query=heart+attack&limit=5",
    "/metabundle/omop_concept.json?_search=aspirin&_size=10",
    "/metabundle/ukb_field.json?_search=cholesterol&_size=10",
    "/-/api/get_release_info",
]


@pytest.fixture(scope="module")
def release_path(mirror_build: Build) -> Path:
    return mirror_build.release


def registered(calls: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, dict[str, Any]]]:
    all_tools()
    return [call for call in calls if call[0] in TOOLS]


async def run_clients(
    client: Callable[[int, Callable[[float, bool], None], float], Awaitable[None]],
) -> tuple[list[float], list[str], float]:
    """Run CLIENTS copies of ``client`` until SECONDS have passed; latencies, errors."""
    latencies: list[float] = []
    errors: list[str] = []

    def record(seconds: float, ok: bool, detail: str = "") -> None:
        latencies.append(seconds)
        if not ok:
            errors.append(detail)

    started = time.perf_counter()
    deadline = started + SECONDS
    async with anyio.create_task_group() as group:
        for index in range(CLIENTS):
            group.start_soon(client, index, record, deadline)
    return latencies, errors, time.perf_counter() - started


def report(artifacts: Path, name: str, latencies: list[float], errors: list[str], seconds: float):
    summary = latency_summary(name, latencies, len(errors), seconds)
    summary.update(clients=CLIENTS, duration_s=SECONDS, first_errors=errors[:5])
    (artifacts / f"load_{name}.json").write_text(json.dumps(summary, indent=2))
    print(f"\n{name}: {json.dumps(summary)}")
    return summary


def check(summary: dict[str, Any]) -> None:
    assert summary["errors"] == 0, summary["first_errors"]
    assert summary["calls"] >= CLIENTS, "some clients made no call"
    assert summary["p95_ms"] / 1000 < P95_CEILING_S, summary


@pytest.mark.anyio
async def test_mcp_http_holds_concurrent_clients(release_path: Path, artifacts: Path) -> None:
    calls = registered(MCP_CALLS)
    port = free_port()
    args = ["mcp", "--release", str(release_path), "--http", f"127.0.0.1:{port}"]

    async def client(index: int, record: Callable[..., None], deadline: float) -> None:
        async with Client(f"http://127.0.0.1:{port}/mcp") as session:
            turn = index
            while time.perf_counter() < deadline:
                name, arguments = calls[turn % len(calls)]
                turn += 1
                started = time.perf_counter()
                try:
                    result = await session.call_tool(name, arguments)
                    ok, detail = not result.is_error, f"{name}: {result.content[0].text[:200]}"
                except Exception as error:  # a transport failure is an error of the run
                    ok, detail = False, f"{name}: {type(error).__name__}: {error}"
                record(time.perf_counter() - started, ok, detail)

    with serving(args, port, artifacts / "load_mcp_server.log"):
        latencies, errors, seconds = await run_clients(client)
    check(report(artifacts, "mcp_http", latencies, errors, seconds))


@pytest.mark.anyio
async def test_datasette_holds_concurrent_clients(release_path: Path, artifacts: Path) -> None:
    port = free_port()
    args = ["datasette", "--release", str(release_path), "--port", str(port)]

    async def client(index: int, record: Callable[..., None], deadline: float) -> None:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=60) as http:
            turn = index
            while time.perf_counter() < deadline:
                path = DATASETTE_PATHS[turn % len(DATASETTE_PATHS)]
                turn += 1
                started = time.perf_counter()
                try:
                    response = await http.get(path)
                    ok = response.status_code == 200 and "error" not in response.json()
                    detail = f"{path}: {response.status_code} {response.text[:200]}"
                except Exception as error:
                    ok, detail = False, f"{path}: {type(error).__name__}: {error}"
                record(time.perf_counter() - started, ok, detail)

    with serving(args, port, artifacts / "load_datasette_server.log"):
        latencies, errors, seconds = await run_clients(client)
    check(report(artifacts, "datasette", latencies, errors, seconds))


# -- many processes on one release ------------------------------------------------------

WORKER = r"""
import json, sys, time
from pathlib import Path
from metabundle.search.release import Release
from metabundle.search.tools import call_tool

release_path, start_file, calls = sys.argv[1], Path(sys.argv[2]), json.loads(sys.argv[3])
with Release.open(release_path) as release:
    while not start_file.exists():
        time.sleep(0.01)
    answers = []
    for name, arguments in calls:
        payload = call_tool(release, name, arguments)
        answers.append(payload)
    maps = Path("/proc/self/maps").read_text() if Path("/proc/self/maps").exists() else ""
    mapped = sorted({line.split()[-1] for line in maps.splitlines()
                     if str(release.path) in line})
print(json.dumps({"answers": answers, "mapped": mapped}))
"""


def test_many_processes_open_the_same_release_at_once(
    release: Release, artifacts: Path, tmp_path: Path
) -> None:
    calls = [
        call
        for call in registered(MCP_CALLS)
        if call[0] != "get_release_info"  # identical anyway; keep the run short
    ]
    start = tmp_path / "start"
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(release.path), str(start), json.dumps(calls)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(PROCESSES)
    ]
    time.sleep(1.0)
    started = time.perf_counter()
    start.touch()  # every process has the release open now or very soon: go together
    outputs = [worker.communicate(timeout=300) for worker in workers]
    seconds = time.perf_counter() - started
    for worker, (_, stderr) in zip(workers, outputs, strict=True):
        assert worker.returncode == 0, stderr[-2000:]
    results = [json.loads(stdout) for stdout, _ in outputs]
    expected = [call_tool(release, name, arguments) for name, arguments in calls]
    for result in results:
        for (name, _), answer, wanted in zip(calls, result["answers"], expected, strict=True):
            assert "error" not in answer, f"{name}: {answer}"
            assert answer == wanted, f"{name} differs between processes"
    mapped = set(results[0]["mapped"])
    assert any("/fts/" in path for path in mapped), mapped
    assert any("/ann/" in path for path in mapped), mapped
    summary = {"processes": PROCESSES, "calls_each": len(calls), "seconds": round(seconds, 2)}
    summary["mapped_files"] = sorted(Path(p).name for p in mapped)
    (artifacts / "load_processes.json").write_text(json.dumps(summary, indent=2))
    print(f"\nprocesses: {json.dumps(summary)}")
