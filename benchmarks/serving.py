"""Serving: hybrid latency, time to a new process's first answer, serving memory.

* :func:`search_latency`: ``search_all`` keyword / semantic / hybrid through
  ``call_tool`` (hydration included) and the core ``rank`` hybrid (ranking only), in
  this process, interleaved over the evaluation queries of every source; the keyword
  tool call is the baseline of the hybrid one.
* :func:`first_answer`: wall time from spawning a Python process that imports the
  search core, opens the release and answers one ``search_all`` query until it exits
  (keyword, then separately hybrid, which also loads the ANN index and the embedding
  model); the median of a few runs. The baseline is the same interpreter running
  ``pass``.
* :func:`mcp_start`: wall time from spawning ``metabundle mcp`` (stdio) until it has
  answered ``initialize`` and ``tools/list``, the median of a few runs, beside two
  baselines in the same run: the bare interpreter and a process that only imports the
  ``mcp`` SDK's server package (the floor any server on this SDK pays), with an
  ``-X importtime`` breakdown of the server module.
* :func:`open_check`: the integrity check a serving process runs when it opens a
  release (structure and size of every manifest file, sha256 of the small index files)
  and the sha256 of the large memory-mapped files it checks on first use, in this
  process, the median of a few runs; a warm page cache, so hashing is CPU-bound.
* :func:`serving_memory`: a child opens the release, records its RSS, runs a mixed
  load (each evaluation query through every method of its source's tools, round
  robin over sources) and reports its RSS and peak RSS after it, with the latency of
  its calls per tool and method.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from itertools import chain, zip_longest
from pathlib import Path
from typing import Any

from benchmarks.common import (
    SEED,
    child_env,
    interleaved,
    latency,
    proc_status_mib,
    profile_top,
    ratio,
    timed,
)
from benchmarks.quality import entities, load_sets, source_specs, target_of, tool_arguments
from metabundle.digest import sha256_file
from metabundle.release.integrity import check_release_files, forget_digests, hashed_at_open
from metabundle.search.ranking.pipeline import rank
from metabundle.search.ranking.policies import SEARCH_ALL
from metabundle.search.release import Release
from metabundle.search.tools import call_tool

FIRST_QUERY = "systolic blood pressure"
# What a fresh CLI or MCP process does before its first answer: import the core, open
# the release, answer one query. Prints its own open and query times.
FIRST_ANSWER = """
import json, sys, time
from metabundle.search.release import Release
from metabundle.search.tools import call_tool
t0 = time.perf_counter()
release = Release.open(sys.argv[1])
t1 = time.perf_counter()
payload = call_tool(release, "search_all", {"query": sys.argv[3], "method": sys.argv[2]})
t2 = time.perf_counter()
assert "results" in payload, payload
print(json.dumps({"open_s": t1 - t0, "first_query_s": t2 - t1, "results": len(payload["results"])}))
"""


def open_check(path: Path, repeats: int) -> dict[str, Any]:
    """Seconds of the open-time check as a new process runs it (the release's digest
    record spares it the hashes), and of hashing what a process without a record hashes:
    the small index files at open, the large memory-mapped files at first use (median
    of runs)."""
    manifest = check_release_files(path)
    small = [entry for entry in manifest["files"] if hashed_at_open(entry["path"])]
    mapped = [
        entry
        for entry in manifest["files"]
        if entry["path"] == "ann/vectors.npy" or entry["path"].endswith((".usearch", ".hnswlib"))
    ]
    at_open = []
    for _ in range(max(1, repeats)):
        forget_digests()
        at_open.append(timed(lambda: check_release_files(path))[0])
    return {
        "at_open_s": round(statistics.median(at_open), 4),
        "unrecorded_open_hash_s": _hash_seconds(path, small, repeats),
        "first_use_hash_s": _hash_seconds(path, mapped, repeats),
        "first_use_hashed_mb": round(sum(e["size"] for e in mapped) / 1e6, 1),
        "files_checked": len(manifest["files"]),
        "repeats": max(1, repeats),
    }


def _hash_seconds(path: Path, entries: list[dict[str, Any]], repeats: int) -> float:
    """Median seconds to hash ``entries`` and compare them with the manifest."""
    runs = []
    for _ in range(max(1, repeats)):
        started = time.perf_counter()
        for entry in entries:
            if sha256_file(path / entry["path"]) != entry["sha256"]:
                raise AssertionError(f"{entry['path']} does not match the manifest")
        runs.append(time.perf_counter() - started)
    return round(statistics.median(runs), 4)


def mixed_queries(n: int) -> list[str]:
    """Up to ``n`` evaluation queries, round robin over the sources' sets."""
    sets = load_sets()
    rounds = zip_longest(*([c for c in cases if not c.complete_corpus] for cases in sets.values()))
    cases = [c for c in chain.from_iterable(rounds) if c is not None]
    return [c.query for c in cases[:n]]


def search_latency(release: Release, n_queries: int, profile_queries: int = 0) -> dict[str, Any]:
    """Cross-source search latency per method, in this process."""
    queries = mixed_queries(n_queries)

    def tool(method: str):
        return lambda q: call_tool(release, "search_all", {"query": q, "method": method})

    call_tool(release, "search_all", {"query": FIRST_QUERY, "method": "hybrid"})  # warm up
    samples, _ = interleaved(
        {
            "keyword": tool("keyword"),
            "semantic": tool("semantic"),
            "hybrid": tool("hybrid"),
            "rank_hybrid": lambda q: rank(
                release, q, policy=SEARCH_ALL, method="hybrid", mask=None, limit=10
            ),
        },
        queries,
    )
    stats = {name: latency(values) for name, values in samples.items()}
    profiled = queries[:profile_queries]
    return {
        "queries": len(queries),
        "tool": "search_all (limit 10)",
        "latency": stats,
        "hybrid_ratio_vs_keyword": ratio(stats["hybrid"]["p50_ms"], stats["keyword"]["p50_ms"]),
        "profile": {
            method: {
                "queries": len(profiled),
                "top": profile_top(lambda m=method: [tool(m)(q) for q in profiled]),
            }
            for method in ("keyword", "hybrid")
        }
        if profiled
        else None,
    }


# The same first answer with its open and first query under cProfile (imports apart:
# the parent runs it with -X importtime), their top functions as JSON.
PROFILED_FIRST_ANSWER = """
import cProfile, json, sys
from metabundle.search.release import Release
from metabundle.search.tools import call_tool
from benchmarks.common import profile_rows
profiler = cProfile.Profile()
profiler.enable()
release = Release.open(sys.argv[1])
call_tool(release, "search_all", {"query": sys.argv[3], "method": sys.argv[2]})
profiler.disable()
print(json.dumps(profile_rows(profiler, 15)))
"""


def _spawn(args: list[str], env: dict[str, str] | None = None) -> tuple[float, str, str]:
    """Wall seconds of a child Python process, its stdout and stderr."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, *args],
        check=True,
        capture_output=True,
        text=True,
        env=env or child_env(),
    )
    return time.perf_counter() - start, done.stdout, done.stderr


def import_breakdown(stderr: str, top: int = 12) -> dict[str, float]:
    """Seconds of import (self time) per top-level package from ``-X importtime``."""
    per_package: dict[str, float] = {}
    for line in stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_us, _, name = line[len("import time:") :].split("|")
        package = name.strip().split(".")[0]
        per_package[package] = per_package.get(package, 0.0) + int(self_us) / 1e6
    ranked = sorted(per_package.items(), key=lambda kv: -kv[1])
    return {"total": round(sum(per_package.values()), 3)} | {
        name: round(value, 3) for name, value in ranked[:top]
    }


def _first(release_path: Path, method: str, env: dict[str, str]) -> tuple[float, dict]:
    wall, stdout, _ = _spawn(["-c", FIRST_ANSWER, str(release_path), method, FIRST_QUERY], env)
    return wall, json.loads(stdout)


@contextmanager
def bytecode_cached_env() -> Iterator[dict[str, str]]:
    """A child environment that writes and reuses compiled bytecode in a temporary
    ``PYTHONPYCACHEPREFIX`` (as an installed package has it, whatever
    ``PYTHONDONTWRITEBYTECODE`` says here)."""
    with tempfile.TemporaryDirectory(prefix="bench-pycache-") as pycache:
        env = child_env()
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = pycache
        yield env


def python_start_s(env: dict[str, str], repeats: int) -> float:
    """The fastest of ``repeats`` bare interpreter starts: the start-up baseline."""
    return round(min(_spawn(["-c", "pass"], env)[0] for _ in range(repeats)), 3)


def first_answer(release_path: Path, repeats: int, profile: bool = True) -> dict[str, Any]:
    """Median wall time of a new process to answer its first query, per method, with
    a bytecode cache; the first, uncached run is reported apart as ``cold_wall_s``."""
    with bytecode_cached_env() as env:
        out: dict[str, Any] = {"repeats": repeats, "python_start_s": python_start_s(env, repeats)}
        out["cold_wall_s"] = round(_first(release_path, "keyword", env)[0], 3)
        for method in ("keyword", "hybrid"):
            runs = sorted(_first(release_path, method, env) for _ in range(repeats))
            wall, child = runs[repeats // 2]
            out[method] = {
                "wall_s": round(wall, 3),
                "startup_and_imports_s": round(wall - child["open_s"] - child["first_query_s"], 3),
                "open_s": round(child["open_s"], 3),
                "first_query_s": round(child["first_query_s"], 3),
                "results": child["results"],
            }
        out["ratio_vs_python_start"] = ratio(out["keyword"]["wall_s"], out["python_start_s"], 2)
        if profile:
            profiled = ["-X", "importtime", "-c", PROFILED_FIRST_ANSWER, str(release_path)]
            _, stdout, stderr = _spawn([*profiled, "keyword", FIRST_QUERY], env)
            out["imports_s"] = import_breakdown(stderr)
            out["open_and_query_profile"] = json.loads(stdout)
    return out


MCP_SERVER = ["-c", "from metabundle.cli import main; main()", "mcp", "--release"]
MCP_SDK_IMPORT = ["-c", "import mcp.server.mcpserver"]
MCP_PROTOCOL_VERSION = "2025-06-18"


def _mcp_list_tools(release_path: Path, env: dict[str, str]) -> tuple[float, float, int]:
    """Spawn ``metabundle mcp`` over stdio; seconds until its ``initialize`` answer and
    until its ``tools/list`` answer, and the number of tools listed."""
    start = time.perf_counter()
    server = subprocess.Popen(
        [sys.executable, *MCP_SERVER, str(release_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        text=True,
    )
    assert server.stdin is not None and server.stdout is not None

    def send(message: dict[str, Any]) -> None:
        server.stdin.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
        server.stdin.flush()

    try:
        client = {"name": "benchmarks", "version": "0"}
        params = {"protocolVersion": MCP_PROTOCOL_VERSION, "capabilities": {}, "clientInfo": client}
        send({"id": 1, "method": "initialize", "params": params})
        json.loads(server.stdout.readline())
        initialized = time.perf_counter() - start
        send({"method": "notifications/initialized"})
        send({"id": 2, "method": "tools/list"})
        tools = json.loads(server.stdout.readline())["result"]["tools"]
        listed = time.perf_counter() - start
    finally:
        server.stdin.close()
        server.wait(timeout=30)
    return initialized, listed, len(tools)


def mcp_start(release_path: Path, repeats: int, profile: bool = True) -> dict[str, Any]:
    """Median wall time of ``metabundle mcp`` to list its tools, beside the bare
    interpreter and the ``mcp`` SDK's own import, with a bytecode cache."""
    with bytecode_cached_env() as env:
        _mcp_list_tools(release_path, env)  # fills the bytecode cache
        runs = sorted(_mcp_list_tools(release_path, env) for _ in range(repeats))
        initialized, listed, tools = runs[repeats // 2]
        sdk = sorted(_spawn(MCP_SDK_IMPORT, env)[0] for _ in range(repeats))[repeats // 2]
        out: dict[str, Any] = {
            "repeats": repeats,
            "tools": tools,
            "initialize_s": round(initialized, 3),
            "tools_list_s": round(listed, 3),
            "python_start_s": python_start_s(env, repeats),
            "sdk_import_s": round(sdk, 3),
        }
        out["ratio_vs_sdk_import"] = ratio(listed, sdk, 2)
        out["beyond_sdk_import_s"] = round(listed - sdk, 3)
        if profile:
            _, _, stderr = _spawn(["-X", "importtime", "-c", "import metabundle.mcp.server"], env)
            out["imports_s"] = import_breakdown(stderr)
    return out


def serving_memory(release_path: Path, n_calls: int) -> dict[str, Any]:
    """RSS of a serving child after opening the release and after a mixed load. The
    calls are planned here (finding each case's target reads every entity of every
    source), so the child holds only what serving does."""
    with Release.open(release_path) as release:
        plan = mixed_calls(release, n_calls)
    with tempfile.TemporaryDirectory() as folder:
        calls = Path(folder) / "calls.json"
        calls.write_text(json.dumps(plan))
        _, stdout, _ = _spawn(["-m", "benchmarks.serving", "load", str(release_path), str(calls)])
    return json.loads(stdout)


def mixed_calls(release: Release, n_calls: int) -> list[tuple[str, dict[str, Any]]]:
    """``n_calls`` tool calls of every source's methods on its evaluation cases, shuffled."""
    specs = source_specs()
    plan = []
    for source, cases in load_sets().items():
        if source not in specs or source not in release.manifest["sources"]:
            continue
        known = entities(release, source)
        for case in (c for c in cases if not c.complete_corpus):
            target = target_of(specs[source], case, known)
            plan += [(m.tool, tool_arguments(m, case, target)) for m in specs[source].methods]
    random.Random(SEED).shuffle(plan)
    return plan[:n_calls]


# -- child processes ------------------------------------------------------------------


def _child_load(release_path: str, calls_file: str) -> dict[str, Any]:
    """Open, measure RSS, run the planned tool calls, measure again (and what DuckDB holds)."""
    plan = json.loads(Path(calls_file).read_text())
    release = Release.open(release_path)
    call_tool(release, "get_release_info", {})
    after_open = proc_status_mib()
    errors = 0
    samples: dict[str, list[float]] = {}
    started = time.perf_counter()
    for name, args in plan:
        seconds, payload = timed(lambda name=name, args=args: call_tool(release, name, args))
        errors += "error" in payload
        samples.setdefault(
            " ".join([name, *[str(args[k]) for k in ("method",) if k in args]]), []
        ).append(seconds)
    elapsed = time.perf_counter() - started
    after = proc_status_mib()
    duckdb_memory = release.query(
        "SELECT tag, memory_usage_bytes FROM duckdb_memory() WHERE memory_usage_bytes > 0"
    )
    return {
        "calls": len(plan),
        "errors": errors,
        "load_s": round(elapsed, 2),
        "rss_after_open_mb": after_open["VmRSS"],
        "rss_mb": after["VmRSS"],
        "peak_rss_mb": after["VmHWM"],
        "rss_anon_mb": after["RssAnon"],
        "rss_file_mb": after["RssFile"],
        # DuckDB's own memory by tag: index nodes and table blocks read so far stay resident
        "duckdb_mb": {tag: round(used / 2**20, 1) for tag, used in sorted(duckdb_memory)},
        "tools": {name: latency(values) for name, values in sorted(samples.items())},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="the serving child: a mixed tool load")
    parser.add_argument("command", choices=["load"])
    parser.add_argument("release")
    parser.add_argument("calls", help="a JSON file of [tool, arguments] pairs")
    args = parser.parse_args(argv)
    print(json.dumps(_child_load(args.release, args.calls)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
