"""How ``search_all`` makes one list of every source: the production merge against the
same interleave without unmatched tails and against one global ranking, query by query,
over every evaluation set.

``python -m benchmarks.search_all_merge [--release DIR] [--json OUT]``

Every query of ``tests/eval/<source>.jsonl`` is asked of ``search_all`` over *every*
source (no ``sources`` filter), as an agent that does not know where a variable lives
would ask it; a result counts when it is one of that query's relevant entities of
that source. Three merges are compared in one run:

* **production**: ``search_all`` itself — each source ranked on its own, then the
  sources' rankings interleaved by rank (ties by cosine), each source's unmatched tail
  (from its first hit whose BM25 is below a fifth of the query's ideal BM25 and that is
  no closer than unrelated documents) after every source's matches;
* **rounds**: the same interleave without the unmatched tails (``unmatched_last`` off),
  the merge before them;
* **global**: one hybrid ranking over all documents at once (reciprocal rank fusion
  of one BM25 and one ANN list), versions collapsed the same way — the merge used
  before the interleave.

It reports nDCG@10 and recall@10 per source and pooled, with the paired differences
(production − rounds, production − global) and their 95 % bootstrap intervals.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from benchmarks.common import release_main
from benchmarks.quality import _paired, load_sets, ndcg, recall
from metabundle.search.ranking.merge import distinct_entities, fold_into_parents, rank_all
from metabundle.search.ranking.pipeline import rank
from metabundle.search.ranking.policies import SEARCH_ALL
from metabundle.search.release import Release
from metabundle.search.retrieval import documents
from metabundle.search.tools import call_tool

K = 10
MERGES = ("production", "rounds", "global")
BASELINES = ("rounds", "global")


def production(release: Release, query: str) -> list[tuple[str, str]]:
    payload = call_tool(release, "search_all", {"query": query, "limit": K})
    return [(item["source"], item["id"]) for item in payload["results"]]


def rounds(release: Release, query: str) -> list[tuple[str, str]]:
    merged = rank_all(
        release,
        query,
        method="hybrid",
        sources=sorted(release.manifest["sources"]),
        kinds_mask=None,
        limit=K,
        policy=replace(SEARCH_ALL, unmatched_last=None),
    )
    return [
        (merged.rows[h.docno]["source"], merged.rows[h.docno]["entity_id"]) for h in merged.hits
    ]


def global_ranking(release: Release, query: str) -> list[tuple[str, str]]:
    hits, _retrieval = rank(
        release, query, policy=SEARCH_ALL, method="hybrid", mask=None, limit=K * 3
    )
    rows = documents(release, [h.docno for h in hits])
    kept, _collapsed = distinct_entities(fold_into_parents(release, hits, rows), rows)
    return [(rows[h.docno]["source"], rows[h.docno]["entity_id"]) for h in kept[:K]]


def ranked_ids(results: list[tuple[str, str]], source: str) -> list[str]:
    """The results as ids, another source's results as ids that match nothing."""
    return [entity if where == source else f"{where}:{entity}" for where, entity in results]


RANKERS: dict[str, Callable[[Release, str], list[tuple[str, str]]]] = {
    "production": production,
    "rounds": rounds,
    "global": global_ranking,
}


def measure(release: Release) -> dict[str, Any]:
    """Per source and pooled: each merge's means and the paired comparison."""
    per_query: dict[str, dict[str, dict[str, list[float]]]] = {}
    in_release = set(release.manifest["sources"])
    for source, cases in load_sets().items():
        if source not in in_release:
            continue
        figures: dict[str, dict[str, list[float]]] = {m: {"ndcg": [], "recall": []} for m in MERGES}
        for case in cases:
            for merge, ranker in RANKERS.items():
                ranked = ranked_ids(ranker(release, case.query), source)
                figures[merge]["ndcg"].append(ndcg(ranked, case.relevant, K))
                figures[merge]["recall"].append(recall(ranked, case.relevant, K))
        per_query[source] = figures
    report: dict[str, Any] = {"release": str(release.path), "sources": {}}
    pooled = {m: {"ndcg": [], "recall": []} for m in MERGES}
    for source, figures in per_query.items():
        report["sources"][source] = _summary(figures)
        for merge in MERGES:
            for metric in ("ndcg", "recall"):
                pooled[merge][metric] += figures[merge][metric]
    report["pooled"] = _summary(pooled)
    return report


def _summary(figures: dict[str, dict[str, list[float]]]) -> dict[str, Any]:
    queries = len(figures["production"]["ndcg"])
    out: dict[str, Any] = {"queries": queries}
    for metric in ("ndcg", "recall"):
        out[metric] = {m: round(sum(figures[m][metric]) / queries, 4) for m in MERGES}
        out[metric]["paired"] = {
            base: _paired(figures["production"][metric], figures[base][metric])
            for base in BASELINES
        }
    return out


def render(report: dict[str, Any]) -> str:
    lines = [
        "set       queries  metric     prod / rounds / global   Δ vs rounds (95 % CI)"
        "        Δ vs global (95 % CI)"
    ]
    for name, row in [*report["sources"].items(), ("pooled", report["pooled"])]:
        for metric in ("ndcg", "recall"):
            figures = " / ".join(f"{row[metric][m]:.3f}" for m in MERGES)
            deltas = []
            for base in BASELINES:
                paired = row[metric]["paired"][base]
                low, high = paired["ci95"]
                deltas.append(f"{paired['mean_delta']:+.3f} [{low:+.3f}, {high:+.3f}]")
            label = name if metric == "ndcg" else ""
            lines.append(
                f"{label:<9} {row['queries']:>7}  {metric + '@10':<9}  {figures:<23}  "
                f"{deltas[0]:<27}  {deltas[1]}"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    return release_main("python -m benchmarks.search_all_merge", __doc__, measure, render, argv)


if __name__ == "__main__":
    sys.exit(main())
