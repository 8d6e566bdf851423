"""Write the release's SQLite file (for Datasette and any SQLite client).

Tables come from the release's Parquet files through DuckDB, converted to values
SQLite stores natively: lists and JSON as JSON text, dates and timestamps as ISO
text, booleans as 0/1. Each table keeps its declared primary key (so Datasette links
rows by it) and its foreign keys to the other tables of the file (so Datasette links
a row to its parent and counts the rows referring to it), gets a B-tree index per
scalar facet column, per foreign key and per lookup column, and,
when it declares ``text_columns``, an external-content FTS5 table ``<table>_fts``.

The FTS5 table names its content table in double quotes (``content="ukb_field"``):
Datasette detects full-text search only in that form (or in brackets), and with the
single-quoted form ``?_search=`` is silently ignored.
"""

from __future__ import annotations

import queue
import sqlite3
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import duckdb
import pyarrow as pa

from metabundle.db import connect
from metabundle.schemas import ColumnType, Table, quote_identifier, sqlite_ddl

BATCH_ROWS = 20_000
FTS_SUFFIX = "_fts"
FTS_TOKENIZER = "porter unicode61 remove_diacritics 2"
# Indexes for what people (and the canned queries of datasette/metadata.yaml) look rows
# up by, beyond the primary key and the facets. The idc_series one covers the IDC
# cohort counts, so they read the index instead of the wide rows.
LOOKUP_INDEXES: dict[str, tuple[tuple[str, ...], ...]] = {
    "ukb_field_alias": (("alias",),),
    "omop_concept": (("concept_code",),),
    "omop_concept_synonym": (("concept_synonym_name",),),
    "search_doc": (("entity_id",),),
    "idc_series": (
        (
            "collection_id",
            "Modality",
            "BodyPartExamined",
            "PatientID",
            "series_size_MB",
        ),
    ),
}
_ARRAY_TYPES = (ColumnType.STRING_LIST, ColumnType.INT32_LIST, ColumnType.JSON, ColumnType.VECTOR)


def _sqlite_expression(column_name: str, kind: ColumnType) -> str:
    name = quote_identifier(column_name)
    match kind:
        case ColumnType.STRING_LIST | ColumnType.INT32_LIST | ColumnType.VECTOR:
            return f"CAST(to_json({name}) AS VARCHAR)"
        case ColumnType.DATE:
            return f"strftime({name}, '%Y-%m-%d')"
        case ColumnType.TIMESTAMP:
            return f"strftime({name} AT TIME ZONE 'UTC', '%Y-%m-%dT%H:%M:%SZ')"
        case ColumnType.BOOL:
            return f"CAST({name} AS INTEGER)"
        case _:
            return name


def write_sqlite(
    path: Path,
    tables: list[tuple[Table, Path]],
    *,
    report: Callable[[str], None] = lambda _: None,
) -> None:
    """Create ``path`` holding ``tables`` (declaration, Parquet file) in key order."""
    db = sqlite3.connect(path)
    try:
        db.execute("PRAGMA journal_mode = OFF")
        db.execute("PRAGMA synchronous = OFF")
        db.execute("PRAGMA page_size = 8192")
        referable = {table.name for table, _ in tables}
        with connect() as con:
            for table, parquet in tables:
                _copy_table(db, con, table, parquet, referable)
                _index_table(db, table)
                report(f"SQLite database: table {table.name} written")
        db.commit()
        db.execute("ANALYZE")
        db.commit()
    finally:
        db.close()


def _copy_table(
    db: sqlite3.Connection,
    con: duckdb.DuckDBPyConnection,
    table: Table,
    parquet: Path,
    referable: set[str],
) -> None:
    """Create the table with its keys and bulk insert the rows in key order."""
    db.execute(sqlite_ddl(table, referable))
    select = ", ".join(_sqlite_expression(c.name, c.type) for c in table.columns)
    placeholders = ", ".join("?" for _ in table.columns)
    insert = f"INSERT INTO {quote_identifier(table.name)} VALUES ({placeholders})"
    reader = con.sql(f"SELECT {select} FROM read_parquet('{parquet}')").to_arrow_reader(BATCH_ROWS)
    for rows in _prefetched(reader):
        db.executemany(insert, rows)


def fts_table_name(table_name: str) -> str:
    """The FTS5 table that indexes ``table_name``'s text columns."""
    return table_name + FTS_SUFFIX


def fts_ddl(table: Table) -> str:
    """``CREATE VIRTUAL TABLE`` of ``table``'s external-content FTS5 index."""
    columns = ", ".join(quote_identifier(c) for c in table.text_columns)
    return (
        f"CREATE VIRTUAL TABLE {quote_identifier(fts_table_name(table.name))} USING fts5("
        f"{columns}, content={quote_identifier(table.name)}, tokenize='{FTS_TOKENIZER}')"
    )


def table_indexes(table: Table) -> list[tuple[str, ...]]:
    """The indexes ``table`` gets besides its key: its lookup indexes, then one per
    foreign key and scalar facet that neither the key nor another index already
    leads with (array facets are computed through json_each, which no index helps)."""
    indexes = list(LOOKUP_INDEXES.get(table.name, ()))
    leading = {index[0] for index in indexes} | set(table.primary_key[:1])
    for name in [key.column for key in table.foreign_keys] + list(table.facets):
        if name in leading or table.column(name).type in _ARRAY_TYPES:
            continue
        indexes.append((name,))
        leading.add(name)
    return indexes


def _index_table(db: sqlite3.Connection, table: Table) -> None:
    """Add the facet and lookup indexes and fill the FTS5 table, if any."""
    name = quote_identifier(table.name)
    for columns in table_indexes(table):
        index = quote_identifier(f"{table.name}_by_{'_'.join(columns)}")
        keys = ", ".join(quote_identifier(c) for c in columns)
        db.execute(f"CREATE INDEX {index} ON {name} ({keys})")
    if not table.text_columns:
        return
    fts = quote_identifier(fts_table_name(table.name))
    columns = ", ".join(quote_identifier(c) for c in table.text_columns)
    db.execute(fts_ddl(table))
    db.execute(f"INSERT INTO {fts} (rowid, {columns}) SELECT rowid, {columns} FROM {name}")
    db.execute(f"INSERT INTO {fts} ({fts}) VALUES ('optimize')")


def _prefetched(reader: pa.RecordBatchReader) -> Iterator[list[tuple[object, ...]]]:
    """Rows of ``reader`` as tuples, converted in a thread while SQLite inserts."""
    batches: queue.Queue[list[tuple[object, ...]] | BaseException | None] = queue.Queue(4)

    def produce() -> None:
        try:
            for batch in reader:
                columns = (column.to_pylist() for column in batch.columns)
                batches.put(list(zip(*columns, strict=True)))
            batches.put(None)
        except BaseException as error:  # handed to the consumer, re-raised there
            batches.put(error)

    worker = threading.Thread(target=produce, daemon=True)
    worker.start()
    while (item := batches.get()) is not None:
        if isinstance(item, BaseException):
            raise item
        yield item
    worker.join()
