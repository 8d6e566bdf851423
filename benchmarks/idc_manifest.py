"""``python -m benchmarks.idc_manifest [--release DIR] [--pages N]``: what paging and
streaming an Imaging Data Commons selection cost.

The selection is breast MR (``Modality`` MR, ``BodyPartExamined`` BREAST: 48,333 series
at IDC v25). Two ratios, each against a baseline measured in the same run:

* a ``get_cohort_urls`` page (200 series, both clouds, counts and commands) against a
  bare DuckDB query of the same 200 rows, pages interleaved with their baseline;
* the Python memory peak (tracemalloc) of streaming the whole s5cmd manifest to a file
  against materializing its lines in a list.

Also prints the largest page in bytes. Not part of the harness's sections.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

from metabundle.release.pointer import resolve_release
from metabundle.search.release import Release
from metabundle.search.services.idc.filters import compile_filters
from metabundle.search.services.idc.manifest import manifest_lines, scope
from metabundle.search.tools import call_tool

FILTERS = {"Modality": ["MR"], "BodyPartExamined": ["BREAST"]}
PAGE = 200
BASELINE_SQL = (
    "SELECT SeriesInstanceUID, aws_bucket, crdc_series_uuid, series_size_MB FROM idc_series "
    "WHERE Modality = 'MR' AND BodyPartExamined = 'BREAST' "
    "ORDER BY SeriesInstanceUID LIMIT ? OFFSET ?"
)


def _seconds(work: Callable[[], Any]) -> float:
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def paging(release: Release, pages: int) -> dict[str, Any]:
    """Median page time of the tool and of the bare query, and the largest page."""
    total = call_tool(release, "get_cohort_urls", {"filters": FILTERS, "limit": 1})
    series = total["counts"]["series"]
    step = max(PAGE, series // pages // PAGE * PAGE)
    tool, bare, largest = [], [], 0
    for offset in range(0, series, step):
        arguments = {"filters": FILTERS, "limit": PAGE, "offset": offset}
        start = time.perf_counter()
        payload = call_tool(release, "get_cohort_urls", arguments)
        tool.append(time.perf_counter() - start)
        bare.append(_seconds(lambda o=offset: release.query(BASELINE_SQL, [PAGE, o])))
        largest = max(largest, len(json.dumps(payload)))
    return {
        "series": series,
        "pages_timed": len(tool),
        "tool_page_ms": round(statistics.median(tool) * 1000, 1),
        "bare_page_ms": round(statistics.median(bare) * 1000, 1),
        "ratio": round(statistics.median(tool) / statistics.median(bare), 2),
        "largest_page_bytes": largest,
    }


def _peak(work: Callable[[], Any]) -> int:
    tracemalloc.start()
    work()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def streaming(release: Release) -> dict[str, Any]:
    """Python memory peak of streaming the manifest against holding it in a list."""
    rows = scope(compile_filters(release, FILTERS))
    with tempfile.TemporaryDirectory() as folder:
        target = Path(folder) / "manifest.s5cmd"

        def stream() -> None:
            with target.open("w") as out:
                for line in manifest_lines(release, rows, "aws"):
                    out.write(line + "\n")

        streamed = _peak(stream)
        size = target.stat().st_size
    held = _peak(lambda: list(manifest_lines(release, rows, "aws")))
    return {
        "manifest_bytes": size,
        "streamed_peak_bytes": streamed,
        "list_peak_bytes": held,
        "ratio": round(streamed / held, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--release", type=Path, default=Path("build"))
    parser.add_argument("--pages", type=int, default=30, help="Pages to time (spread out).")
    args = parser.parse_args()
    with Release.open(resolve_release(args.release)) as release:
        report = {"paging": paging(release, args.pages), "streaming": streaming(release)}
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
