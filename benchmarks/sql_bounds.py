"""``python -m benchmarks.sql_bounds [--release DIR]``: what the bounded SQL worker
lets the queries that once took a server down cost.

Each query runs through ``run_sql`` in a fresh one-worker pool; a thread samples the
worker's peak resident memory (``VmHWM``) until the answer comes, and the serving
process's own peak is printed at the end. Prints one line per query: the answer's
code (or ``ok``), the wall time and the worker's peak RSS. Not part of the harness's
sections: a run takes about a minute and allocates gigabytes on purpose.
"""

from __future__ import annotations

import argparse
import json
import resource
import threading
import time
from pathlib import Path
from typing import Any

from metabundle.release.pointer import resolve_release
from metabundle.search.errors import ToolError
from metabundle.search.sql_pool import WORKER_ADDRESS_SPACE, SqlWorkers, run_sql

QUERIES = (
    "SELECT len(list_sort(range(1000000000)))",
    "SELECT list_sum(range(100000000))",
    "SELECT range(100000) FROM range(1000)",
    "SELECT repeat('x', 1000000) || i FROM range(1000) t(i)",
    "SELECT repeat('x', 1000000000)",
    "SELECT range(30000) FROM range(1000)",
    "SELECT x." + ".".join(["a"] * 9900),
)


def _peak_mib(pid: int) -> float:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0.0
    for line in status.splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def measure(database: Path, sql: str) -> dict[str, Any]:
    """The outcome, wall time and worker peak RSS of one query."""
    workers = SqlWorkers(database, size=1)
    run_sql(workers, "SELECT 1")  # start the worker before timing
    (pid,) = workers.idle_pids()
    peak = [0.0]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], _peak_mib(pid))
            time.sleep(0.02)

    sampler = threading.Thread(target=sample)
    sampler.start()
    started = time.perf_counter()
    try:
        run_sql(workers, sql, max_rows=1000)
        outcome = "ok"
    except ToolError as error:
        outcome = error.code
    wall = time.perf_counter() - started
    done.set()
    sampler.join()
    workers.close()
    return {"sql": sql[:60], "outcome": outcome, "wall_s": round(wall, 2), "peak_mib": peak[0]}


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.sql_bounds", description=__doc__)
    parser.add_argument("--release", type=Path, default=Path("build/current"))
    args = parser.parse_args()
    database = resolve_release(args.release) / "metabundle.duckdb"
    print(f"worker address-space limit: {WORKER_ADDRESS_SPACE / 2**30:.1f} GiB")
    for sql in QUERIES:
        print(json.dumps(measure(database, sql)))
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"serving process peak RSS: {own:.0f} MiB")


if __name__ == "__main__":
    main()
