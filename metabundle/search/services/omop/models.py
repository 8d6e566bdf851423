"""Response models of the OMOP vocabulary tools."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date
from typing import Any, Self

from metabundle.search.payload import ResponseModel, Retrieval
from metabundle.search.services.omop.concepts import athena_url

# -- concepts ------------------------------------------------------------------------------


class Concept(ResponseModel):
    """A concept of the release, ``standard_concept`` true only for ``S``, with its
    Athena page."""

    concept_id: int
    concept_name: str
    concept_code: str
    vocabulary_id: str
    domain_id: str
    concept_class_id: str
    standard_concept: bool
    invalid_reason: str | None
    athena_url: str

    @classmethod
    def of(cls, row: Mapping[str, Any], **extra: Any) -> Self:
        """The concept of an ``omop_concept`` row, with a subclass's ``extra`` fields."""
        return cls(
            concept_id=int(row["concept_id"]),
            concept_name=row["concept_name"],
            concept_code=row["concept_code"],
            vocabulary_id=row["vocabulary_id"],
            domain_id=row["domain_id"],
            concept_class_id=row["concept_class_id"],
            standard_concept=row["standard_concept"] == "S",
            invalid_reason=row["invalid_reason"],
            athena_url=athena_url(row["concept_id"]),
            **extra,
        )


class DatedConcept(Concept):
    """A concept with the dates its row is valid between."""

    valid_start_date: date
    valid_end_date: date


class MatchedConcept(Concept):
    """A concept a search strategy matched, and what of it matched."""

    match_source: str
    matched_synonym: str | None


class SimilarConcept(Concept):
    """A concept found by embedding similarity (cosine)."""

    similarity: float


class StandardConcept(ResponseModel):
    """A standard equivalent of a concept: itself (``self``) or a "Maps to" target."""

    concept_id: int
    concept_name: str
    vocabulary_id: str
    domain_id: str
    concept_class_id: str
    relationship_id: str
    athena_url: str


# -- search primitives -------------------------------------------------------------------


class ExactAnswer(ResponseModel):
    query: str
    results: list[MatchedConcept]


class FulltextResult(MatchedConcept):
    """A full-text match; ``ts_rank`` repeats ``rank`` under the contract's name."""

    rank: float
    ts_rank: float


class FulltextAnswer(ResponseModel):
    query: str
    tsvector_available: bool
    results: list[FulltextResult]


class EmbeddingAnswer(ResponseModel):
    query: str
    retrieval: Retrieval
    results: list[SimilarConcept]


# -- standard mapping ----------------------------------------------------------------------


class Navigation(ResponseModel):
    """A concept and its standard equivalents."""

    source_concept_id: int
    source_concept_name: str
    source_standard_concept: bool
    source_athena_url: str
    standard_concepts: list[StandardConcept]


class NavigateAnswer(ResponseModel):
    results: list[Navigation]


class MapAnswer(ResponseModel):
    """A code's concept with its standard equivalents, and the other concepts holding
    the code (another case, invalid ones)."""

    vocabulary_id: str
    concept_code: str
    source_concept_id: int
    source_concept_name: str
    source_standard_concept: bool
    source_athena_url: str
    standard_concepts: list[StandardConcept]
    other_source_concept_ids: list[int]


class ConceptsWithCode(ResponseModel):
    vocabulary_id: str
    concept_code: str
    concepts: list[DatedConcept]


# -- concept_ground --------------------------------------------------------------------------


class TierRun(ResponseModel):
    """A tier that ran: concepts it matched, those with no standard equivalent, and the
    standard results they gave."""

    tier: str
    candidates: int
    unmapped: int
    results: int


class TierSkipped(ResponseModel):
    tier: str
    skipped: str


class MatchedConceptId(ResponseModel):
    """A matched concept that is itself the result: its id and page, and what matched."""

    concept_id: int
    athena_url: str
    match_source: str
    matched_synonym: str | None


class GroundingExplanation(ResponseModel):
    """How a result was reached: the tier, the matched concept, the mapping path."""

    tier: str
    summary: str
    matched_concept: MatchedConcept | MatchedConceptId
    relationship_id: str
    mapping_path: list[int]


class ScoreBreakdown(ResponseModel):
    tier: str
    signal: str
    match_score: float
    mapping: str


class GroundResult(Concept):
    """A standard concept grounding the query; ``total_score`` repeats ``score``."""

    match_kind: str
    score: float
    total_score: float
    score_breakdown: ScoreBreakdown
    grounding_explanation: str
    explanation: GroundingExplanation


class NonStandardCandidate(Concept):
    """A matched concept with no valid standard equivalent, flagged as such."""

    non_standard_candidate: bool
    match_kind: str
    total_score: float
    match_source: str
    matched_synonym: str | None
    grounding_explanation: str


class GroundAnswer(ResponseModel):
    """The tier that answered (``null`` when none did), what each tier did, the results
    and, when asked for, the matched concepts with no standard equivalent."""

    query: str
    tier: str | None
    matched_tier: str | None
    grounding_explanation: str
    tiers: list[TierRun | TierSkipped]
    results: list[GroundResult]
    non_standard_candidates: list[NonStandardCandidate] | None = None


# -- concept_get -----------------------------------------------------------------------------


class Synonym(ResponseModel):
    concept_synonym_name: str
    language_concept_id: int


class Relation(ResponseModel):
    """An outbound relationship; the related concept may be missing from the release
    (``in_release`` false, no name)."""

    relationship_id: str
    concept_id: int
    concept_name: str | None
    vocabulary_id: str | None
    domain_id: str | None
    concept_class_id: str | None
    standard_concept: bool | None
    in_release: bool
    invalid_reason: str | None
    athena_url: str


class Relative(ResponseModel):
    """An ancestor or descendant; it may be missing from the release (``in_release``
    false, no name)."""

    concept_id: int
    concept_name: str | None
    vocabulary_id: str | None
    domain_id: str | None
    concept_class_id: str | None
    standard_concept: bool | None
    in_release: bool
    min_levels_of_separation: int
    max_levels_of_separation: int
    athena_url: str


class Page(ResponseModel):
    """A bounded list: how many items there are in all, and whether some are left out."""

    total: int
    truncated: bool


class SynonymPage(Page):
    items: list[Synonym]


class RelationPage(Page):
    items: list[Relation]
    by_relationship: dict[str, int]


class RelativePage(Page):
    items: list[Relative]


class ConceptDetails(ResponseModel):
    concept: DatedConcept
    standard_concepts: list[StandardConcept]
    synonyms: SynonymPage
    relationships: RelationPage
    ancestors: RelativePage
    descendants: RelativePage


# -- the concept graph ---------------------------------------------------------------------


class HierarchyMember(Concept):
    """An ancestor or descendant in the release, with its levels of separation."""

    min_levels_of_separation: int
    max_levels_of_separation: int


class Hierarchy(ResponseModel):
    """The concept, and how many ancestors (or descendants) it has in the release and
    outside it."""

    concept: Concept
    total: int
    truncated: bool
    omitted_not_in_release: int


class AncestorsAnswer(Hierarchy):
    ancestors: list[HierarchyMember]
    hint: str | None = None


class DescendantsAnswer(Hierarchy):
    descendants: list[HierarchyMember]
    hint: str | None = None


class Edge(ResponseModel):
    """A relationship to a concept of the release; ``valid`` when the row is."""

    relationship_id: str
    valid: bool
    concept: Concept


class EdgePage(ResponseModel):
    total: int
    truncated: bool
    omitted_not_in_release: int
    by_relationship: dict[str, int]
    items: list[Edge]


class RelationshipsAnswer(ResponseModel):
    concept: Concept
    outbound: EdgePage | None = None
    inbound: EdgePage | None = None


class PathStep(ResponseModel):
    """One relationship of a path: subject, predicate (relationship id), object."""

    subject_id: int
    subject_name: str
    predicate: str
    object_id: int
    object_name: str


class ConceptPath(ResponseModel):
    length: int
    steps: list[PathStep]
    concepts: list[Concept]


class PathAnswer(ResponseModel):
    """A shortest path (``paths`` empty and ``found`` false when none was found;
    ``terminated_reason`` when the search gave up)."""

    source: Concept
    target: Concept
    found: bool
    paths: list[ConceptPath]
    terminated_reason: str | None = None


class NearestStandard(Concept):
    """A nearest standard concept: how it was reached (``via``), the concept ids from
    the asked concept to it, and its level above the asked concept."""

    via: str
    path: list[int]
    levels_of_separation: int


class NearestStandardAnswer(ResponseModel):
    concept: Concept
    results: list[NearestStandard]


class NeighboursAnswer(ResponseModel):
    concept: Concept
    results: list[SimilarConcept]


# -- concept sets ----------------------------------------------------------------------------


class ConceptSetCounts(ResponseModel):
    """The expression's items, the excluded ones, the included ids the exclusions
    removed, and the resolved ids per vocabulary."""

    items: int
    excluded_items: int
    removed_by_exclusions: int
    by_vocabulary: dict[str, int]


class ConceptSetAnswer(ResponseModel):
    """The resolved ids (``count`` in all, at most 10,000 listed) and the first
    ``limit`` of them as concepts."""

    count: int
    counts: ConceptSetCounts
    unknown_item_concept_ids: list[int]
    concept_ids: list[int]
    concept_ids_truncated: bool
    concepts: list[Concept]
    truncated: bool


# -- the crosswalk ---------------------------------------------------------------------------


class UnlistedConcept(ResponseModel):
    """A concept the sources link to that this release's vocabulary does not hold."""

    concept_id: int
    athena_url: str
    in_vocabulary: bool


class CrosswalkLink(ResponseModel):
    """A link from a source's entity to a concept; the source concept (absent from
    similarity links) with its own Athena page."""

    entity_kind: str
    entity_id: str
    entity_label: str | None
    concept_id: int
    source_concept_id: int | None = None
    source_vocabulary_id: str | None = None
    source_code: str | None = None
    relationship_id: str | None
    method: str
    link_type: str
    score: float | None
    provenance: str
    concept_name: str | None
    athena_url: str
    source_athena_url: str | None = None


class CrosswalkSource(ResponseModel):
    """One source's links: how many, to how many entities, and the first ones."""

    links: int
    entities: int
    truncated: bool
    items: list[CrosswalkLink]


class CrosswalkAnswer(ResponseModel):
    concept: Concept | UnlistedConcept
    include_descendants: bool
    sources: dict[str, CrosswalkSource]


class LinkedConcept(ResponseModel):
    """A standard concept one entity links to, as the entity tools (``get_ukb_field``,
    ``get_aou_item``) show it (:func:`..crosswalk.linked_concepts`)."""

    concept_id: int
    relationship_id: str | None
    method: str
    link_type: str
    score: float | None
    provenance: str
    concept_name: str | None
    athena_url: str
