"""Errors of ``run_sql`` that say how to fix the query: a column the engine cannot
bind comes back with the columns of the tables the query names."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import duckdb

from metabundle.search.errors import SQL_ERROR, ToolError

MAX_TABLES = 5


def _base_tables(node: Any) -> Iterator[str]:
    """The names of the base tables in a serialized parse tree."""
    if isinstance(node, dict):
        if node.get("type") == "BASE_TABLE" and isinstance(node.get("table_name"), str):
            yield node["table_name"]
        for value in node.values():
            yield from _base_tables(value)
    elif isinstance(node, list):
        for value in node:
            yield from _base_tables(value)


def query_columns(con: duckdb.DuckDBPyConnection, query: str) -> dict[str, list[str]]:
    """The columns of each release table ``query`` names (at most :data:`MAX_TABLES`;
    names that are not release tables are left out). The query is only parsed
    (``json_serialize_sql``), never bound or run."""
    tree = json.loads(con.execute("SELECT json_serialize_sql(?)", [query]).fetchall()[0][0])
    names = sorted(set(_base_tables(tree.get("statements", []))))[:MAX_TABLES]
    rows = con.execute(
        "SELECT table_name, column_name FROM information_schema.columns "
        "WHERE list_contains(?, table_name) ORDER BY table_name, ordinal_position",
        [names],
    ).fetchall()
    columns: dict[str, list[str]] = {}
    for table, column in rows:
        columns.setdefault(str(table), []).append(str(column))
    return columns


def sql_error(
    con: duckdb.DuckDBPyConnection, query: str, message: str, error: duckdb.Error
) -> ToolError:
    """``sql_error`` with ``message``; a column the binder cannot find adds the valid
    columns of the query's tables to the message and to ``details.columns``."""
    if not (isinstance(error, duckdb.BinderException) and "column" in message.lower()):
        return ToolError(SQL_ERROR, message)
    columns = query_columns(con, query)
    if not columns:
        return ToolError(SQL_ERROR, message)
    listed = "; ".join(f"{table}: {', '.join(names)}" for table, names in columns.items())
    return ToolError(
        SQL_ERROR, f"{message.rstrip('!. ')}; valid columns are {listed}.", columns=columns
    )
