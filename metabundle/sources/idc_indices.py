"""The Imaging Data Commons indices that ``idc-index-data`` describes but does not ship,
and the per-collection clinical tables: where they are published, how they are fetched
and how they become release tables.

The indices are the release assets of the idc-index-data version that is installed
(the URL idc-index's ``fetch_index`` downloads); the clinical tables are IDC's public
BigQuery export that idc-index copies for ``clinical_index``. Each has a mirror path
under ``idc/`` that keeps the URL's own path, so ``--upstream`` and ``metabundle
mirror`` treat them like every other upstream file. A file that cannot be fetched is
left out, never fatal: its table is staged empty and the coverage block names it.
"""

from __future__ import annotations

from importlib.metadata import version as package_version
from pathlib import Path

import duckdb

from metabundle.db import connect
from metabundle.errors import FetchError
from metabundle.schemas import duckdb_type, quote_identifier
from metabundle.schemas.idc_indices import INDEX_TABLES, unshipped_indices
from metabundle.schemas.model import ColumnType
from metabundle.sources.base import FetchContext, ParseContext

ASSET_PATH = "ImagingDataCommons/idc-index-data/releases/download/{version}/{name}.parquet"
ASSET_URL = "https://github.com/" + ASSET_PATH
CLINICAL_PATH = "bigquery_export/idc_{idc_version}_clinical/{table}/000000000000.parquet"
CLINICAL_URL = "https://idc-open-metadata.s3.amazonaws.com/" + CLINICAL_PATH
PATIENT_COLUMN = "dicom_patient_id"
"""The column IDC adds to every clinical table: the row's DICOM PatientID."""
CLINICAL_PREFIX = "clinical:"
"""Missing clinical tables are recorded as ``clinical:<short_table_name>``."""


def index_key(name: str, version: str | None = None) -> str:
    """The mirror path of an index's Parquet for an idc-index-data version."""
    version = version or package_version("idc-index-data")
    return "idc/" + ASSET_PATH.format(version=version, name=name)


def clinical_key(idc_version: str, table: str) -> str:
    """The mirror path of one clinical table of an IDC data version (``v25``)."""
    return "idc/idc-open-metadata/" + CLINICAL_PATH.format(idc_version=idc_version, table=table)


def _unreachable(error: FetchError) -> bool:
    """A failure that says the host cannot be reached at all (not a missing file)."""
    return not error.reason.startswith(("HTTP ", "no such file"))


def _left_out_text(label: str, error: FetchError) -> str:
    """The progress line of an optional file the build goes on without: information
    when the upstream does not have it, the failure's reason otherwise."""
    if error.absent:
        return f"not in the upstream: {label} (optional; the release lists it as missing)"
    return f"could not fetch {label} ({error.reason}); the release lists it as missing"


class _OptionalFetch:
    """Fetches files that may be missing, remembering why each one is."""

    def __init__(self, ctx: FetchContext) -> None:
        self.ctx = ctx
        self.missing: dict[str, str] = {}
        self._unreachable: str | None = None

    def get(self, label: str, key: str, url: str) -> Path | None:
        if self._unreachable is not None:
            self.missing[label] = self._unreachable
            return None
        try:
            return self.ctx.get(key, url).path
        except FetchError as error:
            self.missing[label] = error.reason
            if _unreachable(error):
                self._unreachable = f"not attempted: {error.url} failed ({error.reason})"
            self.ctx.report(_left_out_text(label, error))
            return None


def fetch_unshipped(ctx: FetchContext, idc_version: str | None) -> dict[str, str]:
    """Fetch every index the package does not ship, then the clinical tables that
    ``clinical_index`` lists. Returns what is missing, with the reason."""
    fetcher = _OptionalFetch(ctx)
    version = package_version("idc-index-data")
    for name in unshipped_indices():
        path = fetcher.get(
            name, index_key(name, version), ASSET_URL.format(version=version, name=name)
        )
        if name == "clinical_index" and path is not None and idc_version:
            for table in clinical_tables(path):
                fetcher.get(
                    CLINICAL_PREFIX + table,
                    clinical_key(idc_version, table),
                    CLINICAL_URL.format(idc_version=idc_version, table=table),
                )
    return dict(sorted(fetcher.missing.items()))


def clinical_tables(clinical_index: Path) -> list[str]:
    """The short names of the clinical tables a ``clinical_index.parquet`` describes."""
    with connect() as con:
        rows = con.execute(
            "SELECT DISTINCT short_table_name FROM read_parquet(?) "
            "WHERE short_table_name IS NOT NULL ORDER BY 1",
            [str(clinical_index)],
        ).fetchall()
    return [row[0] for row in rows]


def _index_select(name: str, source: str) -> str:
    """The registry's columns of an index from ``source`` (JSON columns as JSON text)."""
    table = INDEX_TABLES[name]
    columns = []
    for column in table.columns:
        quoted = quote_identifier(column.name)
        if source == "empty":
            columns.append(f"CAST(NULL AS {duckdb_type(column, table)}) AS {quoted}")
        elif column.type is ColumnType.JSON:
            columns.append(f"CAST(to_json({quoted}) AS VARCHAR) AS {quoted}")
        else:
            columns.append(quoted)
    if source == "empty":
        return f"SELECT {', '.join(columns)} WHERE FALSE"
    return f"SELECT {', '.join(columns)} FROM {source}"


def parse_unshipped(ctx: ParseContext) -> None:
    """Stage every unshipped index (empty when it was not fetched) and the clinical
    tables in long form."""
    version = ctx.snapshot.details.get("package_version")
    keys = {raw.key for raw in ctx.snapshot.files}
    for name, table in INDEX_TABLES.items():
        key = index_key(name, version)
        source = f"read_parquet('{ctx.snapshot.file(key).path}')" if key in keys else "empty"
        ctx.write(table.name, ctx.con.sql(_index_select(name, source)))
    ctx.write("idc_clinical_value", ctx.con.sql(_clinical_sql(ctx)))


def _clinical_sql(ctx: ParseContext) -> str:
    """One UNPIVOT per fetched clinical table, unioned: (collection, table, row,
    patient, column, value as text)."""
    idc_version = ctx.snapshot.upstream_version
    version = ctx.snapshot.details.get("package_version")
    keys = {raw.key: raw for raw in ctx.snapshot.files}
    index_file = keys.get(index_key("clinical_index", version))
    parts: list[str] = []
    if index_file is not None and idc_version:
        owners = dict(
            ctx.con.execute(
                "SELECT short_table_name, min(collection_id) FROM read_parquet(?) "
                "WHERE short_table_name IS NOT NULL GROUP BY 1",
                [str(index_file.path)],
            ).fetchall()
        )
        for table, collection in sorted(owners.items()):
            raw = keys.get(clinical_key(idc_version, table))
            if raw is not None:
                parts += _unpivot(ctx.con, raw.path, table, collection)
    if not parts:
        return (
            "SELECT NULL::VARCHAR AS collection_id, ''::VARCHAR AS short_table_name, "
            "0::BIGINT AS row_number, NULL::VARCHAR AS dicom_patient_id, "
            "''::VARCHAR AS \"column\", NULL::VARCHAR AS value WHERE FALSE"
        )
    return " UNION ALL ".join(parts)


def _literal(text: str | None) -> str:
    return "NULL" if text is None else "'" + text.replace("'", "''") + "'"


def _unpivot(con: duckdb.DuckDBPyConnection, path: Path, table: str, collection: str) -> list[str]:
    """The long form of one clinical table (nothing for a table with no value column)."""
    source = f"read_parquet({_literal(str(path))}, file_row_number = true)"
    columns = [row[0] for row in con.execute(f"DESCRIBE SELECT * FROM {source}").fetchall()]
    values = [c for c in columns if c not in (PATIENT_COLUMN, "file_row_number")]
    if not values:
        return []
    patient = (
        f"CAST({quote_identifier(PATIENT_COLUMN)} AS VARCHAR)"
        if PATIENT_COLUMN in columns
        else "NULL::VARCHAR"
    )
    casts = ", ".join(
        f"CAST({quote_identifier(c)} AS VARCHAR) AS {quote_identifier(c)}" for c in values
    )
    unpivoted = ", ".join(quote_identifier(c) for c in values)
    return [
        f"""
        SELECT {_literal(collection)} AS collection_id, {_literal(table)} AS short_table_name,
               row_number, dicom_patient_id, "column", value
        FROM (
            UNPIVOT (SELECT file_row_number + 1 AS row_number, {patient} AS dicom_patient_id,
                            {casts} FROM {source})
            ON {unpivoted} INTO NAME "column" VALUE value
        )
        """
    ]
