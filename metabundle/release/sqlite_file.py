"""Write the release's SQLite file (for Datasette and any SQLite client).

Tables come from the release's Parquet files through DuckDB, converted to values
SQLite stores natively: lists and JSON as JSON text, dates and timestamps as ISO
text, booleans as 0/1.
"""

from __future__ import annotations

import queue
import sqlite3
import threading
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import duckdb
import pyarrow as pa

from metabundle.db import connect
from metabundle.schemas import ColumnType, Table, quote_identifier, sqlite_ddl

BATCH_ROWS = 20_000


def _sqlite_expression(column_name: str, kind: ColumnType) -> str:
    name = quote_identifier(column_name)
    match kind:
        case ColumnType.STRING_LIST | ColumnType.VECTOR:
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
        with connect() as con:
            for table, parquet in tables:
                _copy_table(db, con, table, parquet)
                report(f"sqlite: {table.name}")
        db.commit()
        db.execute("ANALYZE")
        db.commit()
    finally:
        db.close()


def _copy_table(
    db: sqlite3.Connection, con: duckdb.DuckDBPyConnection, table: Table, parquet: Path
) -> None:
    """Create the table without its key index, bulk insert in key order, then index."""
    unindexed = replace(table, primary_key=())
    db.execute(sqlite_ddl(unindexed))
    select = ", ".join(_sqlite_expression(c.name, c.type) for c in table.columns)
    placeholders = ", ".join("?" for _ in table.columns)
    insert = f"INSERT INTO {quote_identifier(table.name)} VALUES ({placeholders})"
    reader = con.sql(f"SELECT {select} FROM read_parquet('{parquet}')").to_arrow_reader(BATCH_ROWS)
    for rows in _prefetched(reader):
        db.executemany(insert, rows)
    if table.primary_key:
        keys = ", ".join(quote_identifier(k) for k in table.primary_key)
        db.execute(
            f"CREATE UNIQUE INDEX {quote_identifier(table.name + '_pk')} "
            f"ON {quote_identifier(table.name)} ({keys})"
        )


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
