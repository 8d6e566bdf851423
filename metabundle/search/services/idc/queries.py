"""The SQL of the Imaging Data Commons tools over the release's ``idc_*`` tables: each
function loads rows, and the tools turn them into payloads.

A selection (:class:`.filters.Selection`) is a WHERE clause over ``idc_series`` with
its bound parameters; every value reaches DuckDB as a parameter.
"""

from __future__ import annotations

from typing import Any

from metabundle.schemas import quote_identifier
from metabundle.search.release import Release
from metabundle.search.services.idc.filters import Attribute, Selection

# Total bytes of the series in scope: each series' size back in whole bytes, then an
# integer sum, so totals are exact and do not depend on summation order.
SIZE_BYTES_SQL = "coalesce(sum(CAST(round(series_size_MB * 1000000) AS BIGINT)), 0)"

# -- versions and counts ----------------------------------------------------------------


def latest_version(release: Release) -> dict[str, Any]:
    """The newest IDC data version the release holds, and its timestamp."""
    return release.query_dicts(
        "SELECT idc_version, version_timestamp FROM idc_version ORDER BY idc_version DESC LIMIT 1"
    )[0]


def series_counts(
    release: Release, where: str = "TRUE", params: list[Any] | None = None
) -> tuple[dict[str, int], int]:
    """The counts of the series ``where`` selects (distinct collections, analysis
    results, patients, studies; series and instances) and their total bytes.
    Patients are distinct (collection_id, PatientID) pairs: PatientID is unique only
    within a collection."""
    counts = release.query_dicts(
        f"""
        SELECT count(DISTINCT collection_id) AS collections,
               count(DISTINCT analysis_result_id) AS analysis_results,
               count(DISTINCT (collection_id, PatientID)) AS patients,
               count(DISTINCT StudyInstanceUID) AS studies,
               count(*) AS series,
               coalesce(sum(instanceCount), 0) AS instances,
               {SIZE_BYTES_SQL} AS size_bytes
        FROM idc_series WHERE {where}
        """,
        params,
    )[0]
    return counts, counts.pop("size_bytes")


def series_breakdown(
    release: Release, column: str, where: str = "TRUE", params: list[Any] | None = None
) -> list[tuple[Any, int]]:
    """The values of a series column with their series counts, most frequent first."""
    name = quote_identifier(column)
    return release.query(
        f"SELECT {name}, count(*) AS n FROM idc_series WHERE {where} GROUP BY 1 ORDER BY n DESC, 1",
        params,
    )


# -- collections ------------------------------------------------------------------------

COLLECTIONS_SQL = f"""
WITH counts AS (
    SELECT collection_id, count(*) AS series, {SIZE_BYTES_SQL} AS size_bytes
    FROM idc_series GROUP BY collection_id
)
SELECT c.*, k.series, k.size_bytes
FROM idc_collection AS c LEFT JOIN counts AS k USING (collection_id)
"""

_ELEMENT_MATCH = (
    "len(list_filter(string_split(c.{column}, ','), "
    "lambda x: contains(lower(trim(x)), lower(?)))) > 0"
)


def collections(
    release: Release,
    *,
    cancer_type: str | None = None,
    tumor_location: str | None = None,
    modality: str | None = None,
    collection_id: str | None = None,
) -> list[dict[str, Any]]:
    """The collections with their series count and bytes, by id: those whose cancer
    types and tumor locations have an element containing the words given, that list the
    modality, or the one collection ``collection_id``."""
    conditions, args = [], []
    if cancer_type:
        conditions.append(_ELEMENT_MATCH.format(column="cancer_types"))
        args.append(cancer_type.strip())
    if tumor_location:
        conditions.append(_ELEMENT_MATCH.format(column="tumor_locations"))
        args.append(tumor_location.strip())
    if modality:
        conditions.append(
            "list_contains(list_transform(c.modalities, lambda m: lower(m)), lower(?))"
        )
        args.append(modality.strip())
    if collection_id is not None:
        conditions.append("collection_id = ?")
        args.append(collection_id)
    where = " AND ".join(conditions) or "TRUE"
    return release.query_dicts(
        f"SELECT * FROM ({COLLECTIONS_SQL}) AS c WHERE {where} ORDER BY collection_id", args
    )


def collection_vocabulary(release: Release, column: str) -> list[str]:
    """The distinct elements of a comma-separated idc_collection column."""
    rows = release.query(
        f"SELECT DISTINCT trim(unnest(string_split({quote_identifier(column)}, ','))) "
        "FROM idc_collection ORDER BY 1"
    )
    return [r[0] for r in rows if r[0]]


def collection_names(release: Release) -> list[tuple[str, str | None]]:
    """Every collection's id and name."""
    return release.query("SELECT collection_id, collection_name FROM idc_collection")


def collection_counts(release: Release, collection_id: str) -> dict[str, int]:
    """A collection's patients, studies, series and instances."""
    return release.query_dicts(
        """
        SELECT count(DISTINCT PatientID) AS patients, count(DISTINCT StudyInstanceUID) AS studies,
               count(*) AS series, coalesce(sum(instanceCount), 0) AS instances
        FROM idc_series WHERE collection_id = ?
        """,
        [collection_id],
    )[0]


def collection_analysis_results(release: Release, collection_id: str) -> list[dict[str, Any]]:
    """The analysis results with series in a collection, most series first."""
    return release.query_dicts(
        """
        SELECT s.analysis_result_id, a.analysis_result_title AS title, count(*) AS series
        FROM idc_series AS s LEFT JOIN idc_analysis_result AS a USING (analysis_result_id)
        WHERE s.collection_id = ? AND s.analysis_result_id IS NOT NULL
        GROUP BY 1, 2 ORDER BY series DESC, 1
        """,
        [collection_id],
    )


def analysis_results(
    release: Release, collection_id: str | None = None, modality: str | None = None
) -> list[dict[str, Any]]:
    """The analysis results with their series count and bytes, by id: those that
    annotate ``collection_id`` and list ``modality`` when given."""
    conditions, args = [], []
    if collection_id:
        conditions.append(
            "list_contains(list_transform(string_split(a.collections, ','), lambda x: trim(x)), ?)"
        )
        args.append(collection_id)
    if modality:
        conditions.append(
            "list_contains(list_transform(string_split(a.modalities, ','), "
            "lambda x: lower(trim(x))), lower(?))"
        )
        args.append(modality.strip())
    where = " AND ".join(conditions) or "TRUE"
    return release.query_dicts(
        f"""
        WITH counts AS (
            SELECT analysis_result_id, count(*) AS series, {SIZE_BYTES_SQL} AS size_bytes
            FROM idc_series WHERE analysis_result_id IS NOT NULL GROUP BY 1
        )
        SELECT a.*, k.series, k.size_bytes
        FROM idc_analysis_result AS a LEFT JOIN counts AS k USING (analysis_result_id)
        WHERE {where} ORDER BY a.analysis_result_id
        """,
        args,
    )


def collection_facts(release: Release, ids: list[str]) -> list[dict[str, Any]]:
    """Cancer types, tumor locations, modalities and subjects of the collections ``ids``."""
    return release.query_dicts(
        "SELECT collection_id, cancer_types, tumor_locations, modalities, subjects "
        "FROM idc_collection WHERE list_contains(?, collection_id)",
        [ids],
    )


def analysis_result_facts(release: Release, ids: list[str]) -> list[dict[str, Any]]:
    """Collections, modalities and subjects of the analysis results ``ids``."""
    return release.query_dicts(
        "SELECT analysis_result_id, collections, modalities, subjects "
        "FROM idc_analysis_result WHERE list_contains(?, analysis_result_id)",
        [ids],
    )


# -- data sources (DOIs) ----------------------------------------------------------------


def doi_sources(release: Release, dois: list[str] | None = None) -> dict[str, dict[str, Any]]:
    """Every data source keyed by lower-cased DOI (only ``dois`` when given)."""
    rows = release.query_dicts("SELECT * FROM idc_data_source ORDER BY doi")
    wanted = None if dois is None else set(dois)
    return {row["doi"]: row for row in rows if wanted is None or row["doi"] in wanted}


def series_by_doi(release: Release, selection: Selection) -> list[tuple[str | None, int]]:
    """The lower-cased DOIs of a selection's series with their series counts, most
    used first."""
    return release.query(
        f"SELECT lower(source_DOI) AS doi, count(*) AS n FROM idc_series "
        f"WHERE {selection.where} GROUP BY 1 ORDER BY n DESC, 1",
        selection.params,
    )


# -- attributes -------------------------------------------------------------------------


def row_count(release: Release, table: str) -> int:
    """The rows of a table of the release (a specialized index)."""
    return release.query(f"SELECT count(*) FROM {table}")[0][0]


def attribute_value_counts(
    release: Release, attribute: Attribute, selection: Selection, contains: str | None, limit: int
) -> tuple[dict[str, Any], list[tuple[Any, int]]]:
    """The distinct values of an attribute (list columns counted per element) among the
    series of ``selection``: a summary (distinct values, series without a value, series,
    least and greatest value) and the ``limit`` most frequent values with their series
    counts."""
    where, args = selection.where, list(selection.params)
    series = "count(*)"  # idc_series has one row per series
    if attribute.index:
        series = "count(DISTINCT SeriesInstanceUID)"
        where = f"SeriesInstanceUID IN (SELECT SeriesInstanceUID FROM idc_series WHERE {where})"
    if contains:
        where += " AND contains(lower(CAST(v AS VARCHAR)), lower(?))"
        args.append(contains)
    values = f"({attribute.values_sql()})"
    summary = release.query_dicts(
        f"""
        SELECT count(DISTINCT v) AS total_distinct,
               {series} FILTER (WHERE v IS NULL) AS null_series,
               {series} AS series, min(v) AS min, max(v) AS max
        FROM {values} WHERE {where}
        """,
        args,
    )[0]
    rows = release.query(
        f"SELECT v, {series} AS n FROM {values} "
        f"WHERE {where} AND v IS NOT NULL GROUP BY 1 ORDER BY n DESC, 1 LIMIT ?",
        [*args, limit],
    )
    return summary, rows


# -- cohorts and licenses ---------------------------------------------------------------

COHORT_COLUMNS = (
    "collection_id",
    "analysis_result_id",
    "PatientID",
    "StudyInstanceUID",
    "SeriesInstanceUID",
    "Modality",
    "BodyPartExamined",
    "SeriesDescription",
    "instanceCount",
    "series_size_MB",
    "license_short_name",
    "source_DOI",
)
COHORT_ORDER = "collection_id, PatientID, StudyInstanceUID, SeriesInstanceUID"


def cohort_series(
    release: Release, selection: Selection, limit: int, offset: int
) -> list[dict[str, Any]]:
    """One page of a selection's series (:data:`COHORT_COLUMNS`), by collection,
    patient, study and series."""
    return release.query_dicts(
        f"SELECT {', '.join(COHORT_COLUMNS)} FROM idc_series WHERE {selection.where} "
        f"ORDER BY {COHORT_ORDER} LIMIT ? OFFSET ?",
        [*selection.params, limit, offset],
    )


def grouped_sizes(
    release: Release, selection: Selection, column: str, limit: int | None
) -> list[tuple[Any, int, int]]:
    """The values of a column among a selection's series with their series counts and
    bytes, most series first (the first ``limit`` when given)."""
    return release.query(
        f"SELECT {column}, count(*) AS n, {SIZE_BYTES_SQL} FROM idc_series "
        f"WHERE {selection.where} GROUP BY 1 ORDER BY n DESC, 1" + (" LIMIT ?" if limit else ""),
        selection.params + ([limit] if limit else []),
    )


def license_counts(release: Release, selection: Selection) -> list[tuple[Any, ...]]:
    """Per license of a selection's series: series, patients, collections and bytes."""
    return release.query(
        f"""
        SELECT license_short_name, count(*) AS n,
               count(DISTINCT (collection_id, PatientID)),
               count(DISTINCT collection_id), {SIZE_BYTES_SQL}
        FROM idc_series WHERE {selection.where} GROUP BY 1 ORDER BY n DESC, 1
        """,
        selection.params,
    )


# -- download links and viewer ----------------------------------------------------------


def instance_files(release: Release, series: list[str]) -> dict[str, list[str]]:
    """Per series, the crdc_instance_uuid of each of its files, where the release has
    instance-level data (sm_instance_index: slide microscopy)."""
    rows = release.query(
        "SELECT SeriesInstanceUID, list(crdc_instance_uuid ORDER BY crdc_instance_uuid) "
        "FROM idc_sm_instance_index WHERE list_contains(?, SeriesInstanceUID) GROUP BY 1",
        [series],
    )
    return dict(rows)


def study_series(release: Release, study: str) -> list[dict[str, Any]]:
    """The series of a study with their modality and collection."""
    return release.query_dicts(
        "SELECT SeriesInstanceUID, Modality, collection_id FROM idc_series "
        "WHERE StudyInstanceUID = ? ORDER BY SeriesInstanceUID",
        [study],
    )


def study_of(release: Release, series: str) -> str | None:
    """The StudyInstanceUID of a series; None when there is no such series."""
    rows = release.query(
        "SELECT StudyInstanceUID FROM idc_series WHERE SeriesInstanceUID = ?", [series]
    )
    return rows[0][0] if rows else None


# -- clinical data ----------------------------------------------------------------------


def clinical_tables(release: Release, collection_id: str | None) -> list[dict[str, Any]]:
    """The clinical tables (of ``collection_id`` when given) with their columns, and the
    rows and patients the release holds of each."""
    where, args = "TRUE", []
    if collection_id:
        where, args = "i.collection_id = ?", [collection_id]
    return release.query_dicts(
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


def clinical_table_names(release: Release) -> list[str]:
    """The short_table_name of every clinical table, sorted."""
    return [
        row[0]
        for row in release.query(
            "SELECT DISTINCT short_table_name FROM idc_clinical_index ORDER BY 1"
        )
    ]


def clinical_columns(release: Release, table: str) -> list[dict[str, Any]]:
    """A clinical table's columns: collection, label, recorded values (JSON text) and
    the number of rows with a value."""
    return release.query_dicts(
        """
        SELECT i.collection_id, i."column", i.column_label, i."values",
               (SELECT count(*) FROM idc_clinical_value AS v
                WHERE v.short_table_name = i.short_table_name AND v."column" = i."column"
                  AND v.value IS NOT NULL) AS filled_rows
        FROM idc_clinical_index AS i WHERE i.short_table_name = ? ORDER BY i."column"
        """,
        [table],
    )


def clinical_column_names(release: Release, table: str) -> list[str]:
    """The columns of a clinical table, sorted."""
    return [
        row[0]
        for row in release.query(
            'SELECT "column" FROM idc_clinical_index WHERE short_table_name = ? ORDER BY 1',
            [table],
        )
    ]


class ClinicalScope:
    """The values of one clinical table (``v``), only of the patients of a selection
    when it filters: a WHERE clause over idc_clinical_value with its parameters."""

    def __init__(self, release: Release, table: str, selection: Selection) -> None:
        self.release = release
        self.table = table
        self.selection = selection
        self.patients = (
            f"SELECT DISTINCT collection_id, PatientID FROM idc_series WHERE {selection.where}"
        )
        self.where, self.params = "v.short_table_name = ?", [table]
        if not selection.empty:
            self.where += f" AND (v.collection_id, v.dicom_patient_id) IN ({self.patients})"
            self.params += selection.params

    def cohort(self) -> dict[str, int]:
        """The selection's patients, and how many of them have rows in the table."""
        return self.release.query_dicts(
            f"""
            WITH cohort AS ({self.patients})
            SELECT count(*) AS patients,
                   count(*) FILTER (WHERE (collection_id, PatientID) IN (
                       SELECT collection_id, dicom_patient_id FROM idc_clinical_value
                       WHERE short_table_name = ?)) AS patients_with_rows
            FROM cohort
            """,
            [*self.selection.params, self.table],
        )[0]

    def totals(self) -> dict[str, int]:
        """The rows and patients in scope."""
        return self.release.query_dicts(
            "SELECT count(DISTINCT row_number) AS matching_rows, count(DISTINCT dicom_patient_id) "
            f"AS matching_patients FROM idc_clinical_value AS v WHERE {self.where}",
            self.params,
        )[0]

    def row_numbers(self, limit: int, offset: int) -> list[int]:
        """One page of the row numbers in scope, in order."""
        rows = self.release.query(
            f"SELECT DISTINCT row_number FROM idc_clinical_value AS v WHERE {self.where} "
            "ORDER BY 1 LIMIT ? OFFSET ?",
            [*self.params, limit, offset],
        )
        return [r[0] for r in rows]

    def cells(
        self, rows: list[int], columns: list[str]
    ) -> list[tuple[int, str | None, str, str | None]]:
        """Row number, patient, column and value of the ``columns`` of ``rows``."""
        return self.release.query(
            'SELECT row_number, dicom_patient_id, "column", value FROM idc_clinical_value '
            "WHERE short_table_name = ? AND list_contains(?, row_number) "
            'AND list_contains(?, "column") ORDER BY row_number, "column"',
            [self.table, rows, columns],
        )

    def top_values(self, columns: list[str], top: int) -> list[tuple[str, str | None, int]]:
        """The ``top`` most frequent values of each of ``columns`` in scope, with their
        row counts."""
        return self.release.query(
            f"""
            SELECT "column", value, count(*) AS n FROM idc_clinical_value AS v
            WHERE {self.where} AND list_contains(?, "column")
            GROUP BY 1, 2 QUALIFY row_number() OVER (PARTITION BY "column" ORDER BY n DESC, value)
                <= {top}
            ORDER BY 1, n DESC, 2
            """,
            [*self.params, columns],
        )
