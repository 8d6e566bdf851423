"""``python -m benchmarks.load [--release DIR] [--clients 16] [--seconds 60] [--json OUT]``:
one serving process per adapter under many clients, and a fast call beside a slow one.

Starts ``metabundle mcp --http`` and ``metabundle datasette`` on loopback over the
release, then runs ``--clients`` clients for ``--seconds`` (half of them MCP sessions
over streamable HTTP, half REST clients of ``/-/api``), each sending a mixed round of
tool calls (searches of every source, lookups, ``run_sql``). Reported per adapter:
calls/s, p50/p95 latency, errors, and the server's RSS before the load, its peak
during it, right after it and after 20 s idle. A second phase runs one ``run_sql``
that lasts until its deadline and, meanwhile, ``get_release_info`` over and over from
another session: their p50/p95 beside the same call's on an idle server (the baseline
in the same run).
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
from mcp import Client

from benchmarks.common import REPO

IDLE_S = 20
SLOW_SQL = "SELECT sum(hash(i)) FROM range(100000000000) t(i)"
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("search_all", {"query": "blood pressure", "method": "keyword"}),
    ("search_all", {"query": "history of smoking cigarettes"}),
    ("search_all", {"query": "lung cancer CT", "sources": ["idc"], "limit": 5}),
    ("search_ukb_fields", {"query": "body mass index", "limit": 5}),
    ("concept_search_fulltext", {"query": "myocardial infarction", "limit": 5}),
    ("concept_get", {"concept_id": 3038553}),
    ("search_aou_catalog", {"query": "alcohol use", "limit": 5}),
    ("resolve_dbgap_study", {"query": "Jackson Heart Study"}),
    ("find_variables_across_studies", {"query": "systolic blood pressure"}),
    ("search_idc", {"query": "breast MRI", "limit": 5}),
    ("run_sql", {"sql": "SELECT source, count(*) FROM search_doc GROUP BY 1", "max_rows": 10}),
    ("get_release_info", {}),
]


def rss_mb(pid: int) -> float:
    """The resident memory of process ``pid``, MB (Linux)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


class RssSampler:
    """Samples a process's RSS every 0.25 s while running; its peak."""

    def __init__(self, pid: int) -> None:
        self.pid, self.peak, self._stop = pid, 0.0, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.25):
            self.peak = max(self.peak, rss_mb(self.pid))

    def __enter__(self) -> RssSampler:
        self.peak = rss_mb(self.pid)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def server(args: list[str], port: int) -> Any:
    """``metabundle ARGS`` until the block ends, once ``port`` answers."""
    command = [str(Path(sys.executable).with_name("metabundle")), *args]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                httpx.get(f"http://127.0.0.1:{port}/", timeout=1)
                break
            except httpx.TransportError:
                time.sleep(0.2)
        yield process
    finally:
        process.terminate()
        process.wait(timeout=30)


def summary(latencies: list[float], errors: int, seconds: float) -> dict[str, Any]:
    ordered = sorted(latencies) or [0.0]
    return {
        "calls": len(latencies),
        "calls_per_s": round(len(latencies) / seconds, 1),
        "p50_ms": round(statistics.median(ordered) * 1000, 1),
        "p95_ms": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))] * 1000, 1),
        "errors": errors,
    }


async def _load(
    clients: int, seconds: float, open_caller: Callable[[], Any]
) -> tuple[list[float], int, float]:
    latencies: list[float] = []
    errors = 0
    deadline = time.perf_counter() + seconds

    async def client(index: int) -> None:
        nonlocal errors
        async with open_caller() as call:
            turn = index
            while time.perf_counter() < deadline:
                name, arguments = CALLS[turn % len(CALLS)]
                turn += 1
                started = time.perf_counter()
                try:
                    ok = await call(name, arguments)
                except Exception:  # a transport failure counts as an error of the run
                    ok = False
                latencies.append(time.perf_counter() - started)
                errors += not ok

    started = time.perf_counter()
    async with anyio.create_task_group() as group:
        for index in range(clients):
            group.start_soon(client, index)
    return latencies, errors, time.perf_counter() - started


def mcp_caller(url: str) -> Any:
    @asynccontextmanager
    async def open_caller() -> Any:
        async with Client(url) as session:

            async def call(name: str, arguments: dict[str, Any]) -> bool:
                return not (await session.call_tool(name, arguments)).is_error

            yield call

    return open_caller


def rest_caller(base: str) -> Any:
    @asynccontextmanager
    async def open_caller() -> Any:
        async with httpx.AsyncClient(base_url=base, timeout=120) as http:

            async def call(name: str, arguments: dict[str, Any]) -> bool:
                response = await http.post(f"/-/api/{name}", json=arguments)
                return response.status_code == 200

            yield call

    return open_caller


async def adapter_load(
    name: str,
    process: subprocess.Popen[bytes],
    open_caller: Any,
    clients: int,
    seconds: float,
    idle_s: float,
) -> dict[str, Any]:
    async with open_caller() as call:
        await call("get_release_info", {})  # opened and warm
    before = rss_mb(process.pid)
    with RssSampler(process.pid) as sampler:
        latencies, errors, took = await _load(clients, seconds, open_caller)
    after = rss_mb(process.pid)
    await anyio.sleep(idle_s)
    idle = rss_mb(process.pid)
    return {
        "adapter": name,
        "clients": clients,
        **summary(latencies, errors, took),
        "rss_mb": {"before": before, "peak": sampler.peak, "after": after, "idle": idle},
    }


async def beside_slow_sql(url: str) -> dict[str, Any]:
    """``get_release_info`` latencies on an idle server, then while ``run_sql`` runs
    until its deadline in another session."""

    async def timed(session: Any, n: int) -> list[float]:
        times = []
        for _ in range(n):
            started = time.perf_counter()
            await session.call_tool("get_release_info", {})
            times.append(time.perf_counter() - started)
        return times

    async with Client(url) as slow, Client(url) as fast:
        idle = await timed(fast, 30)
        during: list[float] = []
        done = anyio.Event()

        async def run_slow() -> None:
            await slow.call_tool("run_sql", {"sql": SLOW_SQL})
            done.set()

        async with anyio.create_task_group() as group:
            group.start_soon(run_slow)
            await anyio.sleep(0.5)
            while not done.is_set():
                during += await timed(fast, 1)
    return {
        "idle": summary(idle, 0, sum(idle)),
        "during_run_sql": summary(during, 0, sum(during) or 1.0),
    }


async def measure(
    release: Path, clients: int, seconds: float, idle_s: float = IDLE_S
) -> dict[str, Any]:
    mcp_port, rest_port = free_port(), free_port()
    mcp_args = ["mcp", "--release", str(release), "--http", f"127.0.0.1:{mcp_port}"]
    rest_args = ["datasette", "--release", str(release), "--port", str(rest_port)]
    url, base = f"http://127.0.0.1:{mcp_port}/mcp", f"http://127.0.0.1:{rest_port}"
    report: dict[str, Any] = {"release": str(release), "seconds": seconds, "idle_s": idle_s}
    with server(mcp_args, mcp_port) as mcp_process, server(rest_args, rest_port) as rest:
        half = max(1, clients // 2)
        async with anyio.create_task_group() as group:

            async def run(name: str, process: Any, caller: Any) -> None:
                report[name] = await adapter_load(name, process, caller, half, seconds, idle_s)

            group.start_soon(run, "mcp_http", mcp_process, mcp_caller(url))
            group.start_soon(run, "rest", rest, rest_caller(base))
        report["get_release_info"] = await beside_slow_sql(url)
    return report


def render(report: dict[str, Any]) -> str:
    lines = [
        "| adapter | clients | calls/s | p50 | p95 | errors | RSS before | peak | after | "
        f"after {report['idle_s']:g} s idle |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name in ("mcp_http", "rest"):
        row, rss = report[name], report[name]["rss_mb"]
        lines.append(
            f"| {name} | {row['clients']} | {row['calls_per_s']} | {row['p50_ms']} ms | "
            f"{row['p95_ms']} ms | {row['errors']} | {rss['before']:.0f} MB | "
            f"{rss['peak']:.0f} MB | {rss['after']:.0f} MB | {rss['idle']:.0f} MB |"
        )
    info = report["get_release_info"]
    lines.append(
        f"\n`get_release_info` idle p50/p95 {info['idle']['p50_ms']}/{info['idle']['p95_ms']} "
        f"ms; while a run_sql runs to its deadline {info['during_run_sql']['p50_ms']}/"
        f"{info['during_run_sql']['p95_ms']} ms ({info['during_run_sql']['calls']} calls)"
    )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.load", description=__doc__)
    parser.add_argument("--release", type=Path, default=REPO / "build" / "current")
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    report = anyio.run(measure, args.release.resolve(), args.clients, args.seconds)
    print(render(report))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
