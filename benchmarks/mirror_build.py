"""The complete build of a mirror, end to end, as a user runs it.

``python -m benchmarks.mirror_build [--upstream DIR] [--providers minilm,wordllama]
[--work DIR] [--json OUT]``

For each embedding provider it runs the real ``metabundle build`` (default profile:
everything the mirror holds) twice into one output folder:

* **cold**: an empty output folder and cache — every file downloaded from the mirror,
  every table parsed, every distinct text embedded;
* **warm**: the same command again with the upstream unchanged — what a scheduled
  rebuild costs (every file revalidated, every stage found in the cache, the release
  found up to date and not written again).

It reports wall time, peak memory of the build process (``ru_maxrss`` of the child),
the embedding step's texts and rate, each step's seconds (from the build's own
``work/build_report.json``), the release size per file kind, and the load average
around each run (the machine is shared: read the rate against it).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.common import REPO, loadavg, machine, print_and_save

DEFAULT_UPSTREAM = REPO.parent / "shared" / "upstream"


PEAK_MARK = "peak_rss_kb="
# A fresh parent per build, so that ``RUSAGE_CHILDREN`` holds that build's peak alone.
MEASURE_CHILD = (
    "import resource, subprocess, sys\n"
    "code = subprocess.run(sys.argv[1:]).returncode\n"
    f"print('{PEAK_MARK}%d' % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss,"
    " file=sys.stderr)\n"
    "sys.exit(code)\n"
)


def _build(upstream: Path, out: Path, provider: str) -> dict[str, Any]:
    """One ``metabundle build``: its wall time, peak RSS, result and step report."""
    load = loadavg()[0]
    started = time.perf_counter()
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            MEASURE_CHILD,
            sys.executable,
            "-m",
            "metabundle.cli",
            "build",
            "--upstream",
            str(upstream),
            "--out",
            str(out),
            "--embeddings",
            provider,
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - started
    peak_kb = int(done.stderr.rsplit(PEAK_MARK, 1)[-1].strip() or 0)
    if done.returncode != 0:
        raise RuntimeError(f"build with {provider} failed: {done.stderr[-2000:]}")
    report = json.loads((out / "work" / "build_report.json").read_text())
    steps = report["steps"]
    embed = steps["embeddings"]
    reused = bool(embed["reused"].get("embeddings"))  # the whole step came from the cache
    embedded = 0 if reused else int(embed["reused"].get("embedded", 0))
    # the shards (each a step `embed <source>_<n>`) embed; `embeddings` reads their vectors
    embed_s = sum(step["seconds"] for name, step in steps.items() if name.startswith("embed "))
    embed_s += embed["seconds"]
    return {
        "wall_s": round(wall, 1),
        "peak_rss_mb": round(peak_kb / 1024),
        "load1": [load, loadavg()[0]],
        "up_to_date": "up to date" in done.stderr,
        "texts": embed["reused"].get("requested"),
        "distinct_texts": embed["reused"].get("unique"),
        "texts_embedded": embedded,
        "embed_s": round(embed_s, 1),
        "texts_embedded_per_s": round(embedded / embed_s, 1) if embedded else None,
        "steps_s": {name: step["seconds"] for name, step in sorted(steps.items())},
        "release": str(Path(done.stdout.strip().splitlines()[-1])),
    }


def _sizes(release: Path) -> dict[str, int]:
    """Bytes of the release per file kind (extension, or folder for index files)."""
    sizes: dict[str, int] = {}
    for path in release.rglob("*"):
        if path.is_file():
            kind = path.suffix.lstrip(".") or path.name
            sizes[kind] = sizes.get(kind, 0) + path.stat().st_size
    sizes["total"] = sum(sizes.values())
    return dict(sorted(sizes.items()))


def measure(upstream: Path, providers: list[str], work: Path) -> dict[str, Any]:
    """Cold and warm builds per provider; each provider in its own empty folder."""
    results: dict[str, Any] = {}
    for provider in providers:
        out = work / provider
        shutil.rmtree(out, ignore_errors=True)
        cold = _build(upstream, out, provider)
        warm = _build(upstream, out, provider)
        results[provider] = {
            "cold": cold,
            "warm": warm,
            "release_bytes": _sizes(Path(cold["release"])),
            "warm_ratio_vs_cold": round(warm["wall_s"] / cold["wall_s"], 3),
        }
    return {"machine": machine(), "upstream": str(upstream), "providers": results}


def render(report: dict[str, Any]) -> str:
    """The figures as a small table."""
    lines = [
        "provider   run   wall s  peak MB  embedded  texts/s  up to date  release MB",
    ]
    for provider, result in report["providers"].items():
        size = result["release_bytes"]["total"] / 1e6
        for run in ("cold", "warm"):
            figures = result[run]
            rate = figures["texts_embedded_per_s"] or 0
            lines.append(
                f"{provider:<10} {run:<5} {figures['wall_s']:>7.1f} {figures['peak_rss_mb']:>8}"
                f" {figures['texts_embedded']:>9} {rate:>8.1f} {figures['up_to_date']!s:>11}"
                f" {size:>11.1f}"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.mirror_build", description=__doc__)
    parser.add_argument("--upstream", type=Path, default=DEFAULT_UPSTREAM)
    parser.add_argument("--providers", default="minilm,wordllama")
    parser.add_argument("--work", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")))
    parser.add_argument("--json", type=Path, help="write the report here")
    args = parser.parse_args(argv)
    providers = [p.strip() for p in args.providers.split(",") if p.strip()]
    report = measure(args.upstream.resolve(), providers, args.work / "mirror-build-bench")
    return print_and_save(render(report), report, args.json)


if __name__ == "__main__":
    sys.exit(main())
