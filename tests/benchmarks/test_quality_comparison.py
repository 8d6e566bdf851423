"""The quality benchmark compares production hybrid with keyword-only and semantic-only
on the same queries, per query kind and per provenance kind, and keeps queries whose
answers only a complete-mirror build holds out of the session build's figures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.quality import evaluate
from metabundle.search.release import Release

LINES = [
    {
        "query": "low-dose CT lung cancer screening trial",
        "relevant": {"nlst": 3},
        "kind": "paraphrase",
        "provenance": {"kind": "independent", "source": "a paper", "evidence": "names NLST"},
    },
    {"query": "lung ct", "relevant": {"nlst": 2, "lidc_idri": 2}, "kind": "keyword"},
    {
        "query": "prostate mri",
        "relevant": {"prostate_mri_us_biopsy": 3},
        "kind": "keyword",
        "provenance": {"kind": "derived", "source": "collection title", "evidence": "title"},
    },
    {
        "query": "not in the session build",
        "relevant": {"no_such_collection": 3},
        "kind": "keyword",
        "corpus": "complete",
    },
]


def test_hybrid_is_compared_with_each_method_per_kind_and_provenance(
    release: Release, tmp_path: Path
) -> None:
    (tmp_path / "idc.jsonl").write_text("\n".join(json.dumps(line) for line in LINES) + "\n")
    result = evaluate(release, folder=tmp_path, sources=["idc"], grid=False)
    assert result["sets"]["idc"]["queries"] == 3
    assert result["sets"]["idc"]["complete_corpus_queries"] == 1
    assert result["sets"]["idc"]["provenance"] == {"independent": 1, "unrecorded": 1, "derived": 1}
    comparison = result["comparison"]["idc"]
    assert set(comparison["provenance"]) == {"derived", "independent", "unrecorded"}
    assert set(comparison["kind"]) == {"keyword", "paraphrase"}
    overall = comparison["all"]["all"]
    assert overall["queries"] == 3
    ndcg = overall["ndcg_at_10"]
    hybrid = result["methods"]["idc"]["hybrid"]["ndcg_at_10"]
    assert ndcg["hybrid"] == hybrid
    for baseline in ("keyword", "semantic"):
        paired = ndcg[f"hybrid_vs_{baseline}"]
        low, high = paired["ci95"]
        assert low <= paired["mean_delta"] <= high
        assert paired["mean_delta"] == pytest.approx(ndcg["hybrid"] - ndcg[baseline], abs=1e-3)
    assert "idc@complete" not in result["methods"]  # no complete build was given
    with_complete = evaluate(
        release, folder=tmp_path, sources=["idc"], grid=False, complete_release=release
    )
    assert with_complete["methods"]["idc@complete"]["hybrid"]["queries"] == 1
