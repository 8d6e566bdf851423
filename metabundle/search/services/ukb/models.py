"""Response models of the UK Biobank tools (``search_ukb_fields``, ``get_ukb_field``)."""

from __future__ import annotations

from typing import Literal

from metabundle.search.payload import ResponseModel, Retrieval
from metabundle.search.services.omop.models import LinkedConcept

# -- search_ukb_fields --------------------------------------------------------------------


class FieldScores(ResponseModel):
    """A hit's signals as UK Biobank answers show them; null signals and a zero boost are
    left out (``keyword`` is BM25 over the query's best, ``keyword_bm25`` the BM25
    itself)."""

    score: float
    keyword: float | None = None
    keyword_bm25: float | None = None
    semantic_scaled: float
    semantic: float | None = None
    title_match: float
    boost: float | None = None  # an exact id or alias match's boost; left out when none
    boost_reason: str | None = None
    exact_match: bool
    prior_bonus: float | None = None  # explain=true: what the participants prior added
    prior: str | None = None


class MatchedAlias(ResponseModel):
    """The stored alias an exact hit's query equals."""

    alias: str
    alias_kind: str


class FieldResult(ResponseModel):
    """One field found; null fields (a field without a coding has no encoding fields)
    are left out."""

    rank: int
    source: str
    kind: str
    id: int
    title: str
    notes: str | None = None
    notes_truncated: bool
    units: str | None = None
    value_type: str | None = None
    item_type: str | None = None
    participants: int | None = None
    category_id: int | None = None
    category_path: str | None = None
    encoding_id: int | None = None
    encoding_title: str | None = None
    canonical_url: str | None = None
    category_url: str | None = None
    encoding_url: str | None = None
    scores: FieldScores
    matched_alias: MatchedAlias | None = None


class FieldSearchAnswer(ResponseModel):
    query: str
    retrieval: Retrieval
    results: list[FieldResult]


# -- get_ukb_field ------------------------------------------------------------------------


class CodedProperty(ResponseModel):
    """A property code as published, with its published meaning (null when none)."""

    code: int | None
    label: str | None


class FieldProperties(ResponseModel):
    value_type: CodedProperty
    base_type: CodedProperty
    item_type: CodedProperty
    strata: CodedProperty
    stability: CodedProperty
    sexed: CodedProperty
    instanced: CodedProperty
    arrayed: CodedProperty
    availability: CodedProperty
    private: CodedProperty
    cost_do: CodedProperty
    cost_on: CodedProperty
    cost_sc: CodedProperty


class FieldLink(ResponseModel):
    """A field the notes link to, with its Showcase page."""

    id: int
    title: str
    canonical_url: str


class FieldRecord(ResponseModel):
    source: str
    kind: str
    id: int
    title: str
    legacy_title: str | None
    notes: str | None
    units: str | None
    canonical_url: str | None
    properties: FieldProperties
    participants: int | None
    item_count: int | None
    debut: str | None
    version: str | None
    linked_fields: list[FieldLink]


class AliasResolution(ResponseModel):
    """How a column-name alias given as ``field_id`` was resolved."""

    input: str
    alias_kind: str
    stored_alias: bool
    instance: int | None
    array: int | None


class InstanceSummary(ResponseModel):
    """One instance index with its extract column names by alias kind (descriptions and
    per-instance counts are not in the release: null)."""

    instance: int
    description: str | None
    participants: int | None
    column_count: int
    columns: dict[str, list[str]]


class FieldInstances(ResponseModel):
    instancing_id: int | None
    instancing_url: str | None
    instanced: str | None
    instance_min: int | None
    instance_max: int | None
    instance_count: int | None
    instance_ids: list[int]
    array_min: int | None
    array_max: int | None
    array_count: int | None
    participants_all_instances: int | None
    item_count_all_instances: int | None
    summaries: list[InstanceSummary] | None
    summaries_status: Literal["not_requested", "no_instance_range", "columns_only"]
    summaries_note: str | None = None


class CodingParent(ResponseModel):
    """The parent node of a value of a tree coding."""

    node_id: int
    value: str | None
    meaning: str | None


class CodingValue(ResponseModel):
    """A coding value; the node fields are present for tree codings only."""

    value: str
    meaning: str | None
    node_id: int | None = None
    selectable: bool | None = None
    depth: int | None = None
    parent: CodingParent | None = None


class EncodingNotInRelease(ResponseModel):
    """A coding the field names that the release does not hold."""

    id: int
    status: Literal["encoding_not_in_release"]
    values: None


class Encoding(ResponseModel):
    """A field's coding: what every encoding block shows before its values."""

    id: int
    title: str | None
    description: str | None
    structure: str | None
    hierarchical: bool
    coded_as: str | None
    url: str | None
    published_value_count: int | None


class EncodingWithoutValues(Encoding):
    """A coding whose values the release does not hold."""

    values: None
    values_total: None
    values_status: Literal["not_in_release"]
    values_note: str


class EncodingWithValues(Encoding):
    """A coding with its first values (and a tree coding's top-level nodes)."""

    values_status: Literal["loaded"]
    values_total: int
    values: list[CodingValue]
    values_truncated: bool
    values_more: str | None
    top_level_total: int | None = None
    top_level: list[CodingValue] | None = None


class CategoryStep(ResponseModel):
    id: int
    title: str | None
    url: str | None


class FieldCategory(ResponseModel):
    """The field's main category and its path from the top."""

    id: int
    title: str | None
    url: str | None
    path_text: str | None
    path: list[CategoryStep]


class AliasKind(ResponseModel):
    """The aliases of one kind: a count and the first few."""

    count: int
    examples: list[str]


class AliasSummary(ResponseModel):
    total: int
    by_kind: dict[str, AliasKind]


class FieldAnswer(ResponseModel):
    field: FieldRecord
    resolved_from: AliasResolution | None
    instances: FieldInstances
    encoding: EncodingWithValues | EncodingWithoutValues | EncodingNotInRelease | None
    category: FieldCategory | None
    aliases: AliasSummary
    linked_concepts: list[LinkedConcept]
