"""The scale benchmark's parts on the session's mirror build: the generated export it
adds to the mirror, and serving a release, whose figures its table prints beside the
same figures of another size (the 1M and 10M run itself is in benchmarks/README.md)."""

from __future__ import annotations

from pathlib import Path

from benchmarks.scale import (
    MIRROR_DOCS,
    export_rows,
    growth,
    make_export,
    release_sizes,
    render,
    serve,
)
from metabundle.search.release import Release
from tests.support.build import Build


def test_the_export_brings_the_documents_asked_for(tmp_path: Path) -> None:
    rows = export_rows(10_000_000)
    documents = MIRROR_DOCS + rows["concepts"] * 1.52  # a concept, and All of Us's EHR items
    assert abs(documents - 10_000_000) < 10_000
    written = make_export(tmp_path, MIRROR_DOCS + 3_000)
    assert written["rows"] == export_rows(MIRROR_DOCS + 3_000)
    assert {p.name for p in tmp_path.iterdir()} >= {"CONCEPT.csv", "CONCEPT_RELATIONSHIP.csv"}


def test_serving_a_release_gives_every_figure_the_table_prints(
    mirror_build: Build, release: Release
) -> None:
    served = serve(mirror_build.release)
    assert served["documents"] == release.query("SELECT count(*) FROM search_doc")[0][0]
    for method in ("keyword", "hybrid"):
        assert served["first_answer"][method]["results"] == 10
    assert served["serving"]["calls"] == 250 and served["serving"]["errors"] == 0
    assert served["serving"]["rss_mb"] > served["serving"]["rss_after_open_mb"] > 0
    assert {m: served["search_all"][m]["n"] for m in ("keyword", "semantic", "hybrid")} == {
        "keyword": 120,
        "semantic": 120,
        "hybrid": 120,
    }
    assert served["ann"]["recall_at_10"]["tie_aware"] >= 0.98
    sizes = release_sizes(mirror_build.release)
    assert sizes["total"] > 0 and sizes["metabundle.duckdb"] > 0
    size = {
        "target_docs": served["documents"],
        "build": {
            "wall_s": 1.0,
            "peak_rss_mib": 100,
            "steps": {"release": {"s": 1.0, "peak_rss_mib": 100}},
        },
        "release_mib": sizes,
        **served,
    }
    report = {"sizes": [size, size]}
    report["growth"] = growth(report["sizes"])
    table = render(report)
    assert report["growth"]["serving_rss"] == 1.0
    assert "| serving RSS after 250 calls MB |" in table
    assert f"| ANN recall@10 (tie-aware) | {served['ann']['recall_at_10']['tie_aware']} |" in table
