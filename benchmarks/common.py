"""Shared pieces of the benchmarks: sizes per mode, timing statistics, memory, machine.

Every latency is measured with :func:`time.perf_counter` around one call; the compared
paths run interleaved (query by query) so that load changes on a shared machine hit
both sides alike. :func:`calibration` is a fixed workload whose time, taken at the start
and the end of a run, says how fast the machine was while the figures were taken.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from metabundle.search.release import Release

REPO = Path(__file__).resolve().parents[1]
SEED = 20260127


@dataclass(frozen=True)
class Config:
    """How big each measurement is. ``full`` is the recorded run, ``quick`` a few
    minutes on two cores, ``tiny`` the smoke test's."""

    mode: str
    keyword_docs: int
    keyword_queries: int
    keyword_repeats: int
    ann_vectors: int | None  # None: every vector of the release
    ann_queries: int
    embed_texts: dict[str, int]  # per provider, per text set
    build_sources: tuple[str, ...] | None  # None: every source of the release
    omop_concepts: int
    omop_relationships: int
    serve_queries: int
    open_repeats: int
    quality_max_queries: int | None  # per source; None: the whole evaluation set
    profile_queries: int = 15  # queries run under cProfile per profiled path; 0: none
    providers: tuple[str, ...] = ("wordllama", "minilm")
    skip: tuple[str, ...] = field(default_factory=tuple)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


MODES: dict[str, Config] = {
    "full": Config(
        mode="full",
        keyword_docs=1_000_000,
        keyword_queries=300,
        keyword_repeats=2,
        ann_vectors=None,
        ann_queries=500,
        embed_texts={"wordllama": 20_000, "minilm": 400},
        build_sources=None,
        omop_concepts=2_000_000,
        omop_relationships=10_000_000,
        serve_queries=250,
        open_repeats=5,
        quality_max_queries=None,
    ),
    "quick": Config(
        mode="quick",
        keyword_docs=200_000,
        keyword_queries=200,
        keyword_repeats=2,
        ann_vectors=30_000,
        ann_queries=200,
        embed_texts={"wordllama": 5_000, "minilm": 100},
        build_sources=("aou", "dbgap", "idc", "omop"),
        omop_concepts=100_000,
        omop_relationships=500_000,
        serve_queries=60,
        open_repeats=3,
        quality_max_queries=15,
    ),
    "tiny": Config(
        mode="tiny",
        keyword_docs=3_000,
        keyword_queries=20,
        keyword_repeats=1,
        ann_vectors=2_000,
        ann_queries=10,
        embed_texts={"wordllama": 200, "minilm": 8},
        build_sources=("idc",),
        omop_concepts=2_000,
        omop_relationships=10_000,
        serve_queries=5,
        open_repeats=1,
        quality_max_queries=1,
        profile_queries=0,
    ),
}


# -- timing ---------------------------------------------------------------------------


def timed(call: Callable[[], Any]) -> tuple[float, Any]:
    """Seconds one call took, and its result."""
    start = time.perf_counter()
    result = call()
    return time.perf_counter() - start, result


def percentile(samples: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0..1) of ``samples``, nearest rank."""
    ordered = sorted(samples)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def latency(samples: Sequence[float]) -> dict[str, float]:
    """p50/p95/mean in milliseconds of samples in seconds, and their number."""
    if not samples:
        return {"n": 0, "p50_ms": float("nan"), "p95_ms": float("nan"), "mean_ms": float("nan")}
    return {
        "n": len(samples),
        "p50_ms": round(percentile(samples, 0.5) * 1e3, 4),
        "p95_ms": round(percentile(samples, 0.95) * 1e3, 4),
        "mean_ms": round(statistics.fmean(samples) * 1e3, 4),
    }


def ratio(numerator: float, denominator: float, digits: int = 4) -> float | None:
    """``numerator / denominator`` rounded, or None when undefined."""
    if not denominator or denominator != denominator:
        return None
    return round(numerator / denominator, digits)


def interleaved(
    calls: dict[str, Callable[[Any], Any]], items: Sequence[Any], repeats: int = 1
) -> tuple[dict[str, list[float]], dict[str, list[Any]]]:
    """Time every call on every item, alternating calls item by item; the samples
    per call (seconds) and the results of the first repeat."""
    samples: dict[str, list[float]] = {name: [] for name in calls}
    results: dict[str, list[Any]] = {name: [] for name in calls}
    for repeat in range(repeats):
        for item in items:
            for name, call in calls.items():
                start = time.perf_counter()
                result = call(item)
                samples[name].append(time.perf_counter() - start)
                if repeat == 0:
                    results[name].append(result)
    return samples, results


def profile_rows(profiler: Any, top: int = 15) -> list[dict[str, Any]]:
    """The ``top`` functions of a finished ``cProfile.Profile`` by cumulative time."""
    import pstats

    stats = pstats.Stats(profiler).sort_stats("cumulative")
    rows = []
    for (filename, line, name), (_, calls, own, cumulative, _) in stats.stats.items():
        where = filename.replace(str(REPO) + "/", "").split("site-packages/")[-1]
        rows.append(
            {
                "function": f"{where}:{line}({name})",
                "calls": calls,
                "own_s": round(own, 4),
                "cumulative_s": round(cumulative, 4),
            }
        )
    rows.sort(key=lambda r: -r["cumulative_s"])
    return rows[:top]


def profile_top(call: Callable[[], Any], top: int = 15) -> list[dict[str, Any]]:
    """Run ``call`` under cProfile; the ``top`` functions by cumulative time."""
    import cProfile

    profiler = cProfile.Profile()
    profiler.runcall(call)
    return profile_rows(profiler, top)


# -- memory and machine ---------------------------------------------------------------


def proc_status_mib(pid: int | str = "self") -> dict[str, float]:
    """VmRSS, VmHWM (peak) and RSS's parts (RssAnon: the process's own memory;
    RssFile: pages of mapped files, which the kernel can drop and read again) of a
    process in MiB, from ``/proc``."""
    values: dict[str, float] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in ("VmRSS", "VmHWM", "RssAnon", "RssFile"):
            values[key] = round(int(rest.split()[0]) / 1024, 1)
    return values


def loadavg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def calibration() -> dict[str, Any]:
    """A fixed Python and numpy workload (milliseconds) and the load average now."""
    start = time.perf_counter()
    total = 0
    for i in range(1_000_000):
        total += i % 7
    python_ms = (time.perf_counter() - start) * 1e3
    data = np.random.default_rng(SEED).random(2_000_000)
    start = time.perf_counter()
    np.sort(data)
    numpy_ms = (time.perf_counter() - start) * 1e3
    return {
        "python_loop_1m_ms": round(python_ms, 1),
        "numpy_sort_2m_ms": round(numpy_ms, 1),
        "loadavg": loadavg(),
    }


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _mem_total_gib() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 1024**2, 1)
    except OSError:
        pass
    return None


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def machine() -> dict[str, Any]:
    """What the figures were measured on."""
    import sqlite3

    return {
        "hostname": platform.node(),
        "cpu": _cpu_model(),
        "cpus": os.cpu_count(),
        "affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "mem_gib": _mem_total_gib(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "sqlite": sqlite3.sqlite_version,
        "packages": {
            name: _version(name)
            for name in ("numpy", "duckdb", "polars", "pyarrow", "usearch", "hnswlib", "wordllama")
        },
    }


def child_env() -> dict[str, str]:
    """The environment of a benchmark subprocess: this repository importable."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    return env


def print_and_save(text: str, report: dict[str, Any], path: Path | None) -> int:
    """Print a module's table and, when ``path`` is given, write its report as JSON;
    the exit status of a benchmark that finished."""
    print(text)
    if path is not None:
        path.write_text(json.dumps(report, indent=1) + "\n")
    return 0


def release_main(
    prog: str,
    doc: str | None,
    measure: Callable[[Any], dict[str, Any]],
    render: Callable[[dict[str, Any]], str],
    argv: list[str] | None,
) -> int:
    """The command line of a benchmark over one release (``--release DIR``, ``--json
    OUT``): open it, ``measure`` it, print ``render``'s table and save the report."""
    parser = argparse.ArgumentParser(prog=prog, description=doc)
    parser.add_argument("--release", type=Path, default=Path("build/current"))
    parser.add_argument("--json", type=Path, help="write the report here")
    args = parser.parse_args(argv)
    with Release.open(args.release) as release:
        report = measure(release)
    return print_and_save(render(report), report, args.json)
