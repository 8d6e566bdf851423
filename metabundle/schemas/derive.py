"""Everything derived from a table declaration: Arrow schemas, DDL, datapackage."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import duckdb
import pyarrow as pa

from metabundle.schemas.model import Column, ColumnType, Table
from metabundle.schemas.registry import get_table

_SQLITE_TYPES: dict[ColumnType, str] = {
    ColumnType.STRING: "TEXT",
    ColumnType.INT32: "INTEGER",
    ColumnType.INT64: "INTEGER",
    ColumnType.FLOAT32: "REAL",
    ColumnType.FLOAT64: "REAL",
    ColumnType.BOOL: "INTEGER",
    ColumnType.DATE: "TEXT",
    ColumnType.TIMESTAMP: "TEXT",
    ColumnType.JSON: "TEXT",
    ColumnType.STRING_LIST: "TEXT",
    ColumnType.INT32_LIST: "TEXT",
    ColumnType.VECTOR: "BLOB",
}

_FRICTIONLESS_TYPES: dict[ColumnType, str] = {
    ColumnType.STRING: "string",
    ColumnType.INT32: "integer",
    ColumnType.INT64: "integer",
    ColumnType.FLOAT32: "number",
    ColumnType.FLOAT64: "number",
    ColumnType.BOOL: "boolean",
    ColumnType.DATE: "date",
    ColumnType.TIMESTAMP: "datetime",
    ColumnType.JSON: "object",
    ColumnType.STRING_LIST: "array",
    ColumnType.INT32_LIST: "array",
    ColumnType.VECTOR: "array",
}


def arrow_type(column: Column, table: Table) -> pa.DataType:
    """The Arrow type a writer must produce for ``column``."""
    match column.type:
        case ColumnType.STRING | ColumnType.JSON:
            return pa.string()
        case ColumnType.INT32:
            return pa.int32()
        case ColumnType.INT64:
            return pa.int64()
        case ColumnType.FLOAT32:
            return pa.float32()
        case ColumnType.FLOAT64:
            return pa.float64()
        case ColumnType.BOOL:
            return pa.bool_()
        case ColumnType.DATE:
            return pa.date32()
        case ColumnType.TIMESTAMP:
            return pa.timestamp("us", tz="UTC")
        case ColumnType.STRING_LIST:
            return pa.list_(pa.string())
        case ColumnType.INT32_LIST:
            return pa.list_(pa.int32())
        case ColumnType.VECTOR:
            if table.vector_dimension is None:
                return pa.list_(pa.float32())
            return pa.list_(pa.float32(), table.vector_dimension)
    raise AssertionError(column.type)


def duckdb_type(column: Column, table: Table) -> str:
    """The DuckDB type of ``column``."""
    match column.type:
        case ColumnType.STRING | ColumnType.JSON:
            return "VARCHAR"
        case ColumnType.INT32:
            return "INTEGER"
        case ColumnType.INT64:
            return "BIGINT"
        case ColumnType.FLOAT32:
            return "FLOAT"
        case ColumnType.FLOAT64:
            return "DOUBLE"
        case ColumnType.BOOL:
            return "BOOLEAN"
        case ColumnType.DATE:
            return "DATE"
        case ColumnType.TIMESTAMP:
            return "TIMESTAMPTZ"
        case ColumnType.STRING_LIST:
            return "VARCHAR[]"
        case ColumnType.INT32_LIST:
            return "INTEGER[]"
        case ColumnType.VECTOR:
            if table.vector_dimension is None:
                return "FLOAT[]"
            return f"FLOAT[{table.vector_dimension}]"
    raise AssertionError(column.type)


def arrow_schema(table: Table) -> pa.Schema:
    """The Arrow schema of ``table``, with descriptions as field metadata."""
    return pa.schema(
        [
            pa.field(
                c.name,
                arrow_type(c, table),
                nullable=c.nullable,
                metadata={"description": c.description},
            )
            for c in table.columns
        ],
        metadata={"table": table.name, "description": table.description},
    )


def quote_identifier(name: str) -> str:
    """Double-quote an SQL identifier (DuckDB and SQLite agree on this form)."""
    return '"' + name.replace('"', '""') + '"'


def duckdb_ddl(table: Table) -> str:
    """``CREATE TABLE`` for DuckDB, with NOT NULL and a primary key of one column.

    DuckDB keeps a primary key as an ART index and answers a lookup from it only by
    the whole key, so a key of several columns serves no query of the release while
    its index grows with the rows (``fts_posting``'s took 246 MB at a million
    documents, ten times the table). Such a key is named in the table's comment
    (:func:`duckdb_comments`), and the file's writer checks that it is unique.
    """
    lines = [
        f"  {quote_identifier(c.name)} {duckdb_type(c, table)}{'' if c.nullable else ' NOT NULL'}"
        for c in table.columns
    ]
    if len(table.primary_key) == 1:
        lines.append(f"  PRIMARY KEY ({quote_identifier(table.primary_key[0])})")
    return f"CREATE TABLE {quote_identifier(table.name)} (\n" + ",\n".join(lines) + "\n)"


def duckdb_comments(table: Table) -> list[str]:
    """``COMMENT ON`` statements carrying the descriptions into the DuckDB catalog."""

    def literal(text: str) -> str:
        return "'" + text.replace("'", "''") + "'"

    name = quote_identifier(table.name)
    description = table.description
    if len(table.primary_key) > 1:
        description = f"{description.rstrip()} Unique key: ({', '.join(table.primary_key)})."
    statements = [f"COMMENT ON TABLE {name} IS {literal(description)}"]
    statements += [
        f"COMMENT ON COLUMN {name}.{quote_identifier(c.name)} IS {literal(c.description)}"
        for c in table.columns
    ]
    return statements


def sqlite_ddl(table: Table, referable: Collection[str] = ()) -> str:
    """``CREATE TABLE`` for SQLite; lists and JSON are stored as JSON text. Foreign
    keys to the tables in ``referable`` are declared (SQLite does not enforce them)."""
    lines = [
        f"  {quote_identifier(c.name)} {_SQLITE_TYPES[c.type]}{'' if c.nullable else ' NOT NULL'}"
        for c in table.columns
    ]
    if table.primary_key:
        keys = ", ".join(quote_identifier(k) for k in table.primary_key)
        lines.append(f"  PRIMARY KEY ({keys})")
    for key in table.foreign_keys:
        if key.table in referable:
            (other,) = get_table(key.table).primary_key
            lines.append(
                f"  FOREIGN KEY ({quote_identifier(key.column)}) "
                f"REFERENCES {quote_identifier(key.table)} ({quote_identifier(other)})"
            )
    return f"CREATE TABLE {quote_identifier(table.name)} (\n" + ",\n".join(lines) + "\n)"


def datapackage_resource(table: Table, path: str) -> dict[str, Any]:
    """A Frictionless Data Package resource describing ``table`` stored at ``path``."""
    return {
        "name": table.name,
        "path": path,
        "format": "parquet",
        "description": table.description,
        "sources": [{"title": table.source}],
        "schema": {
            "fields": [
                {
                    "name": c.name,
                    "type": _FRICTIONLESS_TYPES[c.type],
                    "description": c.description,
                    "constraints": {"required": not c.nullable},
                }
                for c in table.columns
            ],
            "primaryKey": list(table.primary_key),
        },
    }


def duplicate_keys(
    con: duckdb.DuckDBPyConnection, table: Table, source: str
) -> tuple[int, list[str]]:
    """How many keys of ``table`` occur more than once in ``source`` (a table or a
    table function), with up to five of them."""
    keys = ", ".join(quote_identifier(k) for k in table.primary_key)
    rows = con.sql(
        f"SELECT {keys}, count(*) OVER () FROM "
        f"(SELECT {keys} FROM {source} GROUP BY ALL HAVING count(*) > 1) "
        f"ORDER BY {keys} LIMIT 5"
    ).fetchall()
    return (rows[0][-1] if rows else 0), [str(row[:-1]) for row in rows]
