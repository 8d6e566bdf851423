"""Response models of the All of Us tools (``search_aou_catalog``, ``get_aou_item``)."""

from __future__ import annotations

from typing import Generic, TypeVar

from metabundle.search.payload import HitScores, ResponseModel, Retrieval
from metabundle.search.services.omop.models import LinkedConcept

# -- search_aou_catalog -------------------------------------------------------------------


class SearchFilters(ResponseModel):
    """The catalogue filters given, as validated against the release."""

    variable_type: str | None = None
    ehr_domain: str | None = None
    ehr_role: str | None = None
    ehr_vocabulary: str | None = None


class CatalogScores(HitScores):
    """A hit's scores with the All of Us signals: the title-similarity fallback, whether
    a folded answer placed it, and the intents it matched."""

    title_similarity: float | None
    via_answers: bool
    intent: list[str]


class CatalogResult(ResponseModel):
    rank: int
    result_id: str
    kind: str
    search_role: str
    is_variable: bool
    variable_type: str
    title: str
    subtitle: str | None
    domain: str | None
    vocabulary: str | None
    concept_id: int | None
    concept_code: str | None
    ehr_role: str | None
    canonical_url: str
    scores: CatalogScores


class CatalogSearchAnswer(ResponseModel):
    query: str
    filters: SearchFilters
    retrieval: Retrieval
    results: list[CatalogResult]
    coverage_notice: str


# -- get_aou_item -------------------------------------------------------------------------


class ItemAlternative(ResponseModel):
    """Another item the identifier names."""

    result_id: str
    kind: str
    title: str


class IdentifierResolution(ResponseModel):
    """How an identifier other than a result id was resolved to the item shown."""

    identifier: str
    matched_by: str
    items_matched: int
    alternatives: list[ItemAlternative]
    alternatives_truncated: bool


class AouItem(ResponseModel):
    """The ``aou_item`` row of the item."""

    result_id: str
    kind: str
    search_role: str
    is_variable: bool
    variable_type: str
    variable_class: str | None
    title: str
    subtitle: str | None
    description: str | None
    domain: str | None
    vocabulary: str | None
    concept_id: int | None
    concept_code: str | None
    standard_concept: str | None
    ehr_role: str | None
    concept_class: str | None
    survey_name: str | None
    topic: str | None
    question_paths: list[str] | None
    question_path_text: str | None
    answer_value: int | None
    select_all: bool | None
    position: int | None
    child_count: int
    participant_count: int | None
    count_status: str
    count_source: str | None
    canonical_url: str
    survey_concept_id: int | None


class ItemRef(ResponseModel):
    """Another item, named."""

    result_id: str
    kind: str
    title: str
    is_variable: bool


class Membership(ResponseModel):
    """Where the item sits (null where it has none)."""

    parent: ItemRef | None
    module: ItemRef | None
    topic: ItemRef | None


EntryT = TypeVar("EntryT", bound=ResponseModel)


class CappedList(ResponseModel, Generic[EntryT]):
    """The first entries of a list of the item and how many there are in all."""

    total: int
    items: list[EntryT]


class ItemIdentifier(ResponseModel):
    identifier: str
    identifier_kind: str


class ItemLink(ResponseModel):
    link_kind: str
    url: str


class AnswerChoice(ResponseModel):
    """An answer choice of a question."""

    result_id: str
    title: str
    concept_id: int | None
    answer_value: int | None
    select_all: bool | None
    position: int | None


class ItemMember(ResponseModel):
    """An item of a module, topic or domain."""

    result_id: str
    kind: str
    title: str
    is_variable: bool
    position: int | None


class Relationship(ResponseModel):
    """An edge other than answers and topic membership, with the item at its other end
    and the answer it goes through (``via``)."""

    edge_kind: str
    direction: str
    qualifier: str | None
    item: ItemRef
    via: ItemRef | None


class ItemAnswer(ResponseModel):
    resolution: IdentifierResolution | None = None
    item: AouItem
    membership: Membership
    identifiers: CappedList[ItemIdentifier]
    links: CappedList[ItemLink]
    answers: CappedList[AnswerChoice] | None = None
    members: CappedList[ItemMember] | None = None
    relationships: CappedList[Relationship]
    linked_concepts: list[LinkedConcept]
    coverage_notice: str
