"""OMOP vocabulary tools: concept search primitives, standard mapping, grounding and
concept details (contract: ``seeds/omop-search-tools.md``).

* ``concept_search_exact``, ``concept_search_fulltext``, ``embedding_search``: one
  matching strategy each (:mod:`.match`), raw quality signals exposed, standard
  and non-standard concepts alike, so the caller decides what to do with each;
* ``concept_navigate_to_standard`` (batch) and ``concept_map_to_standard`` (one code):
  follow "Maps to" to valid standard concepts;
* ``concept_ground``: the tiered pipeline of :mod:`.ground`, standard results
  only, each explained;
* ``concept_get``: one concept with its synonyms, relationships, ancestors and
  descendants, each list bounded and counted.

Shared rules: a blank query, a concept id outside ``1..2^63-1``, an unknown domain or
vocabulary are ``invalid_request``; limits are clamped; unknown concepts are
``not_found`` except in the batch navigation, where the contract omits them.
"""

from __future__ import annotations

import difflib
from typing import Annotated, Any

from pydantic import Field, WithJsonSchema

from metabundle.search.coverage import missing
from metabundle.search.errors import EMBEDDINGS_UNAVAILABLE, ToolError, not_found
from metabundle.search.params import Params, Query, clamp
from metabundle.search.payload import Retrieval
from metabundle.search.registry import tool
from metabundle.search.release import Release
from metabundle.search.services.omop import queries
from metabundle.search.services.omop.concepts import MAX_CONCEPT_ID, athena_url
from metabundle.search.services.omop.filters import (
    ConceptFilter,
    canonical_domain,
    canonical_vocabulary,
)
from metabundle.search.services.omop.ground import GroundRequest, ground
from metabundle.search.services.omop.match import (
    embedding_matches,
    exact_matches,
    fulltext_matches,
)
from metabundle.search.services.omop.models import (
    ConceptDetails,
    DatedConcept,
    EmbeddingAnswer,
    ExactAnswer,
    FulltextAnswer,
    FulltextResult,
    GroundAnswer,
    MapAnswer,
    MatchedConcept,
    NavigateAnswer,
    Navigation,
    RelationPage,
    RelativePage,
    SimilarConcept,
    StandardConcept,
    SynonymPage,
)

GROUP = "omop"
MAX_NAVIGATE_IDS = 100
MAX_PARENT_IDS = 20

ConceptId = Annotated[
    int, Field(ge=1, le=MAX_CONCEPT_ID), WithJsonSchema({"type": "integer", "minimum": 1})
]
Domain = Annotated[
    str | None,
    Field(max_length=64, description="E.g. Condition."),
]
Vocabulary = Annotated[
    str | None,
    Field(max_length=64, description="E.g. SNOMED, ICD10CM."),
]
SearchLimit = Annotated[int, clamp(1, 50), Field(description="1..50.")]


def _filter(
    release: Release,
    domain: str | None,
    vocabulary_id: str | None,
    *,
    standard_only: bool = False,
    active_only: bool = False,
) -> ConceptFilter:
    return ConceptFilter(
        domain=canonical_domain(release, domain),
        vocabulary_id=canonical_vocabulary(release, vocabulary_id),
        standard_only=standard_only,
        active_only=active_only,
    )


# -- concept_search_exact ----------------------------------------------------------------


class ExactParams(Params):
    query: Query
    domain: Domain = None
    vocabulary_id: Vocabulary = None
    standard_only: bool = False
    include_synonyms: bool = True
    limit: SearchLimit = 20


@tool(
    "concept_search_exact",
    "Call first when the user gives a clinical term verbatim: OMOP concepts named exactly so.",
    ExactParams,
    GROUP,
    response=ExactAnswer,
    guide=(
        "Find OMOP concepts whose name or synonym equals the query, ignoring case. Call "
        "it first when the user gives a clinical term verbatim. "
        "Name matches come before synonym matches; non-standard concepts are included, so call "
        "concept_navigate_to_standard for those with standard_concept false. No result: try "
        "concept_search_fulltext or embedding_search (or concept_ground, which chains them)."
        " domain and vocabulary_id keep concepts of that domain_id or vocabulary_id; "
        "standard_only keeps standard_concept = 'S'; include_synonyms also matches "
        "concept_synonym_name (match_source 'synonym')."
    ),
)
def concept_search_exact(release: Release, params: ExactParams) -> ExactAnswer:
    flt = _filter(release, params.domain, params.vocabulary_id, standard_only=params.standard_only)
    matches = exact_matches(
        release,
        params.query,
        flt,
        include_synonyms=params.include_synonyms,
        limit=params.limit,
    )
    results = [
        MatchedConcept.of(m.row, match_source=m.match_source, matched_synonym=m.matched_synonym)
        for m in matches
    ]
    return ExactAnswer(query=params.query, results=results)


# -- concept_search_fulltext -------------------------------------------------------------


class FulltextParams(ExactParams):
    min_rank: Annotated[
        float,
        Field(
            ge=0.0,
            le=1.0,
            description="0 disables.",
        ),
    ] = 0.0


@tool(
    "concept_search_fulltext",
    "Call for multi-word terms that match no OMOP concept name exactly (keyword search).",
    FulltextParams,
    GROUP,
    response=FulltextAnswer,
    guide=(
        "Keyword (BM25) search of OMOP concept names and synonyms. Call it for multi-word"
        " terms that match no name exactly; map non-standard results with "
        "concept_navigate_to_standard. "
        "Each result has rank (alias ts_rank) in [0, 1]: its BM25 score over the best score each "
        "query word reaches in any concept (a word no concept has counts like the strongest), so "
        "1.0 means every word matched as strongly as anywhere; use min_rank to cut weak hits. A "
        "concept is returned only when a query word occurs in its name (match_source 'name') or, "
        "with include_synonyms, in a synonym ('synonym', matched_synonym given). If "
        "tsvector_available is false or results are empty, call embedding_search."
        " domain and vocabulary_id keep concepts of that domain_id or vocabulary_id; "
        "standard_only keeps standard_concept = 'S'; include_synonyms also matches "
        "concept_synonym_name; min_rank (0..1) drops results ranked below it."
    ),
)
def concept_search_fulltext(release: Release, params: FulltextParams) -> FulltextAnswer:
    flt = _filter(release, params.domain, params.vocabulary_id, standard_only=params.standard_only)
    found = fulltext_matches(
        release,
        params.query,
        flt,
        include_synonyms=params.include_synonyms,
        min_rank=params.min_rank,
        limit=params.limit,
    )
    results = []
    for match in found.matches:
        rank = round(match.score, 6)
        results.append(
            FulltextResult.of(
                match.row,
                match_source=match.match_source,
                matched_synonym=match.matched_synonym,
                rank=rank,
                ts_rank=rank,
            )
        )
    return FulltextAnswer(query=params.query, tsvector_available=found.available, results=results)


# -- standard mapping ----------------------------------------------------------------------


def _standard_entry(target: dict[str, Any], relationship_id: str) -> StandardConcept:
    return StandardConcept(
        concept_id=int(target["concept_id"]),
        concept_name=target["concept_name"],
        vocabulary_id=target["vocabulary_id"],
        domain_id=target["domain_id"],
        concept_class_id=target["concept_class_id"],
        relationship_id=relationship_id,
        athena_url=athena_url(target["concept_id"]),
    )


def navigation(release: Release, rows: list[dict[str, Any]]) -> list[Navigation]:
    """The contract's navigation result of each concept row, in the given order."""
    standard = queries.to_standard(release, rows)
    return [
        Navigation(
            source_concept_id=int(row["concept_id"]),
            source_concept_name=row["concept_name"],
            source_standard_concept=row["standard_concept"] == "S",
            source_athena_url=athena_url(row["concept_id"]),
            standard_concepts=[
                _standard_entry(target, relationship_id)
                for target, relationship_id in standard[int(row["concept_id"])]
            ],
        )
        for row in rows
    ]


class NavigateParams(Params):
    concept_ids: Annotated[
        list[ConceptId],
        Field(
            max_length=MAX_NAVIGATE_IDS,
            description="Concept ids.",
        ),
    ]


@tool(
    "concept_navigate_to_standard",
    "Call for results with standard_concept false to get their standard concepts.",
    NavigateParams,
    GROUP,
    response=NavigateAnswer,
    guide=(
        "Resolve up to 100 concept ids to their standard OMOP concepts via 'Maps to'. "
        "Call it for search results with standard_concept false. "
        "A standard concept maps to itself (relationship_id 'self'); a concept with no valid "
        "standard target gets []; ids not in the vocabulary are omitted; input order is kept "
        "(each id once)."
        " concept_ids takes at most 100 ids per call."
    ),
)
def concept_navigate_to_standard(release: Release, params: NavigateParams) -> NavigateAnswer:
    ids = list(dict.fromkeys(params.concept_ids))
    found = queries.concepts_by_id(release, ids)
    return NavigateAnswer(results=navigation(release, [found[i] for i in ids if i in found]))


class MapParams(Params):
    vocabulary_id: Annotated[
        str, Field(min_length=1, max_length=64, description="Vocabulary of the code, e.g. ICD10CM.")
    ]
    concept_code: Annotated[
        str,
        Field(min_length=1, max_length=200, description="The code in that vocabulary, e.g. K92.2."),
    ]


def concepts_with_code(release: Release, params: MapParams) -> tuple[str, list[dict[str, Any]]]:
    """The canonical vocabulary id and the concept rows (with validity dates) holding
    the code (:func:`.queries.concept_rows_with_code`); not_found with close codes and the
    other vocabularies holding it."""
    vocabulary_id = str(canonical_vocabulary(release, params.vocabulary_id))
    code = params.concept_code.strip()
    rows = queries.concept_rows_with_code(release, vocabulary_id, code)
    if not rows:
        nearby = queries.codes_starting_with(release, vocabulary_id, code[:2])
        raise missing(
            release,
            "omop",
            f"There is no {vocabulary_id} concept with code {code!r} in this release.",
            suggestions=difflib.get_close_matches(code, nearby, n=5, cutoff=0.6),
            in_other_vocabularies=queries.vocabularies_with_code(release, code),
        )
    return vocabulary_id, rows


def dated_concept(row: dict[str, Any]) -> DatedConcept:
    """The concept of a row with validity dates."""
    return DatedConcept.of(
        row, valid_start_date=row["valid_start_date"], valid_end_date=row["valid_end_date"]
    )


@tool(
    "concept_map_to_standard",
    "Call when the user gives a source code (e.g. ICD10CM K92.2) for its standard concepts.",
    MapParams,
    GROUP,
    response=MapAnswer,
    guide=(
        "Map one source code (vocabulary_id + concept_code, e.g. ICD10CM K92.2) to its "
        "standard OMOP concepts. Call it when the user gives a code. "
        "For many concept ids at once use concept_navigate_to_standard. The code is matched "
        "exactly, else ignoring case; not_found (with close codes) when the vocabulary lacks it."
    ),
)
def concept_map_to_standard(release: Release, params: MapParams) -> MapAnswer:
    vocabulary_id, rows = concepts_with_code(release, params)
    (entry,) = navigation(release, rows[:1])
    return MapAnswer(
        vocabulary_id=vocabulary_id,
        concept_code=rows[0]["concept_code"],
        **dict(entry),
        other_source_concept_ids=[int(r["concept_id"]) for r in rows[1:]],
    )


# -- embedding_search --------------------------------------------------------------------


class EmbeddingParams(Params):
    query: Query
    limit: SearchLimit = 10
    domain: Domain = None
    vocabulary_id: Vocabulary = None
    standard_only: bool = False
    active_only: bool = True


@tool(
    "embedding_search",
    "Call for lay wording sharing no word with an OMOP concept's name (semantic search).",
    EmbeddingParams,
    GROUP,
    response=EmbeddingAnswer,
    guide=(
        "Semantic search of OMOP concepts by embedding similarity. Call it for lay "
        "wording or paraphrases that share no word with the concept name (e.g. 'heart "
        "attack'). "
        "Each result has similarity (cosine, not a probability). Fails with "
        "embeddings_unavailable when the release or server has no query embeddings: then use "
        "concept_search_fulltext. Map non-standard results with concept_navigate_to_standard."
        " active_only keeps valid concepts (invalid_reason is null); standard_only keeps "
        "standard_concept = 'S'."
    ),
)
def embedding_search(release: Release, params: EmbeddingParams) -> EmbeddingAnswer:
    flt = _filter(
        release,
        params.domain,
        params.vocabulary_id,
        standard_only=params.standard_only,
        active_only=params.active_only,
    )
    try:
        matches, retrieval = embedding_matches(release, params.query, flt, limit=params.limit)
    except ToolError as error:
        if error.code != EMBEDDINGS_UNAVAILABLE:
            raise
        cause = error.details.get("cause", error.message.rstrip("."))
        raise ToolError(
            EMBEDDINGS_UNAVAILABLE,
            f"{cause}, so embedding_search cannot answer; call concept_search_fulltext "
            "with the same query (or concept_ground, which falls back to full text).",
            cause=cause,
            use_instead="concept_search_fulltext",
        ) from None
    return EmbeddingAnswer(
        query=params.query,
        retrieval=Retrieval.model_validate(retrieval.to_json()),
        results=[SimilarConcept.of(m.row, similarity=round(m.score, 6)) for m in matches],
    )


# -- concept_ground ------------------------------------------------------------------------


class GroundParams(Params):
    query: Query
    limit: Annotated[int, clamp(1, 50), Field(description="1..50.")] = 5
    domain: Domain = None
    vocabulary_id: Annotated[
        str | None,
        Field(max_length=64),
    ] = None
    parent_ids: Annotated[
        list[ConceptId] | None,
        Field(
            max_length=MAX_PARENT_IDS,
            description="Keep results under these concepts.",
        ),
    ] = None
    include_non_standard: bool = False


@tool(
    "concept_ground",
    "Call when you want standard OMOP concepts for free text, not the search strategy.",
    GroundParams,
    GROUP,
    response=GroundAnswer,
    guide=(
        "Ground free text to standard OMOP concepts in one call (exact, then full-text, "
        "then embeddings). Call it when you want a concept and not the search strategy. "
        "With a domain or vocabulary a substring tier follows; it stops at the first tier with "
        "results. Non-standard matches are mapped to standard via 'Maps to'. Each result has a "
        "score (its meaning depends on the tier) and an explanation (tier, matched concept, "
        "mapping path); 'tiers' shows what ran; match_kind and grounding_explanation say how "
        "each matched, and include_non_standard lists unmapped matches, flagged. Use "
        "parent_ids to keep only descendants of given concepts. Call concept_get on a result "
        "for its hierarchy; use the primitives "
        "(concept_search_exact and friends) to control the strategy yourself."
        " vocabulary_id matches in that vocabulary only (results are still standard); "
        "parent_ids keeps results under those concepts; include_non_standard also lists "
        "matched concepts with no standard mapping, flagged."
    ),
)
def concept_ground(release: Release, params: GroundParams) -> GroundAnswer:
    parent_ids = tuple(dict.fromkeys(params.parent_ids or ()))
    missing = sorted(set(parent_ids) - queries.known_hierarchy_ids(release, parent_ids))
    if missing:
        raise not_found(
            f"Parameter 'parent_ids': concept {missing[0]} is not in this release's "
            "vocabulary or hierarchy.",
            missing=missing,
        )
    request = GroundRequest(
        query=params.query,
        limit=params.limit,
        domain=canonical_domain(release, params.domain),
        vocabulary_id=canonical_vocabulary(release, params.vocabulary_id),
        parent_ids=parent_ids,
        include_non_standard=params.include_non_standard,
    )
    return ground(release, request)


# -- concept_get -----------------------------------------------------------------------------


class GetParams(Params):
    concept_id: ConceptId
    max_related: Annotated[
        int,
        clamp(1, 200),
        Field(description="Items per list."),
    ] = 25
    relationship_id: Annotated[
        str | None,
        Field(max_length=64, description="E.g. 'Maps to'."),
    ] = None


@tool(
    "concept_get",
    "Call to inspect one OMOP concept: synonyms, relationships, ancestors, descendants.",
    GetParams,
    GROUP,
    response=ConceptDetails,
    guide=(
        "Get one OMOP concept with its synonyms, relationships, ancestors and descendants"
        " (each capped, with totals). Call it to inspect a search or grounding result or "
        "walk the hierarchy. "
        "Relationships are counted per kind (e.g. 'Maps to', 'Is a'); ancestors and descendants "
        "come from omop_concept_ancestor with levels of separation; related concepts missing from"
        " this release have in_release false and no name."
        " max_related caps each list (synonyms, relationships, ancestors, descendants)."
    ),
)
def concept_get(release: Release, params: GetParams) -> ConceptDetails:
    row = queries.dated_concept_row(release, params.concept_id)
    if row is None:
        raise missing(
            release,
            "omop",
            f"There is no OMOP concept {params.concept_id} in this release; find ids with "
            "concept_search_exact or concept_ground.",
        )
    limit = params.max_related
    synonyms = queries.synonym_listing(release, params.concept_id, limit)
    relations = queries.relationship_listing(
        release, params.concept_id, params.relationship_id, limit
    )
    ancestors = queries.relative_listing(release, params.concept_id, limit, ancestors=True)
    descendants = queries.relative_listing(release, params.concept_id, limit, ancestors=False)
    return ConceptDetails(
        concept=dated_concept(row),
        standard_concepts=navigation(release, [row])[0].standard_concepts,
        synonyms=SynonymPage(
            total=synonyms.total, truncated=synonyms.truncated, items=synonyms.rows
        ),
        relationships=RelationPage(
            total=relations.total,
            truncated=relations.truncated,
            items=relations.rows,
            by_relationship=relations.by_relationship,
        ),
        ancestors=RelativePage(
            total=ancestors.total, truncated=ancestors.truncated, items=ancestors.rows
        ),
        descendants=RelativePage(
            total=descendants.total, truncated=descendants.truncated, items=descendants.rows
        ),
    )
