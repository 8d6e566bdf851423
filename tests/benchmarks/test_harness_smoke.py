"""The benchmark harness runs end to end on a tiny corpus, so that it cannot rot.

``python -m benchmarks --mode tiny`` runs once, as a user would run it, against the
session release (the quality part on the first queries of each evaluation set, through
the real tools). The figures are not held to targets (a shared CI machine is no place
for timings); the test checks that every section ran and measured something sensible,
and that the JSON report and the table were written.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.common import MODES, child_env
from benchmarks.quality import EVAL_DIR, ndcg, recall, reciprocal_rank
from metabundle.index import ann
from metabundle.search.release import Release
from metabundle.search.tools import all_tools

REPO = Path(__file__).resolve().parents[2]
HEADLINE = (
    "keyword_p50_ratio_vs_fts5",
    "ann_recall_at_10",
    "ann_p50_ms",
    "ann_p50_ratio_vs_raw",
    "semantic_path_recall_at_10",
    "semantic_path_recall_at_10_per_source",
    "hybrid_p50_ms",
    "open_release_s",
    "mcp_tools_list_s",
    "serve_rss_mb",
    "open_check_s",
    "embed_texts_per_s",
    "build_docs_per_s",
    "omop_ingest",
    "ndcg_at_10",
    "recall_at_10",
    "fusion_winner",
)


def test_metrics_of_hand_made_rankings():
    relevant = {"a": 3, "b": 1}
    assert ndcg(["a", "b", "x"], relevant) == pytest.approx(1.0)
    assert ndcg(["x", "a"], relevant) == pytest.approx((7 / 1.5849625) / (7 + 1 / 1.5849625))
    assert ndcg(["x", "y"], relevant) == 0.0
    assert recall(["x", "b"], relevant) == 0.5
    assert recall(["x"] * 10 + ["a"], relevant) == 0.0  # beyond the top 10
    assert reciprocal_rank(["x", "y", "b"], relevant) == pytest.approx(1 / 3)


@pytest.fixture(scope="module")
def tiny_run(release: Release, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The report and printed table of one tiny run of the command line."""
    out = tmp_path_factory.mktemp("bench") / "report.json"
    command = ["-m", "benchmarks", "--mode", "tiny", "--release", str(release.path)]
    done = subprocess.run(
        [sys.executable, *command, "--json", str(out)],
        cwd=REPO,
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    report = json.loads(out.read_text()) if out.exists() else {}
    assert done.returncode == 0, report.get("tracebacks") or done.stderr[-3000:]
    return {"report": report, "table": done.stdout}


@pytest.mark.slow
def test_report_has_every_headline_figure_and_the_table(tiny_run):
    report, table = tiny_run["report"], tiny_run["table"]
    assert report["mode"] == "tiny"
    assert not report["errors"]
    missing = [key for key in HEADLINE if key not in report]
    assert not missing
    assert "keyword_p50_ratio_vs_fts5" in table
    assert "fusion grid" in table
    assert report["keyword_p50_ratio_vs_fts5"] == report["sections"]["keyword"]["p50_ratio_vs_fts5"]
    assert report["calibration"]["start"]["python_loop_1m_ms"] > 0


@pytest.mark.slow
def test_speed_and_scale_sections_measured_the_tiny_corpus(tiny_run, release: Release):
    report = tiny_run["report"]
    keyword = report["sections"]["keyword"]
    assert keyword["docs"] == MODES["tiny"].keyword_docs
    assert keyword["top10_overlap"] > 0.8  # same corpus, same terms: nearly the same top 10
    assert keyword["duckdb_macro"]["queries_with_different_scores"] == 0
    assert report["keyword_p50_ratio_vs_fts5"] > 0

    for backend, value in report["ann_recall_at_10"].items():
        assert 0.7 <= value <= 1.0, backend
        assert report["ann_p50_ratio_vs_raw"][backend] > 0
    assert 0.7 <= report["semantic_path_recall_at_10"] <= 1.0
    per_source = report["sections"]["ann"]["release_path"]["per_source"]
    assert set(report["semantic_path_recall_at_10_per_source"]) == set(per_source)
    for source, row in per_source.items():  # every source's index measured on its own
        assert 0.7 <= row["recall_at_10"]["tie_aware"] <= 1.0, source
        assert row["breadth"] >= 1 and row["backend"] in ann.BACKENDS

    serving = report["sections"]["serving"]
    assert serving["memory"]["errors"] == 0
    assert serving["memory"]["duckdb_mb"]["BASE_TABLE"] > 0  # what DuckDB holds is reported
    assert serving["first_answer"]["keyword"]["results"] > 0
    assert report["open_release_s"] > serving["first_answer"]["python_start_s"]
    assert serving["mcp_start"]["tools"] == len(all_tools())  # the real server answered
    assert report["serve_rss_mb"] > 0

    for provider in ("wordllama", "minilm"):
        assert all(rate > 0 for rate in report["embed_texts_per_s"][provider].values())

    build = report["sections"]["build"]
    idc_docs = release.query("SELECT count(*) FROM search_doc WHERE source = 'idc'")[0][0]
    assert build["sources"] == ["idc"]
    assert build["docs"] == idc_docs
    assert report["build_docs_per_s"] > 0

    omop = report["sections"]["omop"]
    assert omop["rows"]["omop_concept"] == MODES["tiny"].omop_concepts
    assert "smaller than the full-size export" in omop["export"]


@pytest.mark.slow
def test_quality_ran_every_evaluation_set_through_the_tools(tiny_run, release: Release):
    quality = tiny_run["report"]["sections"]["quality"]
    in_release = set(release.manifest["sources"])
    sets = {p.stem for p in EVAL_DIR.glob("*.jsonl")} & in_release
    assert set(quality["methods"]) == sets
    for source, methods in quality["methods"].items():
        assert {"keyword", "semantic", "hybrid"} <= set(methods), source
        for name, row in methods.items():
            assert not row["errors"], (source, name, row["errors"])
            assert row["queries"] == min(
                MODES["tiny"].quality_max_queries, quality["sets"][source]["queries_in_file"]
            )
            assert 0.0 <= row["ndcg_at_10"] <= 1.0
            assert 0.0 <= row["recall_at_10"] <= 1.0
        grid = quality["fusion_grid"][source]
        assert grid["winner"] in grid["fusions"]
        assert {"production", "rrf_k60", "keyword_only", "semantic_only"} <= set(grid["fusions"])
    # ids are matched: results of the tools and of the grid do hit relevant entities
    tool_scores = [r["ndcg_at_10"] for m in quality["methods"].values() for r in m.values()]
    grid_scores = [
        f["ndcg_at_10"] for g in quality["fusion_grid"].values() for f in g["fusions"].values()
    ]
    assert max(tool_scores) > 0.3
    assert max(grid_scores) > 0.3
