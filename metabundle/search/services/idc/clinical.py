"""Imaging Data Commons clinical data: the per-collection tables ``clinical_index``
describes (``list_clinical_tables``, ``get_clinical_table_schema``) and their values
for the patients of a cohort (``get_clinical_values``).

The values live in ``idc_clinical_value`` in long form (table, row, column, value as
text); a row joins to ``idc_series`` by ``dicom_patient_id`` = ``PatientID`` within
its collection.
"""

from __future__ import annotations

import difflib
import json
from typing import Annotated

from pydantic import Field, JsonValue, StringConstraints

from metabundle.search.errors import invalid, not_found
from metabundle.search.params import Params, clamp
from metabundle.search.payload import JsonObject
from metabundle.search.registry import tool
from metabundle.search.release import Release
from metabundle.search.services.idc import queries
from metabundle.search.services.idc.blocks import page_block
from metabundle.search.services.idc.catalog import resolve_collection
from metabundle.search.services.idc.filters import Filters, compile_filters
from metabundle.search.services.idc.models import (
    IdcClinicalCohort,
    IdcClinicalColumn,
    IdcClinicalSchema,
    IdcClinicalTable,
    IdcClinicalTableList,
    IdcClinicalValueCount,
    IdcClinicalValues,
)
from metabundle.search.services.idc.source import GROUP, Offset, Text, require_idc

MAX_COLUMNS = 20
TOP_VALUES = 10
TableName = Annotated[
    str,
    StringConstraints(min_length=1, max_length=200, strip_whitespace=True),
    Field(description="A short_table_name, e.g. 'nlst_prsn'."),
]
JOIN_NOTE = (
    "Clinical rows join to imaging by dicom_patient_id = PatientID within the collection; "
    "a patient may have several rows (visits, lesions) or none."
)


class ListClinicalTablesParams(Params):
    collection_id: Text | None = None
    limit: Annotated[int, clamp(1, 200), Field(description="1..200.")] = 50
    offset: Offset = 0


@tool(
    "list_clinical_tables",
    "Call for non-imaging IDC patient data (diagnosis, stage, outcome): the clinical tables.",
    ListClinicalTablesParams,
    GROUP,
    response=IdcClinicalTableList,
    guide=(
        "List the clinical data tables that accompany Imaging Data Commons collections "
        "(diagnosis, stage, treatment, outcome), with their columns, rows and patients. "
        "Call it for non-imaging patient data; then get_clinical_table_schema and "
        "get_clinical_values."
    ),
)
def list_clinical_tables(
    release: Release, params: ListClinicalTablesParams
) -> IdcClinicalTableList:
    require_idc(release)
    collection_id = None
    if params.collection_id:
        collection_id = resolve_collection(release, params.collection_id)
    rows = queries.clinical_tables(release, collection_id)
    page = rows[params.offset : params.offset + params.limit]
    return IdcClinicalTableList(
        page=page_block(len(rows), params.limit, params.offset, len(page)),
        tables=[IdcClinicalTable(**row) for row in page],
        notes=[JOIN_NOTE],
    )


def resolve_table(release: Release, given: str) -> str:
    """The short_table_name for a short or full table name, or ``not_found``."""
    names = queries.clinical_table_names(release)
    short = given.rsplit(".", 1)[-1]
    if short in names:
        return short
    raise not_found(
        f"There is no clinical table {given!r}; call list_clinical_tables.",
        suggestions=difflib.get_close_matches(short, names, n=5, cutoff=0.5),
    )


class ClinicalSchemaParams(Params):
    table: TableName


def _options(values: str | None) -> list[JsonValue]:
    """The first recorded values of a column (clinical_index.values, as JSON text)."""
    parsed = json.loads(values) if values else None
    return (parsed or [])[:TOP_VALUES]


@tool(
    "get_clinical_table_schema",
    "Call before get_clinical_values to pick columns of one IDC clinical table.",
    ClinicalSchemaParams,
    GROUP,
    response=IdcClinicalSchema,
    guide=(
        "Get the columns of one Imaging Data Commons clinical table: name, human-readable"
        " label, values seen, and how many rows fill each. Call it before "
        "get_clinical_values to pick columns."
    ),
)
def get_clinical_table_schema(release: Release, params: ClinicalSchemaParams) -> IdcClinicalSchema:
    require_idc(release)
    table = resolve_table(release, params.table)
    columns = queries.clinical_columns(release, table)
    return IdcClinicalSchema(
        table=table,
        collection_id=columns[0]["collection_id"] if columns else None,
        columns=[
            IdcClinicalColumn(
                column=c["column"],
                label=c["column_label"],
                values=_options(c["values"]),
                filled_rows=c["filled_rows"],
            )
            for c in columns
        ],
        notes=[JOIN_NOTE],
    )


class ClinicalValuesParams(Params):
    table: TableName
    columns: Annotated[
        list[Annotated[str, StringConstraints(max_length=200)]] | None,
        Field(
            max_length=MAX_COLUMNS,
            description=f"Columns to return (at most {MAX_COLUMNS}); omit for the first "
            f"{MAX_COLUMNS}.",
        ),
    ] = None
    filters: Filters | None = None
    limit: Annotated[int, clamp(0, 200), Field(description="0..200.")] = 20
    offset: Offset = 0


def _columns(release: Release, table: str, wanted: list[str] | None) -> list[str]:
    known = queries.clinical_column_names(release, table)
    if not wanted:
        return known[:MAX_COLUMNS]
    unknown = [c for c in wanted if c not in known]
    if unknown:
        raise invalid(
            f"columns: {table} has no column {unknown[0]!r}; call get_clinical_table_schema.",
            suggestions=difflib.get_close_matches(unknown[0], known, n=5, cutoff=0.5),
        )
    return list(dict.fromkeys(wanted))


@tool(
    "get_clinical_values",
    "Call for stage, survival or treatment of an IDC cohort: rows of one clinical table.",
    ClinicalValuesParams,
    GROUP,
    response=IdcClinicalValues,
    guide=(
        "Get the rows of one Imaging Data Commons clinical table, optionally only for the"
        " patients of a build_cohort selection (joined by patient), with the most "
        "frequent values of each column. Call it for stage, survival or treatment of a "
        "cohort."
        " filters keep the patients of the series those build_cohort filters select."
    ),
)
def get_clinical_values(release: Release, params: ClinicalValuesParams) -> IdcClinicalValues:
    require_idc(release)
    table = resolve_table(release, params.table)
    columns = _columns(release, table, params.columns)
    selection = compile_filters(release, params.filters)
    scope = queries.ClinicalScope(release, table, selection)
    totals = scope.totals()
    row_ids = scope.row_numbers(params.limit, params.offset)
    rows: dict[int, JsonObject] = {i: {"row_number": i, "dicom_patient_id": None} for i in row_ids}
    for number, patient, column, value in scope.cells(row_ids, columns):
        rows[number]["dicom_patient_id"] = patient
        rows[number][column] = value
    top: dict[str, list[IdcClinicalValueCount]] = {c: [] for c in columns}
    for column, value, n in scope.top_values(columns, TOP_VALUES):
        top[column].append(IdcClinicalValueCount(value=value, rows=n))
    answer = IdcClinicalValues(
        table=table,
        columns=columns,
        **totals,
        top_values=top,
        page=page_block(totals["matching_rows"], params.limit, params.offset, len(row_ids)),
        rows=[rows[i] for i in row_ids],
        filters_applied=selection.applied,
        warnings=selection.warnings,
        notes=[*selection.notes, JOIN_NOTE],
    )
    if not selection.empty:
        answer.cohort = IdcClinicalCohort(**scope.cohort())
    return answer
