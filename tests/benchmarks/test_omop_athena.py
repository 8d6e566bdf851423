"""The Athena-scale benchmark's path at a tiny size: a generated export with Athena's
proportions, built by the real ``metabundle build`` (OMOP only, no embeddings) and
queried through every tool it times. Figures are not held to targets here."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from benchmarks.omop_athena import ATHENA_ROWS, generate, run, sizes, stage_times

TINY = 0.0005  # 3,250 concepts, 25,000 relationships, 45,000 ancestor rows


def read(path: Path) -> pl.DataFrame:
    return pl.read_csv(path, separator="\t", quote_char=None, infer_schema=False)


def test_the_export_has_athena_proportions_and_structure(tmp_path: Path) -> None:
    rows = generate(tmp_path, TINY)
    assert rows == sizes(TINY)
    assert (
        rows["relationships"] / rows["concepts"]
        == ATHENA_ROWS["relationships"] / ATHENA_ROWS["concepts"]
    )
    concept = read(tmp_path / "CONCEPT.csv")
    relationship = read(tmp_path / "CONCEPT_RELATIONSHIP.csv")
    ancestor = read(tmp_path / "CONCEPT_ANCESTOR.csv")
    assert concept.height == rows["concepts"]
    assert relationship.height == rows["relationships"]
    assert ancestor.height == rows["ancestors"]
    standard = set(concept.filter(pl.col("STANDARD_CONCEPT") == "S")["CONCEPT_ID"])
    hierarchical = set(concept.filter(pl.col("STANDARD_CONCEPT").is_not_null())["CONCEPT_ID"])
    maps = relationship.filter(pl.col("RELATIONSHIP_ID") == "Maps to")
    assert maps.height and set(maps["CONCEPT_ID_2"]) <= standard
    # every relationship is stored with its reverse
    forward = set(zip(relationship["CONCEPT_ID_1"], relationship["CONCEPT_ID_2"], strict=True))
    assert all((b, a) in forward for a, b in list(forward)[:500])
    assert set(ancestor["ANCESTOR_CONCEPT_ID"]) <= hierarchical
    assert (ancestor["MIN_LEVELS_OF_SEPARATION"] == "0").sum() == len(hierarchical)


def test_stage_times_come_from_the_progress_lines() -> None:
    log = "[   1.0s] core_omop  started\n[   4.5s] search_docs  x\n[   6.0s] release  done\n"
    assert stage_times(log) == {"core_omop": 3.5, "search_docs": 1.5, "release": 0.0}


def test_the_benchmark_runs_end_to_end_at_a_tiny_size(tmp_path: Path) -> None:
    report = run(TINY, tmp_path / "work")
    assert report["rows"] == sizes(TINY)
    build = report["build"]
    assert {"core_omop", "search_docs", "keyword_index", "release"} <= set(build["stages_s"])
    assert build["peak_rss_mib"] > 0 and build["release_mib"] > 0
    tools = report["tools"]
    assert {"concept_ancestors", "concept_set_resolve", "concept_path", "concept_ground"} <= set(
        tools
    )
    for name, figures in tools.items():
        assert figures["errors"] == 0, name
        assert 0 < figures["p50_ms"] <= figures["p95_ms"]
    lookups = report["lookup_copies"]
    assert set(lookups) == {
        "omop_concept_ancestor by descendant_concept_id",
        "omop_concept_relationship by concept_id_2",
    }
    assert all(f["table_p50_ms"] > 0 and f["copy_p50_ms"] > 0 for f in lookups.values())
    assert not (tmp_path / "work").exists()
