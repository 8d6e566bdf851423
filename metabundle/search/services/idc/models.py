"""Response models of the Imaging Data Commons tools.

Every name starts with ``Idc``: the OpenAPI document lists every source's models side
by side, and two models may not share a name there.
"""

from __future__ import annotations

from pydantic import ConfigDict, Field, JsonValue

from metabundle.search.payload import JsonObject, ResponseModel, Retrieval, SearchResult

Scalar = bool | int | float | str
"""One value of a series attribute (JSON columns are held as text)."""

# -- blocks several tools share ---------------------------------------------------------


class IdcPage(ResponseModel):
    """One page of a listing: ``returned`` of ``total`` rows from ``offset``, and where
    the next page starts (None after the last)."""

    total: int
    limit: int
    offset: int
    returned: int
    next_offset: int | None


class IdcSize(ResponseModel):
    """A size in bytes and as a short human string (decimal units)."""

    bytes: int
    human: str


class IdcLicense(ResponseModel):
    short_name: str | None
    long_name: str | None
    url: str | None


class IdcDataSource(ResponseModel):
    """A data source (one DOI): title, type, modalities, license and citation."""

    doi: str
    doi_url: str
    title: str | None
    source_type: str | None
    modalities: list[str]
    license: IdcLicense
    citation: str | None


class IdcSeriesCount(ResponseModel):
    """How many series have a value (a modality, a license)."""

    value: str | None
    series: int


class IdcSeriesCounts(ResponseModel):
    """Distinct collections, analysis results, patients and studies, series and
    instances of a selection of series."""

    collections: int
    analysis_results: int
    patients: int
    studies: int
    series: int
    instances: int


class IdcManifestCommands(ResponseModel):
    """The commands that write one cloud's manifest of a selection and download it."""

    write_manifest: str
    s5cmd_command: str
    idc_download_command: str


class IdcDownload(ResponseModel):
    """How to download a whole selection, per cloud provider asked for."""

    how: str
    selection_command: str | None
    aws: IdcManifestCommands | None = None
    gcs: IdcManifestCommands | None = None


# -- version, stats, collections, analysis results --------------------------------------


class IdcVersion(ResponseModel):
    idc_version: str
    idc_version_number: int
    version_timestamp: str | None
    package: str
    package_version: str | None
    fetched_at: str | None
    release_version: str
    portal: str


class IdcStats(IdcSeriesCounts):
    """The headline counts of the whole of IDC, with its size and breakdowns."""

    total_size: IdcSize
    modalities: list[IdcSeriesCount]
    licenses: list[IdcSeriesCount]
    notes: list[str]


class IdcCollection(ResponseModel):
    """A collection as list_collections lists it."""

    collection_id: str
    collection_name: str | None
    cancer_types: list[str]
    tumor_locations: list[str]
    species: list[str]
    subjects: int | None
    modalities: list[str] | None
    licenses: list[str] | None
    program_id: str | None
    series: int
    size: IdcSize
    canonical_url: str | None


class IdcCollectionList(ResponseModel):
    page: IdcPage
    collections: list[IdcCollection]
    hint: str | None = None


class IdcCollectionCounts(ResponseModel):
    patients: int
    studies: int
    series: int
    instances: int


class IdcCollectionAnalysis(ResponseModel):
    """An analysis result that annotates a collection, with its series there."""

    analysis_result_id: str
    title: str | None
    series: int


class IdcCollectionDetails(IdcCollection):
    """One collection in full: description, counts, data sources and annotations."""

    description: str | None
    supporting_data: list[str]
    status: str | None
    updated: str | None
    counts: IdcCollectionCounts
    dois: list[str]
    sources: list[IdcDataSource]
    series_by_modality: list[IdcSeriesCount]
    analysis_results: list[IdcCollectionAnalysis]
    notes: list[str]


class IdcAnalysisResult(ResponseModel):
    analysis_result_id: str
    title: str | None
    doi: str | None
    subjects: int | None
    collections: list[str]
    modalities: list[str]
    license: str | None
    updated: str | None
    series: int
    size: IdcSize
    description: str | None
    citation: str | None
    canonical_url: str | None


class IdcAnalysisResultList(ResponseModel):
    page: IdcPage
    analysis_results: list[IdcAnalysisResult]


# -- search -----------------------------------------------------------------------------


class IdcSearchResult(SearchResult):
    """A search result with the facts that tell collections (cancer types, tumor
    locations) and analysis results (annotated collections) apart; a list cut short
    has its full length in ``<name>_total``."""

    cancer_types: list[str] | None = None
    cancer_types_total: int | None = None
    tumor_locations: list[str] | None = None
    collections: list[str] | None = None
    collections_total: int | None = None
    modalities: list[str] | None = None
    subjects: int | None = None


class IdcSearchAnswer(ResponseModel):
    query: str
    retrieval: Retrieval
    results: list[IdcSearchResult]


# -- attributes -------------------------------------------------------------------------


class IdcAttribute(ResponseModel):
    """A filterable attribute: its type, what a filter on it accepts, its meaning."""

    name: str
    type: str
    filter: str
    description: str


class IdcAttributeList(ResponseModel):
    table: str
    attributes: list[IdcAttribute]
    notes: list[str]


class IdcIndex(ResponseModel):
    """A specialized index: its columns as full entries when one index is asked for,
    by name when all are listed."""

    index: str
    table: str
    loaded: bool
    rows: int
    references: str | None = None
    description: str | None = None
    attributes: list[IdcAttribute] | list[str]


class IdcIndexList(ResponseModel):
    indices: list[IdcIndex]
    notes: list[str]


class IdcAttributeValue(ResponseModel):
    value: Scalar
    series: int


class IdcValueRange(ResponseModel):
    """The least and greatest value of a numeric attribute (None without values)."""

    min: int | float | None
    max: int | float | None


class IdcAttributeValues(IdcAttribute):
    """An attribute's distinct values with their series counts, most frequent first."""

    values: list[IdcAttributeValue]
    returned: int
    total_distinct: int
    truncated: bool
    null_series: int
    series: int
    filters_applied: JsonObject
    warnings: list[str]
    notes: list[str]
    range: IdcValueRange | None = None


# -- cohorts and licenses ---------------------------------------------------------------


class IdcValueSize(ResponseModel):
    """The series of one value (a modality, a collection) and their size."""

    value: str | None
    series: int
    size_bytes: int
    size: str


class IdcSeriesRow(ResponseModel):
    """One series of a cohort, with the idc_series columns of that name."""

    collection_id: str
    analysis_result_id: str | None
    PatientID: str | None
    StudyInstanceUID: str | None
    SeriesInstanceUID: str
    Modality: str | None
    BodyPartExamined: str | None
    SeriesDescription: str | None
    instanceCount: int | None
    series_size_MB: float | None
    license_short_name: str | None
    source_DOI: str | None


class IdcCohort(ResponseModel):
    counts: IdcSeriesCounts
    total_size: IdcSize
    by_modality: list[IdcValueSize]
    by_collection: list[IdcValueSize]
    page: IdcPage
    series: list[IdcSeriesRow]
    download: IdcDownload
    filters_applied: JsonObject
    warnings: list[str]
    notes: list[str]


class IdcLicenseUse(ResponseModel):
    """One license of a selection: its terms and the series, patients and size it covers."""

    license: str | None
    long_name: str | None
    url: str | None
    non_commercial_only: bool
    series: int
    patients: int
    collections: int
    size: IdcSize


class IdcLicenses(ResponseModel):
    licenses: list[IdcLicenseUse]
    series: int
    filters_applied: JsonObject
    warnings: list[str]
    notes: list[str]
    note: str


# -- citations --------------------------------------------------------------------------


class IdcCitation(ResponseModel):
    """A data source of a selection with the series that use it; ``citation`` is given
    for the apa format."""

    doi: str | None
    doi_url: str
    title: str | None
    license: IdcLicense | None
    series: int
    citation: str | None = None


class IdcCslName(ResponseModel):
    """A CSL-JSON name: a person (family, given) or an organisation (literal)."""

    family: str | None = None
    given: str | None = None
    literal: str | None = None


class IdcCslDate(ResponseModel):
    model_config = ConfigDict(serialize_by_alias=True)

    date_parts: list[list[int]] = Field(alias="date-parts")


class IdcCslItem(ResponseModel):
    """A work as a CSL-JSON item (the keys a citation processor reads)."""

    model_config = ConfigDict(serialize_by_alias=True)

    id: str | None
    type: str
    title: str | None
    author: list[IdcCslName]
    DOI: str | None
    URL: str
    issued: IdcCslDate | None = None
    version: str | None = None
    publisher: str | None = None
    container_title: str | None = Field(None, alias="container-title")
    volume: str | None = None
    issue: str | None = None
    page: str | None = None


class IdcAcknowledgment(ResponseModel):
    """The IDC paper to cite beside the data sources."""

    doi: str
    doi_url: str
    citation: str
    note: str


class IdcCitations(ResponseModel):
    """The citations of a selection's data sources and the whole ``document`` in the
    format asked for (CSL-JSON: a list of items; the other formats: text)."""

    format: str
    citations: list[IdcCitation]
    total: int
    returned: int
    truncated: bool
    page: IdcPage
    document: str | list[IdcCslItem]
    idc_acknowledgment: IdcAcknowledgment
    filters_applied: JsonObject
    warnings: list[str]
    notes: list[str]


# -- download links and viewer ----------------------------------------------------------


class IdcScopeCounts(ResponseModel):
    collections: int
    patients: int
    studies: int
    series: int


class IdcProviderFiles(ResponseModel):
    """Per-file https URLs of one series, per cloud provider."""

    aws: list[str] | None = None
    gcs: list[str] | None = None


class IdcSeriesUrls(ResponseModel):
    """One series' size and its s5cmd prefix per cloud provider."""

    SeriesInstanceUID: str
    size_bytes: int
    aws: str | None = None
    gcs: str | None = None
    https_files: IdcProviderFiles | None = None


class IdcEndpoints(ResponseModel):
    aws: str | None = None
    gcs: str | None = None


class IdcCohortUrls(ResponseModel):
    """One page of a selection's download links, with the commands for all of it."""

    counts: IdcScopeCounts
    total_size: IdcSize
    idc_version: str
    page: IdcPage
    series: list[IdcSeriesUrls]
    endpoint_urls: IdcEndpoints
    download: IdcDownload
    filters_applied: JsonObject
    warnings: list[str]
    notes: list[str]


class IdcViewerLink(ResponseModel):
    viewer: str
    url: str
    study_instance_uid: str
    series_instance_uid: str | None
    modalities: list[str]
    collection_id: str
    note: str


# -- clinical data ----------------------------------------------------------------------


class IdcClinicalTable(ResponseModel):
    """A clinical table: its columns, and the rows and patients the release holds."""

    collection_id: str
    short_table_name: str | None
    table_name: str
    columns: int
    rows: int
    patients: int
    loaded: bool


class IdcClinicalTableList(ResponseModel):
    page: IdcPage
    tables: list[IdcClinicalTable]
    notes: list[str]


class IdcClinicalColumn(ResponseModel):
    """A clinical column: its label, the first values clinical_index records for it
    (as the index states them) and how many rows fill it."""

    column: str
    label: str | None
    values: list[JsonValue]
    filled_rows: int


class IdcClinicalSchema(ResponseModel):
    table: str
    collection_id: str | None
    columns: list[IdcClinicalColumn]
    notes: list[str]


class IdcClinicalCohort(ResponseModel):
    """The patients a selection holds, and how many of them have rows in the table."""

    patients: int
    patients_with_rows: int


class IdcClinicalValueCount(ResponseModel):
    value: str | None
    rows: int


class IdcClinicalValues(ResponseModel):
    """Rows of a clinical table (keyed by its columns), with the most frequent values of
    each column asked for."""

    table: str
    columns: list[str]
    matching_rows: int
    matching_patients: int
    cohort: IdcClinicalCohort | None = None
    top_values: dict[str, list[IdcClinicalValueCount]]
    page: IdcPage
    rows: list[JsonObject]
    filters_applied: JsonObject
    warnings: list[str]
    notes: list[str]
