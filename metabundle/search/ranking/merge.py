"""``search_all``'s ranking: each source ranked on its own by :data:`~.policies.SEARCH_ALL`,
children folded into their parents (a source's ``folded_kinds``), versions of one
entity collapsed, then the sources interleaved by rank, each source's unmatched tail
after every source's matches (``unmatched_last``)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

import numpy as np

from metabundle.schemas.search import doc_id
from metabundle.schemas.sources import describe
from metabundle.search.ranking.pipeline import rank
from metabundle.search.ranking.policies import RRF_K, SEARCH_ALL, Policy
from metabundle.search.ranking.stages import RANKING_COLUMNS, drop_unrelated, is_lookup
from metabundle.search.release import Release
from metabundle.search.retrieval import (
    Hit,
    Retrieval,
    combine,
    documents,
    source_mask,
    unmatched_hit,
)

DIVERSITY_POOL = 3  # candidates per requested result, before versions are collapsed
MERGE = (
    "each source ranked on its own, then interleaved by rank (ties by cosine); in hybrid, "
    "each source's hits from the first that matches little of the query's words and is no "
    "closer than unrelated documents come after every source's matches"
)
"""How search_all makes one list of the sources' rankings, as its retrieval block says."""
VERSION_MARK = re.compile(r"\.[vp]\d+")
"""A dbGaP version mark in an accession: ``.v4`` or ``.p2``."""

Rows = dict[int, dict[str, Any]]


@dataclass
class Merged:
    """The merged ranking: hits, their shown ``search_doc`` rows, versions collapsed
    into each kept hit (by docno) and the retrieval block."""

    hits: list[Hit]
    rows: Rows
    retrieval: Retrieval
    collapsed: dict[int, int] = field(default_factory=dict)


def rank_all(
    release: Release,
    query: str,
    *,
    method: str,
    sources: list[str],
    kinds_mask: np.ndarray | None,
    limit: int,
    explain: bool = False,
    policy: Policy = SEARCH_ALL,
) -> Merged:
    """The top ``limit`` hits of ``sources`` for ``query``, one list, ranked by ``policy``
    (:data:`~.policies.SEARCH_ALL`; another only to measure a change against it)."""
    ranked: dict[str, list[Hit]] = {}
    rows: Rows = {}
    collapsed: dict[int, int] = {}
    candidates: dict[str, int] = {}  # summed over the sources
    confident = False  # some source matched the query
    retrieval = None
    for source in sources:
        mask = combine(source_mask(release, [source]), kinds_mask)
        hits, retrieval = rank(
            release,
            query,
            policy=policy.for_source(source),
            method=method,
            mask=mask,
            limit=limit * DIVERSITY_POOL,
            explain=explain,
        )
        confident = confident or not retrieval.low_confidence
        for signal, count in retrieval.candidates.items():
            candidates[signal] = candidates.get(signal, 0) + count
        rows.update(ranking_rows(release, [h.docno for h in hits]))
        ranked[source], versions = distinct_entities(fold_into_parents(release, hits, rows), rows)
        collapsed.update(versions)
    assert retrieval is not None  # a release has at least one source
    if (
        policy.lookup_alone
        and method != "semantic"
        and is_lookup(query)
        and any(h.exact for hits in ranked.values() for h in hits)
    ):  # a lookup found in one source: the other sources show only what names it too
        ranked = {source: drop_unrelated(hits) for source, hits in ranked.items()}
    retrieval.candidates = candidates
    retrieval.low_confidence = not confident
    retrieval.weights = policy.weights(retrieval.effective_method)  # not the last source's
    unmatched = None
    if policy.unmatched_last is not None and method == "hybrid":
        # only hybrid reads the vectors: keyword answers stay up when they are damaged
        unrelated = release.unrelated_cosine
        if unrelated is not None:
            unmatched = partial(
                unmatched_hit, unrelated_cosine=unrelated, keyword_share=policy.unmatched_last
            )
    merged = interleave_sources(ranked, unmatched)[:limit]
    shown = documents(release, [h.docno for h in merged])
    return Merged(merged, shown, retrieval, collapsed)


def fold_into_parents(release: Release, hits: list[Hit], rows: Rows) -> list[Hit]:
    """Replace hits of a source's folded kinds by their parent documents, once each;
    the parents' rows (:func:`ranking_rows`) are added to ``rows``."""
    parent_ids = {
        h.docno: doc_id(row["source"], folded, row["parent_id"])
        for h in hits
        if (row := rows[h.docno])["parent_id"]
        and (folded := describe(row["source"]).folded_kinds.get(row["kind"]))
    }
    if not parent_ids:
        return hits
    found = release.docnos_of(parent_ids.values())
    folded: list[Hit] = []
    seen: set[int] = set()
    for hit in hits:
        docno = found.get(parent_ids.get(hit.docno, ""), hit.docno)
        if docno not in seen:
            seen.add(docno)
            folded.append(replace(hit, docno=docno) if docno != hit.docno else hit)
    missing = [h.docno for h in folded if h.docno not in rows]
    rows.update(ranking_rows(release, missing))
    return folded


def ranking_rows(release: Release, docnos: list[int]) -> Rows:
    """The columns the merge reads (:data:`~.stages.RANKING_COLUMNS`) of ``docnos``: the
    hits of every source are merged, and only the kept ones are shown."""
    return {int(r["docno"]): r for r in release.shown_rows(docnos, RANKING_COLUMNS)}


def entity_key(row: dict[str, Any]) -> tuple[str, str, str]:
    """What stays the same across the versions of one entity: its source, kind and id
    without version marks, and without the study version an entity is published in
    (``phs000286.v7.p2/phv00124545.v4.p2`` and ``phs000286.v6.p2/phv00124545.v3.p2``
    are one dbGaP variable)."""
    last = row["entity_id"].rsplit("/", 1)[-1]
    return (row["source"], row["kind"], VERSION_MARK.sub("", last))


def distinct_entities(hits: list[Hit], rows: Rows) -> tuple[list[Hit], dict[int, int]]:
    """The best hit per entity, and how many other versions of it were collapsed into
    each kept hit (by docno). Distinct entities that share a title are all kept."""
    kept: dict[tuple[str, str, str], Hit] = {}
    collapsed: dict[int, int] = {}
    for hit in hits:
        key = entity_key(rows[hit.docno])
        first = kept.setdefault(key, hit)
        if first is not hit:
            collapsed[first.docno] = collapsed.get(first.docno, 0) + 1
    return list(kept.values()), collapsed


def interleave_sources(
    ranked: dict[str, list[Hit]], unmatched: Callable[[Hit], bool] | None = None
) -> list[Hit]:
    """One list from each source's own ranking: every source's first hits, then every
    source's second, and so on (exact identifier matches before the rest of their
    round). Within a round hits are ordered by cosine, the one signal on the same scale
    in every source (one embedding model), then by source name; without embeddings
    the rounds keep source order.

    With ``unmatched`` (:func:`~metabundle.search.retrieval.unmatched_hit` and its
    thresholds), each source's hits from its first unmatched one on form its tail, and
    the tails are interleaved the same way after every source's matched hits: a source
    where nothing matches the query does not take a place before another source's
    matches, and each source keeps its own order. Each hit's ``score`` becomes the
    reciprocal rank of its round, ``1 / (RRF_K + round)``, the tails' rounds numbered on
    from the last round of matches, so scores never rise as rank falls."""
    heads: list[tuple[tuple[Any, ...], Hit]] = []
    tails: list[tuple[tuple[Any, ...], Hit]] = []
    for source, hits in sorted(ranked.items()):
        cut = len(hits)
        if unmatched is not None:
            cut = next((n for n, h in enumerate(hits) if unmatched(h)), cut)
        for part, into in ((hits[:cut], heads), (hits[cut:], tails)):
            for position, hit in enumerate(part, start=1):
                cosine = hit.semantic if hit.semantic is not None else -1.0
                into.append(((position, not hit.exact, -cosine, source, hit.docno), hit))
    heads.sort(key=lambda pair: pair[0])
    tails.sort(key=lambda pair: pair[0])
    rounds = max((key[0] for key, _hit in heads), default=0)
    for offset, part in ((0, heads), (rounds, tails)):
        for (position, *_rest), hit in part:
            hit.score = 1.0 / (RRF_K + offset + position)
    return [hit for _key, hit in heads + tails]
