"""The Imaging Data Commons indices that ``idc-index-data`` describes but ships without
their Parquet (the specialized ``<modality>_index`` tables and ``clinical_index``), and
the per-collection clinical tables in long form.

Every column, type and description comes from the package's own ``*_schema.json``:
repeated text columns become string lists, other repeated or record columns JSON text.
A build that cannot fetch an index still declares its table, empty
(``allow_empty``); the IDC coverage block names what is missing.
"""

from __future__ import annotations

from metabundle.schemas.idc import _BIGQUERY_TYPES, SOURCE, package_schema
from metabundle.schemas.idc_package import unshipped_indices
from metabundle.schemas.model import Column, ColumnType, Table
from metabundle.schemas.registry import register


def table_name(index_name: str) -> str:
    """The release table of an index: ``seg_index`` -> ``idc_seg_index``."""
    return f"idc_{index_name}"


def column_type(spec: dict[str, str]) -> ColumnType:
    """A package schema column's registry type (repeated text: a string list)."""
    if spec.get("mode") == "REPEATED":
        return ColumnType.STRING_LIST if spec["type"] == "STRING" else ColumnType.JSON
    return _BIGQUERY_TYPES[spec["type"]]


def index_columns(index_name: str, key: tuple[str, ...]) -> tuple[Column, ...]:
    """The package schema's columns; the key columns are required."""
    return tuple(
        Column(
            spec["name"], column_type(spec), spec["description"], nullable=spec["name"] not in key
        )
        for spec in package_schema(index_name)["columns"]
    )


PRIMARY_KEYS = {
    "ann_group_index": ("SeriesInstanceUID", "AnnotationGroupUID"),
    "sm_instance_index": ("SOPInstanceUID",),
    "clinical_index": ("collection_id", "table_name", "column"),
}
"""Keys that are not one row per series (every other index is keyed by its series)."""


def index_table(index_name: str) -> Table:
    key = PRIMARY_KEYS.get(index_name, ("SeriesInstanceUID",))
    columns = index_columns(index_name, key)
    names = {c.name for c in columns}
    return Table(
        name=table_name(index_name),
        source=SOURCE,
        description=package_schema(index_name)["table_description"],
        columns=columns,
        primary_key=tuple(k for k in key if k in names),
        allow_empty=True,
    )


INDEX_TABLES = {name: index_table(name) for name in unshipped_indices()}

IDC_CLINICAL_VALUE = Table(
    name="idc_clinical_value",
    source=SOURCE,
    description=(
        "The per-collection clinical tables that clinical_index describes, in long form: "
        "one row per (table, row, column) with the value as text and the row's "
        "dicom_patient_id, which joins to idc_series.PatientID within the collection."
    ),
    columns=(
        Column("collection_id", ColumnType.STRING, "Collection the clinical table belongs to."),
        Column(
            "short_table_name",
            ColumnType.STRING,
            "Short name of the clinical table (clinical_index.short_table_name).",
            nullable=False,
        ),
        Column(
            "row_number", ColumnType.INT64, "Row of the clinical table, from 1.", nullable=False
        ),
        Column(
            "dicom_patient_id",
            ColumnType.STRING,
            "The row's patient as DICOM PatientID (idc_series.PatientID), when the table has one.",
        ),
        Column("column", ColumnType.STRING, "Column of the clinical table.", nullable=False),
        Column("value", ColumnType.STRING, "The cell's value as text (null when empty)."),
    ),
    primary_key=("short_table_name", "row_number", "column"),
    allow_empty=True,
)

register(*INDEX_TABLES.values(), IDC_CLINICAL_VALUE)
