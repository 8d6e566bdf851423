""":func:`rank`: the one ranking pipeline every search tool runs, driven by its policy.

Stages, in order (each a function of :mod:`.stages` or :mod:`.priors`, each switched
and parameterised by the :class:`~.policies.Policy`): candidates → folding → signals
(BM25 scaled, cosine scaled, title match) → fusion →
boosts → intent signals → order (exact first) → lookups → diversity and cut → priors →
low confidence. The answer is the hits, each with its full score breakdown
(:meth:`~metabundle.search.retrieval.Hit.breakdown`), and the ``retrieval`` block,
which names the policy (and, with ``explain``, states its rules).
"""

from __future__ import annotations

import numpy as np

from metabundle.search.ranking import priors
from metabundle.search.ranking.policies import POLICIES, Policy
from metabundle.search.ranking.stages import (
    Pairs,
    apply_boosts,
    apply_intents,
    diversify,
    doc_rows,
    drop_unrelated,
    fold_children,
    fuse,
    is_lookup,
    needs_title_fallback,
    order,
    query_intents,
    signals,
    title_candidates,
    weighted_signals,
)
from metabundle.search.release import Release
from metabundle.search.retrieval import (
    MAX_POOL,
    MIN_POOL,
    Hit,
    Retrieval,
    exact_matches,
    keyword_candidates,
    semantic_or_degrade,
    title_substring_candidates,
    unmatched,
)

KEYWORD_GENERATORS = {"bm25": keyword_candidates, "title_substring": title_substring_candidates}


def new_retrieval(release: Release, policy: Policy, method: str) -> Retrieval:
    semantic = method != "keyword"
    return Retrieval(
        method=method,
        effective_method=method,
        embedding_provider=release.embedding_provider if semantic else None,
        embedding_model=release.search_info.get("embedding_model") if semantic else None,
        policy=policy.name,
    )


def candidates(
    release: Release,
    query: str,
    policy: Policy,
    mask: np.ndarray | None,
    limit: int,
    retrieval: Retrieval,
) -> tuple[list[int], dict[str, Pairs]]:
    """Exact matches and the ranked candidate lists of the method, inside ``mask``."""
    method = retrieval.method
    pool = min(MAX_POOL, max(MIN_POOL, limit * 5))
    exact = (
        exact_matches(release, query, mask) if policy.exact_first and method != "semantic" else []
    )
    lists: dict[str, Pairs] = {}
    if method != "semantic":
        lists["keyword"] = KEYWORD_GENERATORS[policy.keyword](release, query, mask, pool)
        if (
            policy.title_fallback
            and not exact
            and needs_title_fallback(release, query, lists["keyword"], limit)
        ):
            lists["title"] = title_candidates(release, query, mask, policy)
    if method != "keyword":
        variants = policy.semantic_variants and method == "hybrid"
        semantic = semantic_or_degrade(release, query, mask, pool, retrieval, variants=variants)
        if not retrieval.degraded:
            lists["semantic"] = semantic
    retrieval.candidates = {name: len(pairs) for name, pairs in lists.items()}
    if policy.exact_first and method != "semantic":
        retrieval.candidates["exact"] = len(exact)
    return exact, lists


def rank(
    release: Release,
    query: str,
    *,
    policy: Policy | str,
    method: str,
    mask: np.ndarray | None,
    limit: int,
    explain: bool = False,
) -> tuple[list[Hit], Retrieval]:
    """The top ``limit`` hits for ``query`` under ``mask`` as ``policy`` ranks them, and
    the retrieval block describing how they were found."""
    policy = POLICIES[policy] if isinstance(policy, str) else policy
    retrieval = new_retrieval(release, policy, method)
    exact, lists = candidates(release, query, policy, mask, limit, retrieval)
    effective = retrieval.effective_method
    rows = doc_rows(
        release, {d for pairs in lists.values() for d, _ in pairs} | set(exact), policy.fold_kinds
    )
    folded: set[int] = set()
    if policy.fold_kinds:
        lists, folded = fold_children(lists, rows, query, policy)
        rows |= doc_rows(release, folded - set(rows), policy.fold_kinds)
    hits = signals(lists)
    if effective == "hybrid":
        weighted_signals(release, hits, rows, query, policy.fusion)
    fuse(hits, lists, effective, policy)
    for docno in folded:
        hits[docno].via_answers = True
    for docno in exact:
        hits.setdefault(docno, Hit(docno)).exact = True
    apply_boosts([hits[d] for d in exact], rows, query, effective, policy)
    if effective == "hybrid" and policy.intents:
        apply_intents(hits, rows, query_intents(release, query, policy), policy)
    if effective == "hybrid":
        priors.add_participants(release, hits, policy)
    ordered = order(hits, exact, rows, policy)
    if policy.lookup_alone and exact and effective != "semantic" and is_lookup(query):
        ordered = drop_unrelated(ordered)
    ranked = diversify(ordered, rows, limit, policy)
    ranked = priors.apply(release, ranked, query, policy, hits)[:limit]
    retrieval.weights = policy.weights(effective)
    retrieval.low_confidence = not exact and unmatched(
        release, query, mask, lists.get("keyword"), lists.get("semantic", [])
    )
    if explain:
        retrieval.explain = policy.explain(effective)
    return ranked, retrieval
