"""``concept_ground``'s pipeline: free text to standard OMOP concepts, tier by tier.

Tiers run in order and the first one that yields a result answers (the others are
not run):

1. ``exact``: the query equals a concept name, a synonym or a concept code (case
   and surrounding whitespace ignored);
2. ``fulltext``: BM25 over names and synonyms, keeping hits whose normalized rank is
   at least :data:`GROUND_MIN_RANK` (weaker keyword hits, which share a single common
   word with the query, fall through to the embeddings);
3. ``embedding``: the nearest concepts by cosine similarity (skipped, and said so,
   when query embeddings are unavailable);
4. ``partial``: every query word a substring of a name or synonym; only when a
   ``domain`` or ``vocabulary_id`` narrows the search (unnarrowed substrings are noise).

Every matched concept is then standardized: a valid standard concept stands for
itself (``self``); any other concept is replaced by its valid standard "Maps to"
targets, and is dropped (counted as ``unmapped``) when it has none. ``domain`` and
``vocabulary_id`` restrict the matched concepts (so ``vocabulary_id=ICD10CM`` grounds
through ICD10CM names to their SNOMED targets); ``domain`` also restricts the standard
results. With ``parent_ids`` a result must be one of them or descend from one of them
(``omop_concept_ancestor``); the matched concepts are restricted before candidate
limits to those descending from a parent or mapping to such a descendant.

Each result says how it matched as the reference tool does (``match_kind``
``EXACT``/``FULLTEXT``/``EMBEDDING_NEAREST``/``PARTIAL``, ``total_score``, a
``score_breakdown`` and a one-line ``grounding_explanation``); the response has its
own one-line ``grounding_explanation``. With ``include_non_standard`` the matched
concepts that have no standard equivalent come back too, apart, under
``non_standard_candidates``, each flagged ``non_standard_candidate``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from metabundle.search.errors import EMBEDDINGS_UNAVAILABLE, ToolError
from metabundle.search.release import Release
from metabundle.search.services.omop.concepts import SELF, athena_url
from metabundle.search.services.omop.filters import ConceptFilter
from metabundle.search.services.omop.match import (
    Match,
    embedding_matches,
    exact_matches,
    fulltext_matches,
    partial_matches,
)
from metabundle.search.services.omop.models import (
    GroundAnswer,
    GroundingExplanation,
    GroundResult,
    MatchedConcept,
    MatchedConceptId,
    NonStandardCandidate,
    ScoreBreakdown,
    TierRun,
    TierSkipped,
)
from metabundle.search.services.omop.queries import descending_from, to_standard

#: Smallest normalized BM25 rank the full-text tier accepts (see the eval figures in
#: tests/tools/test_omop_tools.py: right answers mostly rank above it, single shared
#: common words below).
GROUND_MIN_RANK = 0.65
#: Matched concepts fetched per tier, as a multiple of ``limit`` (mapping, domain and
#: ancestry checks drop some).
POOL_FACTOR = 3
MIN_POOL = 30

#: The reference tool's name of each tier (``match_kind``).
MATCH_KIND = {
    "exact": "EXACT",
    "fulltext": "FULLTEXT",
    "embedding": "EMBEDDING_NEAREST",
    "partial": "PARTIAL",
}
#: What a tier's score measures (the score breakdown's ``signal``).
TIER_SIGNAL = {
    "exact": "exact equality (1.0)",
    "fulltext": "normalized BM25 rank in [0, 1]",
    "embedding": "cosine similarity",
    "partial": "query length over matched string length",
}

TIER_WORDING = {
    "exact": "exact match",
    "fulltext": "full-text match",
    "embedding": "embedding match",
    "partial": "partial (substring) match",
}


def _matched_on(match: Match) -> str:
    """What of the matched concept matched, in words."""
    if match.match_source == "synonym":
        return f"the synonym {match.matched_synonym!r}"
    if match.match_source == "embedding":
        return "its name and synonyms"
    return f"its {match.match_source}"


@dataclass
class Grounded:
    """A standard concept reached from a matched concept."""

    target: dict[str, Any]
    relationship_id: str
    match: Match
    tier: str

    def item(self) -> GroundResult:
        score = round(self.match.score, 6)
        explanation = self.explanation()
        return GroundResult.of(
            self.target,
            match_kind=MATCH_KIND[self.tier],
            score=score,
            total_score=score,
            score_breakdown=ScoreBreakdown(
                tier=self.tier,
                signal=TIER_SIGNAL[self.tier],
                match_score=score,
                mapping=self.relationship_id,
            ),
            grounding_explanation=explanation.summary,
            explanation=explanation,
        )

    def explanation(self) -> GroundingExplanation:
        """How the result was reached; ``matched_concept`` is the matched concept in
        full when a mapping led from it to the result, else (the result itself) its id and
        Athena page."""
        match, matched = self.match, self.match.row
        summary = (
            f"{TIER_WORDING[self.tier]} on {_matched_on(match)} of {matched['vocabulary_id']} "
            f"{matched['concept_code']} ({matched['concept_name']})"
        )
        if self.relationship_id == SELF:
            path = [int(matched["concept_id"])]
            summary += ", itself standard"
        else:
            path = [int(matched["concept_id"]), int(self.target["concept_id"])]
            summary += f", mapped by {self.relationship_id!r} to its standard concept"
        how = {"match_source": match.match_source, "matched_synonym": match.matched_synonym}
        return GroundingExplanation(
            tier=self.tier,
            summary=summary,
            matched_concept=(
                MatchedConceptId(
                    concept_id=int(matched["concept_id"]),
                    athena_url=athena_url(matched["concept_id"]),
                    **how,
                )
                if self.relationship_id == SELF
                else MatchedConcept.of(matched, **how)
            ),
            relationship_id=self.relationship_id,
            mapping_path=path,
        )


@dataclass(frozen=True)
class GroundRequest:
    """A validated ``concept_ground`` request."""

    query: str
    limit: int
    domain: str | None
    vocabulary_id: str | None
    parent_ids: tuple[int, ...]
    include_non_standard: bool = False

    @property
    def source_filter(self) -> ConceptFilter:
        return ConceptFilter(
            domain=self.domain, vocabulary_id=self.vocabulary_id, parent_ids=self.parent_ids
        )

    @property
    def pool(self) -> int:
        return max(MIN_POOL, self.limit * POOL_FACTOR)


def _tiers(
    release: Release, request: GroundRequest
) -> list[tuple[str, Callable[[], list[Match]] | str]]:
    """Each tier's matcher, or the reason it does not run."""
    flt, pool, query = request.source_filter, request.pool, request.query
    narrowed = request.domain is not None or request.vocabulary_id is not None
    return [
        (
            "exact",
            lambda: exact_matches(
                release, query, flt, include_synonyms=True, include_codes=True, limit=pool
            ),
        ),
        (
            "fulltext",
            lambda: (
                fulltext_matches(
                    release, query, flt, include_synonyms=True, min_rank=GROUND_MIN_RANK, limit=pool
                ).matches
            ),
        ),
        ("embedding", lambda: embedding_matches(release, query, flt, limit=pool)[0]),
        (
            "partial",
            (lambda: partial_matches(release, query, flt, limit=pool))
            if narrowed
            else "runs only when domain or vocabulary_id narrows the search",
        ),
    ]


def non_standard_item(match: Match, tier: str) -> NonStandardCandidate:
    """A matched concept with no valid standard equivalent, flagged as such."""
    row = match.row
    return NonStandardCandidate.of(
        row,
        non_standard_candidate=True,
        match_kind=MATCH_KIND[tier],
        total_score=round(match.score, 6),
        match_source=match.match_source,
        matched_synonym=match.matched_synonym,
        grounding_explanation=(
            f"{TIER_WORDING[tier]} on {_matched_on(match)} of {row['vocabulary_id']} "
            f"{row['concept_code']} ({row['concept_name']}), which has no valid standard "
            "'Maps to' target: not a standard concept"
        ),
    )


def standardize(
    release: Release, request: GroundRequest, tier: str, matches: list[Match]
) -> tuple[list[Grounded], list[Match]]:
    """Standard concepts of ``matches`` (first match wins per concept) and the
    matches with no standard equivalent."""
    mapped = to_standard(release, [m.row for m in matches])
    targets = {int(t["concept_id"]) for pairs in mapped.values() for t, _ in pairs}
    allowed = (
        descending_from(release, targets, request.parent_ids) if request.parent_ids else targets
    )
    results: list[Grounded] = []
    seen: set[int] = set()
    unmapped: list[Match] = []
    for match in matches:
        pairs = mapped.get(match.concept_id, [])
        if not pairs:
            unmapped.append(match)
        for target, relationship_id in pairs:
            target_id = int(target["concept_id"])
            if target_id in seen or target_id not in allowed:
                continue
            if request.domain is not None and target["domain_id"] != request.domain:
                continue
            seen.add(target_id)
            results.append(Grounded(target, relationship_id, match, tier))
    return results, unmapped


def _summary(request: GroundRequest, tier: str | None, count: int) -> str:
    """The response's one-line ``grounding_explanation``."""
    scope = ""
    if request.parent_ids:
        scope = f" under parent_ids {list(request.parent_ids)}"
    if tier is None:
        return f"No tier found a standard concept{scope}."
    return (
        f"{count} standard concept(s) from the {tier} tier ({MATCH_KIND[tier]}){scope}; "
        "non-standard matches were mapped by 'Maps to'."
    )


def ground(release: Release, request: GroundRequest) -> GroundAnswer:
    """Run the tiers until one yields standard concepts; the response."""
    trace: list[TierRun | TierSkipped] = []
    flagged: dict[int, NonStandardCandidate] = {}
    for tier, matcher in _tiers(release, request):
        if isinstance(matcher, str):
            trace.append(TierSkipped(tier=tier, skipped=matcher))
            continue
        try:
            matches = matcher()
        except ToolError as error:
            if error.code != EMBEDDINGS_UNAVAILABLE:
                raise
            trace.append(TierSkipped(tier=tier, skipped=error.message))
            continue
        results, unmapped = standardize(release, request, tier, matches)
        trace.append(
            TierRun(
                tier=tier, candidates=len(matches), unmapped=len(unmapped), results=len(results)
            )
        )
        for match in unmapped:
            flagged.setdefault(match.concept_id, non_standard_item(match, tier))
        if results:
            return _answer(request, tier, trace, [r.item() for r in results], flagged)
    return _answer(request, None, trace, [], flagged)


def _answer(
    request: GroundRequest,
    tier: str | None,
    trace: list[TierRun | TierSkipped],
    items: list[GroundResult],
    flagged: dict[int, NonStandardCandidate],
) -> GroundAnswer:
    items = items[: request.limit]
    answer = GroundAnswer(
        query=request.query,
        tier=tier,
        matched_tier=MATCH_KIND.get(tier or ""),
        grounding_explanation=_summary(request, tier, len(items)),
        tiers=trace,
        results=items,
    )
    if request.include_non_standard:
        answer.non_standard_candidates = list(flagged.values())[: request.limit]
    return answer
