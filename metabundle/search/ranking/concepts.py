"""The scores of OMOP concept matching (:mod:`metabundle.search.services.omop.match`):
BM25 normalised by the query's ideal score, and the partial-match score."""

from __future__ import annotations

import numpy as np

from metabundle.index.fts import KeywordIndex


def ideal_score(index: KeywordIndex, terms: list[str], concepts: np.ndarray) -> float:
    """The normalizer of BM25 scores: over the distinct ``terms``, the sum of each one's
    largest weight among ``concepts``, where a term no concept contains counts as much
    as the heaviest one that some concept does (0.0 when no concept has any term)."""
    best: list[float] = []
    for term_id in index.term_ids(terms):
        start, end = int(index.offsets[term_id]), int(index.offsets[term_id + 1])
        docs, weights = index.docno[start:end], index.weight[start:end]
        keep = concepts[docs]
        if keep.any():
            best.append(float(weights[keep].max()))
    if not best:
        return 0.0
    unmatched = len(set(terms)) - len(best)
    return sum(best) + unmatched * max(best)


def normalized_rank(score: float, ideal: float) -> float:
    """A concept's BM25 over the query's :func:`ideal_score`, at most 1.0."""
    return min(1.0, score / ideal)


def partial_score(query_text: str, matched_length: int) -> float:
    """A partial match's score: the query's length over the matched string's."""
    return min(1.0, len(query_text) / max(matched_length, 1))
