"""Ranking: exact identifier resolution, BM25 keyword, ANN semantic and their fusion.

The rules follow the QueryGaP retrieval contract:

- exact identifiers and aliases resolve first (keyword and hybrid);
- filters are applied before any candidate limit (as boolean masks over docnos);
- ``hybrid`` fuses keyword and semantic candidates, by weights or by reciprocal rank.
  Weighted fusion scales BM25 by the query's best score and, by default, cosine
  min-max over the semantic candidates (cosines of one model bunch in a narrow band,
  so raw cosine lets any keyword match outweigh the semantic ranking); the choice is
  per source, by measurement (``benchmarks/README.md``). When query embeddings are
  unavailable hybrid degrades to keyword and says so, while an explicit ``semantic``
  request fails instead;
- scores are retrieval signals, not calibrated probabilities.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from metabundle.index.ann import filtered_search
from metabundle.search.errors import EMBEDDINGS_UNAVAILABLE, ToolError
from metabundle.search.release import Release

Method = Literal["keyword", "semantic", "hybrid"]
METHODS: tuple[str, ...] = ("keyword", "semantic", "hybrid")
RRF_K = 60
LOW_CONFIDENCE_RULE = (
    "no keyword term of the query matches, and the best cosine is below what the closest "
    "0.1 % of random pairs of this release's documents reach: the results are not known "
    "to be related to the query"
)
MIN_POOL = 50
MAX_POOL = 1000


@dataclass(frozen=True)
class Fusion:
    """How hybrid combines its two lists: weighted scores or reciprocal rank."""

    kind: Literal["weighted", "rrf"]
    keyword_weight: float = 0.5
    semantic_weight: float = 0.5
    rrf_k: int = RRF_K
    scale_semantic: bool = True  # weighted: cosine min-max per query, else raw cosine

    def describe(self) -> dict[str, Any]:
        if self.kind == "rrf":
            return {"fusion": "reciprocal_rank", "rrf_k": self.rrf_k}
        return {
            "fusion": "weighted",
            "keyword": self.keyword_weight,
            "semantic": self.semantic_weight,
            "semantic_scaling": "min_max" if self.scale_semantic else "raw_cosine",
        }


RRF = Fusion("rrf")


@dataclass
class Hit:
    """One ranked document with the signals that ranked it."""

    docno: int
    score: float = 0.0
    keyword: float | None = None
    semantic: float | None = None
    exact: bool = False
    semantic_scaled: float = 0.0  # cosine min-max scaled over the query's candidates

    def scores(self) -> dict[str, Any]:
        return {
            "score": round(float(self.score), 6),
            "keyword": None if self.keyword is None else round(float(self.keyword), 6),
            "semantic": None if self.semantic is None else round(float(self.semantic), 6),
            "exact_match": self.exact,
        }


@dataclass
class Retrieval:
    """The ``retrieval`` block every search response carries."""

    method: str
    effective_method: str
    embedding_provider: str | None
    embedding_model: str | None
    weights: dict[str, Any] | None
    degraded: bool = False
    degraded_reason: str | None = None
    candidates: dict[str, int] = field(default_factory=dict)
    low_confidence: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "low_confidence": self.low_confidence,
            **({"low_confidence_rule": LOW_CONFIDENCE_RULE} if self.low_confidence else {}),
            "method": self.method,
            "effective_method": self.effective_method,
            "embedding_provider": self.embedding_provider,
            "embedding_model": self.embedding_model,
            "weights": self.weights,
            "degraded": self.degraded,
            "degraded_reason": self.degraded_reason,
            "candidates": self.candidates,
            "scores_calibrated": False,
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
    rows = release.query(
        "SELECT docno FROM search_identifier WHERE identifier = ? ORDER BY docno", [identifier]
    )
    docnos = [int(r[0]) for r in rows]
    return [d for d in docnos if mask is None or mask[d]]


def keyword_candidates(
    release: Release, query: str, mask: np.ndarray | None, k: int
) -> list[tuple[int, float]]:
    """Top ``k`` BM25 documents among ``mask``."""
    index = release.keywords
    if index is None:
        return []
    docnos, scores = index.search(query, k, mask)
    return [(int(d), float(s)) for d, s in zip(docnos, scores, strict=True)]


def semantic_candidates(
    release: Release, query: str, mask: np.ndarray | None, k: int
) -> list[tuple[int, float]]:
    """Top ``k`` documents by cosine similarity among ``mask``, across source indexes."""
    vector = release.embed_query(query)
    vectors = release.vectors
    assert vectors is not None  # embed_query checked it
    hits: list[tuple[int, float]] = []
    for source, in_source in release.source_masks.items():
        allowed = None if mask is None else in_source & mask
        if allowed is not None and not allowed.any():
            continue
        index = release.ann_index(source)
        if index is None:
            continue
        keys_allowed = None if allowed is None else np.flatnonzero(allowed)
        keys, scores = filtered_search(index, vectors, vector, k, keys_allowed)
        hits += [(int(d), float(s)) for d, s in zip(keys, scores, strict=True)]
    hits.sort(key=lambda pair: (-pair[1], pair[0]))
    return hits[:k]


def semantic_or_degrade(
    release: Release, query: str, mask: np.ndarray | None, k: int, retrieval: Retrieval
) -> list[tuple[int, float]]:
    """Semantic candidates; a hybrid search without query embeddings degrades to
    keyword (noted in ``retrieval``) rather than failing."""
    try:
        return semantic_candidates(release, query, mask, k)
    except ToolError as error:
        if retrieval.method == "semantic" or error.code != EMBEDDINGS_UNAVAILABLE:
            raise
        retrieval.effective_method = "keyword"
        retrieval.degraded = True
        retrieval.degraded_reason = error.message
        retrieval.embedding_provider = None
        retrieval.embedding_model = None
        return []


KeywordSearch = Callable[[Release, str, np.ndarray | None, int], list[tuple[int, float]]]
"""A keyword candidate generator: ``(release, query, mask, k)`` → ``[(docno, score)]``."""


# -- fusion ---------------------------------------------------------------------------


def _weighted(
    keyword: list[tuple[int, float]], semantic: list[tuple[int, float]], fusion: Fusion
) -> dict[int, Hit]:
    hits: dict[int, Hit] = {}
    top = max((s for _, s in keyword), default=0.0) or 1.0
    for docno, score in keyword:
        hits[docno] = Hit(docno, keyword=score)
    scaled = min_max(semantic)
    for docno, score in semantic:
        hit = hits.setdefault(docno, Hit(docno))
        hit.semantic = score
        hit.semantic_scaled = scaled[docno]
    for hit in hits.values():
        kw = (hit.keyword or 0.0) / top
        sem = hit.semantic_scaled if fusion.scale_semantic else max(hit.semantic or 0.0, 0.0)
        hit.score = fusion.keyword_weight * kw + fusion.semantic_weight * sem
    return hits


def min_max(pairs: list[tuple[int, float]]) -> dict[int, float]:
    """Scores scaled to 0..1 over the list (all 1.0 when they are equal)."""
    if not pairs:
        return {}
    low = min(score for _, score in pairs)
    span = max(score for _, score in pairs) - low
    return {docno: (score - low) / span if span > 0 else 1.0 for docno, score in pairs}


def _reciprocal_rank(
    keyword: list[tuple[int, float]], semantic: list[tuple[int, float]], fusion: Fusion
) -> dict[int, Hit]:
    hits: dict[int, Hit] = {}
    for rank, (docno, score) in enumerate(keyword, start=1):
        hit = hits.setdefault(docno, Hit(docno))
        hit.keyword = score
        hit.score += 1.0 / (fusion.rrf_k + rank)
    for rank, (docno, score) in enumerate(semantic, start=1):
        hit = hits.setdefault(docno, Hit(docno))
        hit.semantic = score
        hit.score += 1.0 / (fusion.rrf_k + rank)
    return hits


def _single(pairs: list[tuple[int, float]], signal: str) -> dict[int, Hit]:
    hits = {}
    for docno, score in pairs:
        hit = Hit(docno, score=score)
        setattr(hit, signal, score)
        hits[docno] = hit
    return hits


def rank(
    release: Release,
    query: str,
    *,
    method: str,
    mask: np.ndarray | None,
    limit: int,
    fusion: Fusion,
    exact_first: bool = True,
    keyword_search: KeywordSearch | None = None,
) -> tuple[list[Hit], Retrieval]:
    """Rank documents for ``query`` under ``mask``: the top ``limit`` hits and the
    retrieval block describing how they were found. ``keyword_search`` replaces BM25
    as the keyword candidate generator (same signature as :func:`keyword_candidates`)
    where a contract defines keyword matching differently, e.g. title substrings."""
    pool = min(MAX_POOL, max(MIN_POOL, limit * 5))
    provider = release.embedding_provider
    retrieval = Retrieval(
        method=method,
        effective_method=method,
        embedding_provider=provider if method != "keyword" else None,
        embedding_model=release.search_info.get("embedding_model") if method != "keyword" else None,
        weights=fusion.describe() if method == "hybrid" else None,
    )
    keyword: list[tuple[int, float]] = []
    semantic: list[tuple[int, float]] = []
    if method in ("keyword", "hybrid"):
        keyword = (keyword_search or keyword_candidates)(release, query, mask, pool)
    if method in ("semantic", "hybrid"):
        semantic = semantic_or_degrade(release, query, mask, pool, retrieval)
        if retrieval.degraded:
            retrieval.weights = None
    retrieval.candidates = {"keyword": len(keyword), "semantic": len(semantic)}
    if method == "keyword" or retrieval.degraded:
        hits = _single(keyword, "keyword")
    elif method == "semantic":
        hits = _single(semantic, "semantic")
    elif fusion.kind == "rrf":
        hits = _reciprocal_rank(keyword, semantic, fusion)
    else:
        hits = _weighted(keyword, semantic, fusion)
    ordered = sorted(hits.values(), key=lambda h: (-h.score, h.docno))
    if exact_first and method != "semantic":
        exact = exact_matches(release, query, mask)
        retrieval.candidates["exact"] = len(exact)
        exact_hits = [hits.get(d) or Hit(d) for d in exact]
        best = max((h.score for h in ordered), default=0.0)
        for hit in exact_hits:
            hit.exact = True
            hit.score = max(hit.score, best)  # first, and never below a hit after it
        exact_set = set(exact)
        ordered = exact_hits + [h for h in ordered if h.docno not in exact_set]
    retrieval.low_confidence = not any(h.exact for h in ordered) and unmatched(
        release, query, mask, keyword if method != "semantic" else None, semantic
    )
    return ordered[:limit], retrieval


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


def interleave_sources(ranked: dict[str, list[Hit]]) -> list[Hit]:
    """One list from each source's own ranking: every source's first hits, then every
    source's second, and so on (exact identifier matches before the rest of their
    round). Within a round hits are ordered by cosine, the one signal on the same scale
    in every source (one embedding model), then by source name; without embeddings
    the rounds keep source order. Each hit's ``score`` becomes the reciprocal rank of
    its round, ``1 / (RRF_K + round)``, so scores never rise as rank falls."""
    merged = []
    for source, hits in sorted(ranked.items()):
        for position, hit in enumerate(hits, start=1):
            cosine = hit.semantic if hit.semantic is not None else -1.0
            merged.append(((position, not hit.exact, -cosine, source, hit.docno), hit))
    merged.sort(key=lambda pair: pair[0])
    for (position, *_rest), hit in merged:
        hit.score = 1.0 / (RRF.rrf_k + position)
    return [hit for _key, hit in merged]


# -- hydration ------------------------------------------------------------------------

DOC_COLUMNS = (
    "docno",
    "doc_id",
    "source",
    "kind",
    "entity_id",
    "title",
    "body",
    "canonical_url",
    "parent_id",
    "study_id",
    "domain",
    "vocabulary",
    "concept_class",
    "standard_concept",
    "is_valid",
    "variable_type",
    "role",
)


def documents(release: Release, docnos: list[int]) -> dict[int, dict[str, Any]]:
    """``search_doc`` rows of ``docnos`` keyed by docno."""
    if not docnos:
        return {}
    rows = release.query_dicts(
        f"SELECT {', '.join(DOC_COLUMNS)} FROM search_doc WHERE docno IN "
        f"(SELECT unnest(?::INTEGER[]))",
        [list(docnos)],
    )
    return {int(row["docno"]): row for row in rows}
