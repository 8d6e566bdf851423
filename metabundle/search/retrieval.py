"""Retrieval primitives: filter masks, candidate generators (exact identifiers, BM25,
title substrings, ANN), the :class:`Hit` with its score breakdown and the ``retrieval``
block of every search answer. The ranking rules that combine them are in
:mod:`metabundle.search.ranking` (one policy per tool, one pipeline).

- filters are applied before any candidate limit (as boolean masks over docnos);
- when query embeddings are unavailable hybrid degrades to keyword and says so, while
  an explicit ``semantic`` request fails instead;
- scores are retrieval signals, not calibrated probabilities.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from metabundle.index.ann import filtered_search
from metabundle.index.variants import ALTERNATIVE_WEIGHT
from metabundle.search.errors import EMBEDDINGS_UNAVAILABLE, ToolError
from metabundle.search.release import Release

Method = Literal["keyword", "semantic", "hybrid"]
METHODS: tuple[str, ...] = ("keyword", "semantic", "hybrid")
LOW_CONFIDENCE_RULE = (
    "no keyword term of the query matches, and the best cosine is below what the closest "
    "0.1 % of random pairs of this release's documents reach: the results are not known "
    "to be related to the query"
)
MIN_POOL = 50
MAX_POOL = 1000


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(float(value), 6)


@dataclass
class Hit:
    """One ranked document with every signal that ranked it."""

    docno: int
    score: float = 0.0
    keyword: float | None = None  # BM25 (or the keyword generator's own score)
    semantic: float | None = None  # cosine similarity
    exact: bool = False
    keyword_scaled: float = 0.0  # keyword over the query's best (or ideal) keyword score
    semantic_scaled: float = 0.0  # cosine min-max scaled over the query's candidates
    title_similarity: float | None = None
    title_match: float = 0.0  # shared terms² / (query terms × title terms)
    via_answers: bool = False  # a folded child's parent, placed by the child's rank
    intent: list[str] = field(default_factory=list)
    boost: float = 0.0
    boost_reason: str | None = None
    prior: str | None = None  # the prior that placed this hit, if any
    prior_bonus: float = 0.0  # what a prior added to the fused score

    def scores(self) -> dict[str, Any]:
        """The short breakdown most payloads show."""
        return {
            "score": round(float(self.score), 6),
            "keyword": _rounded(self.keyword),
            "semantic": _rounded(self.semantic),
            "exact_match": self.exact,
        }

    def breakdown(self) -> dict[str, Any]:
        """Every signal of the hit."""
        return {
            **self.scores(),
            "keyword_scaled": None if self.keyword is None else round(self.keyword_scaled, 6),
            "semantic_scaled": round(self.semantic_scaled, 6),
            "title_similarity": _rounded(self.title_similarity),
            "title_match": round(self.title_match, 6),
            "via_answers": self.via_answers,
            "intent": self.intent,
            "boost": self.boost,
            "boost_reason": self.boost_reason,
            "prior": self.prior,
            "prior_bonus": round(self.prior_bonus, 6),
        }


@dataclass
class Retrieval:
    """The ``retrieval`` block every search response carries."""

    method: str
    effective_method: str
    embedding_provider: str | None
    embedding_model: str | None
    policy: str
    weights: dict[str, Any] | None = None
    degraded: bool = False
    degraded_reason: str | None = None
    candidates: dict[str, int] = field(default_factory=dict)
    low_confidence: bool = False
    explain: dict[str, Any] | None = None  # the policy's rules, on request

    def to_json(self) -> dict[str, Any]:
        return {
            "low_confidence": self.low_confidence,
            **({"low_confidence_rule": LOW_CONFIDENCE_RULE} if self.low_confidence else {}),
            "method": self.method,
            "effective_method": self.effective_method,
            "policy": self.policy,
            "embedding_provider": self.embedding_provider,
            "embedding_model": self.embedding_model,
            "weights": self.weights,
            "degraded": self.degraded,
            "degraded_reason": self.degraded_reason,
            "candidates": self.candidates,
            "scores_calibrated": False,
            **({"explain": self.explain} if self.explain is not None else {}),
        }


# -- filters --------------------------------------------------------------------------


def mask_from_sql(release: Release, where: str, params: list[Any]) -> np.ndarray:
    """A docno mask of the documents matching a parameterized WHERE clause."""
    mask = np.zeros(release.n_docs, dtype=bool)
    with release.cursor() as cur:
        docnos = cur.execute(f"SELECT docno FROM search_doc WHERE {where}", params).fetchnumpy()
    mask[docnos["docno"]] = True
    return mask


def source_mask(release: Release, sources: list[str] | None) -> np.ndarray | None:
    """Documents of ``sources`` (None: no restriction)."""
    if not sources:
        return None
    masks = release.source_masks
    return combine_any([masks[s] for s in sources if s in masks], release.n_docs)


def combine_any(masks: list[np.ndarray], size: int) -> np.ndarray:
    """The union of ``masks`` (all false when there are none)."""
    result = np.zeros(size, dtype=bool)
    for mask in masks:
        result |= mask
    return result


def combine(*masks: np.ndarray | None) -> np.ndarray | None:
    """The intersection of the given masks (None means everything)."""
    present = [m for m in masks if m is not None]
    if not present:
        return None
    result = present[0].copy()
    for mask in present[1:]:
        result &= mask
    return result


# -- candidate generators -------------------------------------------------------------


def normalize_identifier(text: str) -> str:
    return " ".join(text.strip().lower().split())


def exact_matches(release: Release, query: str, mask: np.ndarray | None) -> list[int]:
    """Documents whose identifiers or aliases equal the query, in docno order."""
    identifier = normalize_identifier(query)
    if not identifier:
        return []
    return [d for d in release.identified(identifier) if mask is None or mask[d]]


def keyword_candidates(
    release: Release, query: str, mask: np.ndarray | None, k: int
) -> list[tuple[int, float]]:
    """Top ``k`` BM25 documents among ``mask``, the query's term variants included
    (abbreviations and spellings mined from the corpus, :mod:`metabundle.index.variants`)."""
    index = release.keywords
    if index is None:
        return []
    docnos, scores = index.search(query, k, mask, variants=True)
    return [(int(d), float(s)) for d, s in zip(docnos, scores, strict=True)]


def semantic_candidates(
    release: Release, query: str, mask: np.ndarray | None, k: int, *, variants: bool = False
) -> list[tuple[int, float]]:
    """Top ``k`` documents by cosine similarity among ``mask``, across source indexes.
    A source the mask keeps whole is searched as without a mask (through its index, not
    by scoring every one of its vectors: ``search_all`` masks each source whole).
    With ``variants``, the query's text rewritten by the abbreviations its release's
    documents define (:meth:`~metabundle.index.variants.TermVariants.alternative_texts`)
    is searched too, and a document keeps its best cosine, an alternative's times
    :data:`~metabundle.index.variants.ALTERNATIVE_WEIGHT`."""
    texts = [query]
    keywords = release.keywords
    if variants and keywords is not None and keywords.variants is not None:
        texts += keywords.variants.alternative_texts(query)
    queries = release.embed_queries(texts)
    weights = [1.0] + [ALTERNATIVE_WEIGHT] * (len(texts) - 1)
    vectors = release.vectors
    assert vectors is not None  # embed_queries checked it
    best: dict[int, float] = {}
    for source, docnos in release.source_ranges.items():
        keys_allowed = None
        scope = None if mask is None else mask[docnos.start : docnos.stop]
        if scope is not None and not scope.all():  # the source's slice, never the whole mask
            keys_allowed = np.flatnonzero(scope) + docnos.start
            if not keys_allowed.size:
                continue
        index = release.ann_index(source)
        if index is None:
            continue
        for vector, weight in zip(queries, weights, strict=True):
            keys, scores = filtered_search(index, vectors, vector, k, keys_allowed)
            for docno, score in zip(keys.tolist(), scores.tolist(), strict=True):
                if weight * score > best.get(docno, -np.inf):
                    best[docno] = weight * score
    hits = sorted(best.items(), key=lambda pair: (-pair[1], pair[0]))
    return [(int(d), float(s)) for d, s in hits[:k]]


def semantic_or_degrade(
    release: Release,
    query: str,
    mask: np.ndarray | None,
    k: int,
    retrieval: Retrieval,
    *,
    variants: bool = False,
) -> list[tuple[int, float]]:
    """Semantic candidates (``variants``: see :func:`semantic_candidates`); a hybrid
    search without query embeddings degrades to keyword (noted in ``retrieval``)
    rather than failing."""
    try:
        return semantic_candidates(release, query, mask, k, variants=variants)
    except ToolError as error:
        if retrieval.method == "semantic" or error.code != EMBEDDINGS_UNAVAILABLE:
            raise
        retrieval.effective_method = "keyword"
        retrieval.degraded = True
        retrieval.degraded_reason = error.message
        retrieval.embedding_provider = None
        retrieval.embedding_model = None
        return []


def title_substring_candidates(
    release: Release, query: str, mask: np.ndarray | None, k: int
) -> list[tuple[int, float]]:
    """Documents whose title contains the query, ignoring case (every match scores 1),
    in docno order."""
    where = "contains(lower(title), ?)"
    params: list[Any] = [" ".join(query.split()).lower()]
    if mask is not None:
        where += " AND docno IN (SELECT unnest(?::INTEGER[]))"
        params.append(np.flatnonzero(mask).tolist())
    rows = release.query(
        f"SELECT docno FROM search_doc WHERE {where} ORDER BY docno LIMIT ?", [*params, k]
    )
    return [(int(r[0]), 1.0) for r in rows]


def unmatched(
    release: Release,
    query: str,
    mask: np.ndarray | None,
    keyword: list[tuple[int, float]] | None,
    semantic: list[tuple[int, float]],
) -> bool:
    """:data:`LOW_CONFIDENCE_RULE`: no keyword term of ``query`` matches and the best
    cosine is no closer than unrelated documents of the release are to each other."""
    matched = keyword if keyword is not None else keyword_candidates(release, query, mask, 1)
    if matched:
        return False
    threshold = release.unrelated_cosine
    best = max((score for _docno, score in semantic), default=None)
    return best is None or threshold is None or best < threshold


def unmatched_hit(hit: Hit, unrelated_cosine: float, keyword_share: float) -> bool:
    """One hit by the spirit of :data:`LOW_CONFIDENCE_RULE`: not an exact match nor a
    close title word, a keyword share (``keyword_scaled``) below ``keyword_share`` (none
    at all, or one common word of a longer query), and no closer to the query than
    ``unrelated_cosine``."""
    if hit.exact or hit.title_similarity is not None:
        return False
    if hit.keyword is not None and hit.keyword_scaled >= keyword_share:
        return False
    return hit.semantic is None or hit.semantic < unrelated_cosine


KeywordSearch = Callable[[Release, str, np.ndarray | None, int], list[tuple[int, float]]]
"""A keyword candidate generator: ``(release, query, mask, k)`` → ``[(docno, score)]``."""


# -- hydration ------------------------------------------------------------------------


def documents(release: Release, docnos: Iterable[int]) -> dict[int, dict[str, Any]]:
    """The shown ``search_doc`` columns of ``docnos`` keyed by docno."""
    return {int(row["docno"]): row for row in release.shown_rows(docnos)}
