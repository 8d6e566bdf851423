"""The load benchmark runs: both adapters answer its clients with no error, and it
reports the memory and the fast call beside a slow one (figures in benchmarks/)."""

from __future__ import annotations

import anyio

from benchmarks.load import measure, render
from tests.support.build import Build


def test_the_load_benchmark_runs_briefly(mirror_build: Build) -> None:
    report = anyio.run(measure, mirror_build.release, 2, 3.0, 0.0)
    for adapter in ("mcp_http", "rest"):
        assert report[adapter]["calls"] > 0 and report[adapter]["errors"] == 0, report[adapter]
        assert report[adapter]["rss_mb"]["peak"] >= report[adapter]["rss_mb"]["before"] > 0
    assert report["get_release_info"]["during_run_sql"]["calls"] > 0
    assert "while a run_sql runs to its deadline" in render(report)
