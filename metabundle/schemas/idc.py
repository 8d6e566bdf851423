"""NCI Imaging Data Commons tables, from the ``idc-index-data`` package.

Column names and descriptions come from the package's own ``*_schema.json`` files so
that SQL written for idc-index works unchanged; the few columns we add are declared
here with their own descriptions.
"""

from __future__ import annotations

from typing import Any

from metabundle.schemas.idc_package import index_schema
from metabundle.schemas.model import Column, ColumnType, ForeignKey, Table
from metabundle.schemas.registry import register
from metabundle.schemas.sources import SourceDescriptor, register_source

IDC = register_source(
    SourceDescriptor(
        name="idc",
        title="NCI Imaging Data Commons",
        homepage="https://portal.imaging.datacommons.cancer.gov/",
        order=5,
        license=(
            "Per collection and series (columns licenses and license_short_name; mostly CC BY)"
        ),
        license_url="https://portal.imaging.datacommons.cancer.gov/",
        about=(
            "NCI Imaging Data Commons: public cancer imaging collections and their DICOM "
            "series (modality, body part, size, licence, cloud location), and analysis "
            "results derived from them."
        ),
        citation=(
            "Fedorov A, Longabaugh WJR, Pot D, et al. National Cancer Institute Imaging "
            "Data Commons: toward transparency, reproducibility, and scalability in "
            "imaging artificial intelligence. RadioGraphics. 2023;43(12):e230180."
        ),
        main_tables=("idc_collection", "idc_series", "idc_analysis_result"),
        examples=("lung CT", "breast MRI", "prostate"),
        charts="idc",
        aliases=("imaging data commons", "nci imaging data commons", "idc"),
        search_tool="search_idc",
    )
)

SOURCE = IDC.name
PLAIN_TEXT = "as plain text (markup removed, HTML entities decoded, line wraps joined)."

_BIGQUERY_TYPES: dict[str, ColumnType] = {
    "STRING": ColumnType.STRING,
    "INTEGER": ColumnType.INT64,
    "INT64": ColumnType.INT64,
    "FLOAT": ColumnType.FLOAT64,
    "FLOAT64": ColumnType.FLOAT64,
    "BOOLEAN": ColumnType.BOOL,
    "BOOL": ColumnType.BOOL,
    "RECORD": ColumnType.JSON,
}


def package_schema(index_name: str) -> dict[str, Any]:
    """The ``<index>_schema.json`` idc-index-data ships (:mod:`.idc_package`)."""
    return index_schema(index_name)


def package_columns(index_name: str, *, not_null: tuple[str, ...] = ()) -> tuple[Column, ...]:
    """Columns of an idc-index table with the package's types and descriptions."""
    columns = []
    for spec in package_schema(index_name)["columns"]:
        kind = ColumnType.JSON if spec.get("mode") == "REPEATED" else _BIGQUERY_TYPES[spec["type"]]
        columns.append(
            Column(spec["name"], kind, spec["description"], nullable=spec["name"] not in not_null)
        )
    return tuple(columns)


IDC_COLLECTION = Table(
    name="idc_collection",
    source=SOURCE,
    description=package_schema("collections_index")["table_description"],
    columns=(
        *package_columns("collections_index", not_null=("collection_id",)),
        Column("canonical_url", ColumnType.STRING, "IDC portal page listing the collection."),
        Column(
            "source_dois",
            ColumnType.STRING_LIST,
            "DOIs of the collection's data sources (from sources), lower-cased.",
        ),
        Column(
            "licenses",
            ColumnType.STRING_LIST,
            "Short names of the licenses that apply to the collection's sources.",
        ),
        Column(
            "modalities", ColumnType.STRING_LIST, "Modalities listed by the collection's sources."
        ),
    ),
    primary_key=("collection_id",),
    label_column="collection_name",
    url_column="canonical_url",
    facets=("cancer_types", "tumor_locations", "species", "program_id", "status"),
    text_columns=("collection_name", "cancer_types", "tumor_locations", "description"),
)

IDC_ANALYSIS_RESULT = Table(
    name="idc_analysis_result",
    source=SOURCE,
    description=package_schema("analysis_results_index")["table_description"],
    columns=(
        *package_columns("analysis_results_index", not_null=("analysis_result_id",)),
        Column(
            "canonical_url",
            ColumnType.STRING,
            "Public page of the analysis result (its DOI landing page).",
        ),
        Column("citation_text", ColumnType.STRING, f"citation {PLAIN_TEXT}"),
    ),
    primary_key=("analysis_result_id",),
    label_column="analysis_result_title",
    url_column="canonical_url",
    facets=("modalities", "license_short_name"),
    text_columns=("analysis_result_title", "description", "collections"),
)

IDC_DATA_SOURCE = Table(
    name="idc_data_source",
    source=SOURCE,
    description="One row per data source (a DOI) of the collections and analysis results: "
    "its title, type, license and citation, as the collections' sources list them (an "
    "analysis result's own facts for a DOI no collection lists).",
    columns=(
        Column("doi", ColumnType.STRING, "The source's DOI, lower-cased.", nullable=False),
        Column("title", ColumnType.STRING, "Title of the data source."),
        Column(
            "source_type",
            ColumnType.STRING,
            "original_data, derived_data or analysis_result.",
        ),
        Column("url", ColumnType.STRING, "The source's landing page."),
        Column("modalities", ColumnType.STRING, "Modalities of the source, comma-separated."),
        Column("citation", ColumnType.STRING, "The APA citation as idc-index-data ships it."),
        Column("license", ColumnType.STRING, "Short name of the source's license."),
        Column("license_long_name", ColumnType.STRING, "Full name of the license."),
        Column("license_url", ColumnType.STRING, "The license's page."),
        Column(
            "collections",
            ColumnType.STRING_LIST,
            "Collections that list the source (or that the analysis result annotates).",
        ),
        Column("citation_text", ColumnType.STRING, f"citation {PLAIN_TEXT}"),
        Column("citation_title", ColumnType.STRING, "The title the citation sets in italics."),
    ),
    primary_key=("doi",),
    label_column="title",
    url_column="url",
    facets=("source_type", "license"),
    text_columns=("title", "citation_text"),
)

IDC_SERIES = Table(
    name="idc_series",
    source=SOURCE,
    description=package_schema("idc_index")["table_description"],
    columns=package_columns("idc_index", not_null=("SeriesInstanceUID", "collection_id")),
    primary_key=("SeriesInstanceUID",),
    foreign_keys=(
        ForeignKey("collection_id", "idc_collection"),
        ForeignKey("analysis_result_id", "idc_analysis_result"),
    ),
    label_column="SeriesDescription",
    facets=("collection_id", "Modality", "BodyPartExamined", "license_short_name", "PatientSex"),
    text_columns=("SeriesDescription", "StudyDescription"),
)

IDC_VERSION = Table(
    name="idc_version",
    source=SOURCE,
    description=package_schema("version_metadata_index")["table_description"],
    columns=package_columns("version_metadata_index", not_null=("idc_version",)),
    primary_key=("idc_version",),
)

IDC_PRIOR_VERSION = Table(
    name="idc_prior_version",
    source=SOURCE,
    description=package_schema("prior_versions_index")["table_description"],
    columns=package_columns(
        "prior_versions_index",
        not_null=("SeriesInstanceUID", "crdc_series_uuid", "min_idc_version"),
    ),
    primary_key=("crdc_series_uuid", "min_idc_version"),
    foreign_keys=(ForeignKey("collection_id", "idc_collection"),),
    facets=("collection_id", "Modality"),
)

register(
    IDC_COLLECTION,
    IDC_ANALYSIS_RESULT,
    IDC_DATA_SOURCE,
    IDC_SERIES,
    IDC_VERSION,
    IDC_PRIOR_VERSION,
)
