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
from typing import Annotated, Any

from pydantic import Field, StringConstraints

from metabundle.search.errors import invalid, not_found
from metabundle.search.params import Params, clamp
from metabundle.search.registry import tool
from metabundle.search.release import Release
from metabundle.search.services.idc.common import GROUP, page_block, require_idc
from metabundle.search.services.idc.filters import Filters, compile_filters
from metabundle.search.services.idc.tools import Offset, Text, resolve_collection

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
    guide=(
        "List the clinical data tables that accompany Imaging Data Commons collections "
        "(diagnosis, stage, treatment, outcome), with their columns, rows and patients. "
        "Call it for non-imaging patient data; then get_clinical_table_schema and "
        "get_clinical_values."
    ),
)
def list_clinical_tables(release: Release, params: ListClinicalTablesParams) -> dict[str, Any]:
    require_idc(release)
    where, args = "TRUE", []
    if params.collection_id:
        where, args = "i.collection_id = ?", [resolve_collection(release, params.collection_id)]
    rows = release.query_dicts(
        f"""
        WITH tables AS (
            SELECT collection_id, short_table_name, min(table_name) AS table_name,
                   count(*) AS columns
            FROM idc_clinical_index AS i WHERE {where} GROUP BY 1, 2
        ), sizes AS (
            SELECT short_table_name, count(DISTINCT row_number) AS rows,
                   count(DISTINCT dicom_patient_id) AS patients
            FROM idc_clinical_value GROUP BY 1
        )
        SELECT t.*, coalesce(s.rows, 0) AS rows, coalesce(s.patients, 0) AS patients,
               s.short_table_name IS NOT NULL AS loaded
        FROM tables AS t LEFT JOIN sizes AS s USING (short_table_name)
        ORDER BY collection_id, short_table_name
        """,
        args,
    )
    page = rows[params.offset : params.offset + params.limit]
    return {
        "page": page_block(len(rows), params.limit, params.offset, len(page)),
        "tables": page,
        "notes": [JOIN_NOTE],
    }


def resolve_table(release: Release, given: str) -> str:
    """The short_table_name for a short or full table name, or ``not_found``."""
    names = [
        row[0]
        for row in release.query(
            "SELECT DISTINCT short_table_name FROM idc_clinical_index ORDER BY 1"
        )
    ]
    short = given.rsplit(".", 1)[-1]
    if short in names:
        return short
    raise not_found(
        f"There is no clinical table {given!r}; call list_clinical_tables.",
        suggestions=difflib.get_close_matches(short, names, n=5, cutoff=0.5),
    )


class ClinicalSchemaParams(Params):
    table: TableName


def _options(values: str | None) -> list[Any]:
    """The first recorded values of a column (clinical_index.values, as JSON text)."""
    parsed = json.loads(values) if values else None
    return (parsed or [])[:TOP_VALUES]


@tool(
    "get_clinical_table_schema",
    "Call before get_clinical_values to pick columns of one IDC clinical table.",
    ClinicalSchemaParams,
    GROUP,
    guide=(
        "Get the columns of one Imaging Data Commons clinical table: name, human-readable"
        " label, values seen, and how many rows fill each. Call it before "
        "get_clinical_values to pick columns."
    ),
)
def get_clinical_table_schema(release: Release, params: ClinicalSchemaParams) -> dict[str, Any]:
    require_idc(release)
    table = resolve_table(release, params.table)
    columns = release.query_dicts(
        """
        SELECT i.collection_id, i."column", i.column_label, i."values",
               (SELECT count(*) FROM idc_clinical_value AS v
                WHERE v.short_table_name = i.short_table_name AND v."column" = i."column"
                  AND v.value IS NOT NULL) AS filled_rows
        FROM idc_clinical_index AS i WHERE i.short_table_name = ? ORDER BY i."column"
        """,
        [table],
    )
    return {
        "table": table,
        "collection_id": columns[0]["collection_id"] if columns else None,
        "columns": [
            {
                "column": c["column"],
                "label": c["column_label"],
                "values": _options(c["values"]),
                "filled_rows": c["filled_rows"],
            }
            for c in columns
        ],
        "notes": [JOIN_NOTE],
    }


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
    known = [
        row[0]
        for row in release.query(
            'SELECT "column" FROM idc_clinical_index WHERE short_table_name = ? ORDER BY 1',
            [table],
        )
    ]
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
    guide=(
        "Get the rows of one Imaging Data Commons clinical table, optionally only for the"
        " patients of a build_cohort selection (joined by patient), with the most "
        "frequent values of each column. Call it for stage, survival or treatment of a "
        "cohort."
        " filters keep the patients of the series those build_cohort filters select."
    ),
)
def get_clinical_values(release: Release, params: ClinicalValuesParams) -> dict[str, Any]:
    require_idc(release)
    table = resolve_table(release, params.table)
    columns = _columns(release, table, params.columns)
    selection = compile_filters(release, params.filters)
    where, args = "v.short_table_name = ?", [table]
    cohort: dict[str, Any] = {}
    if not selection.empty:
        patients = (
            f"SELECT DISTINCT collection_id, PatientID FROM idc_series WHERE {selection.where}"
        )
        where += f" AND (v.collection_id, v.dicom_patient_id) IN ({patients})"
        args += selection.params
        cohort = release.query_dicts(
            f"""
            WITH cohort AS ({patients})
            SELECT count(*) AS patients,
                   count(*) FILTER (WHERE (collection_id, PatientID) IN (
                       SELECT collection_id, dicom_patient_id FROM idc_clinical_value
                       WHERE short_table_name = ?)) AS patients_with_rows
            FROM cohort
            """,
            [*selection.params, table],
        )[0]
    totals = release.query_dicts(
        "SELECT count(DISTINCT row_number) AS matching_rows, count(DISTINCT dicom_patient_id) "
        f"AS matching_patients FROM idc_clinical_value AS v WHERE {where}",
        args,
    )[0]
    row_ids = [
        r[0]
        for r in release.query(
            f"SELECT DISTINCT row_number FROM idc_clinical_value AS v WHERE {where} "
            "ORDER BY 1 LIMIT ? OFFSET ?",
            [*args, params.limit, params.offset],
        )
    ]
    rows: dict[int, dict[str, Any]] = {
        i: {"row_number": i, "dicom_patient_id": None} for i in row_ids
    }
    for number, patient, column, value in release.query(
        'SELECT row_number, dicom_patient_id, "column", value FROM idc_clinical_value '
        "WHERE short_table_name = ? AND list_contains(?, row_number) "
        'AND list_contains(?, "column") ORDER BY row_number, "column"',
        [table, row_ids, columns],
    ):
        rows[number]["dicom_patient_id"] = patient
        rows[number][column] = value
    summary = release.query(
        f"""
        SELECT "column", value, count(*) AS n FROM idc_clinical_value AS v
        WHERE {where} AND list_contains(?, "column")
        GROUP BY 1, 2 QUALIFY row_number() OVER (PARTITION BY "column" ORDER BY n DESC, value)
            <= {TOP_VALUES}
        ORDER BY 1, n DESC, 2
        """,
        [*args, columns],
    )
    top: dict[str, list[dict[str, Any]]] = {c: [] for c in columns}
    for column, value, n in summary:
        top[column].append({"value": value, "rows": n})
    return {
        "table": table,
        "columns": columns,
        **totals,
        **({"cohort": cohort} if cohort else {}),
        "top_values": top,
        "page": page_block(totals["matching_rows"], params.limit, params.offset, len(row_ids)),
        "rows": [rows[i] for i in row_ids],
        **selection.echo(),
        "notes": [*selection.notes, JOIN_NOTE],
    }
