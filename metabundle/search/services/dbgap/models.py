"""Response models of the dbGaP tools.

A model whose payload lists a field before those of the model it extends names that
field's model as its last base: pydantic orders fields from the last base to the
first, then the model's own (``Candidate``: ``rank``, the study summary, ``relation``,
``match``).
"""

from __future__ import annotations

from datetime import date
from typing import Annotated, Literal

from pydantic import Field

from metabundle.search.payload import HitScores, ResponseModel, Retrieval

Kind = Literal["variable", "dataset", "document"]
MetadataScope = Literal["exact", "base"]
Relation = Literal["recommended", "other_version", "sub_study", "parent", "sibling", "other_study"]


# -- studies ----------------------------------------------------------------------------


class StudySummary(ResponseModel):
    """A study version as resolution, suggestions and other answers list it; a
    synthetic study says so (and has no URL)."""

    synthetic: bool | None = None
    sub_study_of: str | None = None
    study_id: str
    name: str
    acronyms: list[str]
    is_current_version: bool
    current_study_id: str
    has_variables: bool
    dataset_count: int
    variable_count: int
    document_count: int
    canonical_url: str | None


class RelatedStudy(StudySummary):
    """A study version with its relation to the recommended study."""

    relation: Relation


class Ranked(ResponseModel):
    rank: int


class MatchDetail(ResponseModel):
    """How a candidate matched the query."""

    reason: str
    matched: str


class Candidate(RelatedStudy, Ranked):
    """A ranked candidate of a resolution."""

    match: MatchDetail


class SubStudies(ResponseModel):
    """The studies that declare the recommended study their parent (capped)."""

    of: str
    total: int
    items: list[RelatedStudy]
    truncated: bool


class ResolutionNote(ResponseModel):
    """How the query was matched, and that the match is not authoritative."""

    authoritative: bool
    query_form: Literal["accession", "url", "name"]
    matched_by: str
    matched: str
    studies_matched: int
    alternatives: int
    warnings: list[str]
    confirm: str


class ResolveAnswer(ResponseModel):
    query: str
    recommended: Candidate
    candidates: list[Candidate]
    total_candidates: int
    truncated: bool
    sub_studies: SubStudies
    resolution: ResolutionNote
    next: str


class ConsentGroup(ResponseModel):
    code: str
    name: str


class ParentStudy(ResponseModel):
    study_id: str
    name: str | None


class StudyDates(ResponseModel):
    release_date: date | None
    embargo_release_date: date | None
    gap_create_date: date | None
    gap_mod_date: date | None


class ReportedCounts(ResponseModel):
    """The counts dbGaP's Advanced Search export reports for the study."""

    datasets: int | None
    variables: int | None
    subjects: int | None
    samples: int | None


class StudyCounts(ResponseModel):
    """What this release read for the study version, and what dbGaP reports."""

    datasets: int
    variables: int
    documents: int
    datasets_with_var_report: int
    reported_by_dbgap: ReportedCounts


class StudyRecord(ResponseModel):
    """One study version's metadata (``dbgap_study``)."""

    study_id: str
    base: str
    version: int
    participant_set: int
    name: str
    acronyms: list[str] | None
    description: str
    description_truncated: bool
    diseases: list[str] | None
    study_designs: list[str] | None
    related_terms: list[str] | None
    molecular_data_types: list[str] | None
    markersets: list[str] | None
    consent_groups: list[ConsentGroup]
    nih_institute: str | None
    parent_study: ParentStudy | None
    dates: StudyDates
    is_current_version: bool
    current_study_id: str
    pubmed_ids: list[str] | None
    collections: list[str] | None
    canonical_url: str | None
    synthetic: bool | None = None
    counts: StudyCounts


class MetadataSources(ResponseModel):
    """The study version each part of a study's metadata comes from."""

    text: str
    datasets: str
    documents: str
    text_source: str


class DatasetEntry(ResponseModel):
    dataset_id: str
    accession: str
    name: str
    description: str | None
    variable_count: int
    has_var_report: bool
    canonical_url: str | None


class DatasetListing(ResponseModel):
    total: int
    items: list[DatasetEntry]
    truncated: bool


class DocumentEntry(ResponseModel):
    document_id: str
    accession: str
    title: str
    document_type: str | None
    file_name: str | None
    content_indexed: bool
    canonical_url: str


class DocumentListing(ResponseModel):
    total: int
    items: list[DocumentEntry]
    truncated: bool
    content_indexed: bool


class StudyAnswer(ResponseModel):
    study: StudyRecord
    metadata_scope: MetadataScope
    metadata_sources: MetadataSources
    metadata_notes: list[str]
    versions: list[StudySummary]
    datasets: DatasetListing
    documents: DocumentListing
    next: str


# -- statistics -------------------------------------------------------------------------


class StatFigures(ResponseModel):
    """The statistics a variable report gives for one group (absent ones left out)."""

    calculated_type: str | None = None
    n: int | None = None
    nulls: int | None = None
    mean: float | None = None
    median: float | None = None
    sd: float | None = None
    min: float | None = None
    max: float | None = None
    mean_count: float | None = None
    median_count: float | None = None
    min_count: int | None = None
    max_count: int | None = None
    male_count: int | None = None
    female_count: int | None = None


class ConsentGroupName(ResponseModel):
    consent_group: str


class ConsentStats(StatFigures, ConsentGroupName):
    """The statistics of one consent group."""


class ConsentGroupStats(ResponseModel):
    total: int
    items: list[ConsentStats]
    truncated: bool


class ValueCount(ResponseModel):
    """A value's count over all subjects: an enumerated value or a frequent one."""

    kind: str
    code: str | None
    value: str | None
    count: int | None


class ValueCounts(ResponseModel):
    total: int
    items: list[ValueCount]
    truncated: bool


class VariableStats(ResponseModel):
    """A variable's summary statistics from its variable report."""

    available: Literal[True]
    source: Literal["var_report"]
    tables: list[str]
    total: StatFigures | None
    consent_groups: ConsentGroupStats
    values: ValueCounts


class NoStats(ResponseModel):
    """No variable report was read for the variable."""

    available: Literal[False]
    status: str


Stats = Annotated[VariableStats | NoStats, Field(discriminator="available")]


# -- catalog search ---------------------------------------------------------------------


class VariableProvenance(ResponseModel):
    """Where a variable was read from; ``stats_file_status`` says why a statistics
    file is absent."""

    metadata_source: str
    file: str
    text_encoding: str | None = None
    stats_table: str | None = None
    stats_file: str | None = None
    stats_file_status: str | None = None


class DatasetProvenance(ResponseModel):
    metadata_source: str
    file: str
    text_encoding: str | None = None


class DocumentProvenance(ResponseModel):
    """Documents come from the study version's GapExchange XML."""

    metadata_source: str
    file_status: str
    listed_by: str


class CatalogItem(ResponseModel):
    """The fields every catalog result shares; null fields are left out."""

    rank: int
    source: Literal["dbgap"]
    kind: Kind
    id: str
    accession: str
    study_id: str
    parent_id: str
    title: str
    description: str | None = None
    canonical_url: str | None
    synthetic: bool | None = None
    scores: HitScores


class VariableItem(CatalogItem):
    kind: Literal["variable"]
    name: str
    dataset_name: str
    type: str | None = None
    units: str | None = None
    logical_min: str | None = None
    logical_max: str | None = None
    collection_interval: str | None = None
    coded_value_count: int
    is_unique_key: bool | None = None
    provenance: VariableProvenance
    stats: Stats | None = None


class DatasetItem(CatalogItem):
    kind: Literal["dataset"]
    name: str
    table_study_id: str
    variable_count: int
    has_var_report: bool
    unique_keys: list[str] | None = None
    date_created: date | None = None
    provenance: DatasetProvenance


class DocumentItem(CatalogItem):
    kind: Literal["document"]
    document_type: str | None = None
    file_name: str | None = None
    create_date: date | None = None
    mod_date: date | None = None
    annotated_variable_count: int
    content_indexed: bool
    xml_url: str | None = None
    provenance: DocumentProvenance


ResultItem = Annotated[VariableItem | DatasetItem | DocumentItem, Field(discriminator="kind")]


class CatalogAnswer(ResponseModel):
    query: str
    study_id: str
    searched_study_id: str
    metadata_scope: MetadataScope
    kind: Kind
    in_scope: int
    retrieval: Retrieval
    results: list[ResultItem]
    scope_note: str | None = None
    content_indexed: bool | None = None
    stats_note: str | None = None


# -- variables across studies -----------------------------------------------------------


class AcrossFilters(ResponseModel):
    """The filters that chose the studies searched, as given."""

    studies: list[str] | None
    parent_study: str | None
    disease: str | None


class GroupStudy(ResponseModel):
    """The study a group of variables belongs to: name, version, size and parent."""

    study_id: str
    base: str
    version: int
    name: str
    acronyms: list[str]
    is_current_version: bool
    current_study_id: str
    variable_count: int
    sub_study_of: str | None = None
    synthetic: bool | None = None
    canonical_url: str | None


class GroupVariable(ResponseModel):
    """A variable hit in a study's group (get_dbgap_variable has all its fields)."""

    rank: int
    id: str
    accession: str
    name: str
    title: str
    description: str | None = None
    dataset_name: str
    units: str | None = None
    type: str | None = None
    collection_interval: str | None = None
    canonical_url: str | None
    scores: HitScores


class StudyGroup(ResponseModel):
    """One study's best variables; a study ranks by its best hit."""

    rank: int
    study: GroupStudy
    best_score: float
    variables: list[GroupVariable]
    variables_in_pool: int


class AcrossAnswer(ResponseModel):
    query: str
    filters: AcrossFilters
    studies_searched: int
    studies_matched: int
    truncated: bool
    candidate_pool: int
    retrieval: Retrieval
    results: list[StudyGroup]
    next: str
    studies_without_variables: list[str] | None = None


# -- one variable -----------------------------------------------------------------------


class VariableRecord(ResponseModel):
    """One variable's metadata (``dbgap_variable``)."""

    id: str
    accession: str
    name: str
    description: str | None
    type: str | None
    units: str | None
    logical_min: str | None
    logical_max: str | None
    comment: str | None
    collection_interval: str | None
    is_unique_key: bool
    coded_value_count: int
    has_stats: bool
    metadata_source: str
    synthetic: bool | None = None
    canonical_url: str | None


class VariableDataset(ResponseModel):
    dataset_id: str
    accession: str
    name: str
    description: str | None
    canonical_url: str | None


class CodedValue(ResponseModel):
    """A code and its label, with its count over all subjects where reported."""

    code: str | None
    label: str | None
    is_replacement: bool
    count: int | None


class CodedValues(ResponseModel):
    total: int
    items: list[CodedValue]
    truncated: bool
    tables: list[str]


class VariableAnswer(ResponseModel):
    variable: VariableRecord
    dataset: VariableDataset
    study: StudySummary
    values: CodedValues
    stats: Stats
    other_versions: list[str]
    canonical_url: str | None
