"""The tools tests' evaluation sets (``tests/eval/<source>.jsonl``) and their figures.

The metrics are the benchmarks' own (:mod:`benchmarks.quality`: recall@k, reciprocal
rank and graded nDCG over the top 10), so a test threshold and a benchmark figure
measure the same thing.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from benchmarks.quality import ndcg, recall, reciprocal_rank

EVAL_DIR = Path(__file__).resolve().parents[1] / "eval"
KINDS = ("paraphrase", "keyword", "identifier")

Query = dict[str, Any]
Figures = dict[str, float]
Measure = Callable[[list[Query], str], Figures]
"""(the queries of one kind, a search method) → the mean figures of that method."""


CORPORA = ("session", "complete")
"""Which build answers a line: the session build (six dbGaP studies, every other source
whole) unless the line says ``"corpus": "complete"`` (only the complete mirror build)."""


def corpus_of(query: Query) -> str:
    """The build a line is evaluated on (see :data:`CORPORA`)."""
    return query.get("corpus", "session")


def load_eval(
    source: str, corpus: str | None = "session", provenance: str | None = None
) -> list[Query]:
    """The queries of ``tests/eval/<source>.jsonl`` answered by ``corpus`` (``None``:
    every line) and, when given, of one provenance kind (``independent``: taken from
    public material that names the answer; ``derived``: written from the data), in
    file order."""
    path = EVAL_DIR / f"{source}.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [
        row
        for row in rows
        if (corpus is None or corpus_of(row) == corpus)
        and (provenance is None or row["provenance"]["kind"] == provenance)
    ]


def calibration_set(source: str) -> list[Query]:
    """The session lines the tools tests' thresholds were measured on: those written
    from the data (``derived``). The grown set as a whole, independent lines included,
    is measured by ``benchmarks/quality.py``."""
    return load_eval(source, provenance="derived")


def ranking_metrics(ranked: list[str], relevant: dict[str, int]) -> Figures:
    """recall@5 and recall@10 (any grade), the reciprocal rank of the first relevant
    result and nDCG@10 (graded) of one ranking."""
    return {
        "recall@5": recall(ranked, relevant, k=5),
        "recall@10": recall(ranked, relevant),
        "mrr": reciprocal_rank(ranked, relevant),
        "ndcg@10": ndcg(ranked, relevant),
    }


def mean_figures(per_query: Iterable[Figures]) -> Figures:
    """Each figure averaged over the queries (in the order the first query names them)."""
    rows = list(per_query)
    return {name: sum(row[name] for row in rows) / len(rows) for name in rows[0]}


def figures_by_kind(
    queries: list[Query], methods: Sequence[str], measure: Measure, title: str
) -> dict[str, dict[str, Figures]]:
    """Kind → method → figures over that kind's queries, printed under ``title``."""
    figures: dict[str, dict[str, Figures]] = {}
    for kind in KINDS:
        subset = [q for q in queries if q["kind"] == kind]
        figures[kind] = {method: measure(subset, method) for method in methods}
    print(f"\n{title}:")
    for kind, by_method in figures.items():
        for method, values in by_method.items():
            shown = ", ".join(f"{k} {v:.3f}" for k, v in values.items())
            print(f"  {kind:<10} {method:<8} {shown}")
    return figures
