"""Write tables to Parquet exactly as the registry declares them.

Every table a parser produces goes through :func:`stage_table`: columns are checked
against the declaration (a missing or unexpected column is a :class:`SchemaError`
naming it), cast to the declared types, sorted by the declared key (so files are
reproducible) and written with zstd compression. DuckDB does the work, so inputs of
any size stream through without being looped over in Python.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from metabundle.db import connect
from metabundle.errors import SchemaError
from metabundle.schemas import Table, arrow_schema, duckdb_type, get_table, quote_identifier

TableData = Any
"""Anything DuckDB can scan: a pyarrow Table or RecordBatchReader, a polars or pandas
DataFrame, or a DuckDB relation."""


@dataclass(frozen=True)
class StagedTable:
    """A table written to Parquet: where it is and how many rows it has."""

    name: str
    path: Path
    rows: int


def _columns_of(con: duckdb.DuckDBPyConnection, view: str) -> list[str]:
    return [row[0] for row in con.execute(f"DESCRIBE {view}").fetchall()]


def _check_columns(table: Table, found: list[str]) -> None:
    missing = [c for c in table.column_names if c not in found]
    if missing:
        raise SchemaError(f"Table {table.name} is missing column {missing[0]!r}")
    extra = [c for c in found if c not in table.column_names]
    if extra:
        raise SchemaError(f"Table {table.name} has undeclared column {extra[0]!r}")


def _select_sql(table: Table, view: str, *, sort: bool) -> str:
    casts = ", ".join(
        f"CAST({quote_identifier(c.name)} AS {duckdb_type(c, table)}) AS {quote_identifier(c.name)}"
        for c in table.columns
    )
    order = ", ".join(quote_identifier(k) for k in table.sort_key)
    return f"SELECT {casts} FROM {view}" + (f" ORDER BY {order}" if order and sort else "")


def stage_table(
    name: str,
    data: TableData,
    path: Path,
    *,
    con: duckdb.DuckDBPyConnection | None = None,
    kv_metadata: dict[str, str] | None = None,
    presorted: bool = False,
) -> StagedTable:
    """Validate, cast, sort and write ``data`` as table ``name`` to ``path`` atomically.

    ``presorted`` skips the sort for data already in key order (a staged file).
    """
    table = get_table(name)
    own = con is None
    connection = con or connect()
    view = f"__stage_{name}"
    try:
        if isinstance(data, duckdb.DuckDBPyRelation):
            data.create_view(view, replace=True)
        else:
            connection.register(view, data)
        _check_columns(table, _columns_of(connection, view))
        path.parent.mkdir(parents=True, exist_ok=True)
        temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        options = "FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE 122880"
        if kv_metadata:
            pairs = ", ".join(
                f"{_literal(k)}: {_literal(v)}" for k, v in sorted(kv_metadata.items())
            )
            options += f", KV_METADATA {{{pairs}}}"
        try:
            select = _select_sql(table, view, sort=not presorted)
            connection.execute(f"COPY ({select}) TO {_literal(str(temp))} ({options})")
            _check_arrow_schema(table, temp)
            temp.replace(path)
        finally:
            temp.unlink(missing_ok=True)
        if isinstance(data, duckdb.DuckDBPyRelation):
            connection.execute(f"DROP VIEW IF EXISTS {view}")
        else:
            connection.unregister(view)
    except duckdb.ConversionException as error:
        raise SchemaError(f"Table {name} has a value that does not fit its type: {error}") from None
    finally:
        if own:
            connection.close()
    rows = pq.ParquetFile(path).metadata.num_rows
    return StagedTable(name=name, path=path, rows=rows)


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _same_type(found: pa.DataType, declared: pa.DataType) -> bool:
    if pa.types.is_list(found) and (
        pa.types.is_list(declared) or pa.types.is_fixed_size_list(declared)
    ):
        return _same_type(found.value_type, declared.value_type)
    if pa.types.is_fixed_size_list(found) and pa.types.is_fixed_size_list(declared):
        return found.list_size == declared.list_size and _same_type(
            found.value_type, declared.value_type
        )
    if pa.types.is_large_string(found) and pa.types.is_string(declared):
        return True
    return found.equals(declared)


def _check_arrow_schema(table: Table, path: Path) -> None:
    """The written file must carry the registry's Arrow types."""
    found = pq.read_schema(path)
    for field in arrow_schema(table):
        actual = found.field(field.name).type
        if not _same_type(actual, field.type):
            raise SchemaError(
                f"Table {table.name} column {field.name!r} was written as {actual}, "
                f"declared {field.type}"
            )
