"""Write the release's DuckDB file: every table with its DDL, descriptions and keys,
plus the SQL macros that let any DuckDB client search without our code."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import duckdb

from metabundle.db import connect
from metabundle.errors import ReleaseError
from metabundle.schemas import (
    Table,
    duckdb_comments,
    duckdb_ddl,
    duplicate_keys,
    quote_identifier,
)

# What serving looks rows up by, as index name -> SQL expression, per table. DuckDB
# answers an equality filter from an ART index of one column or expression only, and a
# filter on ``lower(name)`` otherwise reads every row per lookup. (Identifiers are
# looked up in ``search/identifiers.arrow`` instead: decision 17.)
LOOKUP_INDEXES: dict[str, dict[str, str]] = {
    "omop_concept": {"lower_name": "lower(concept_name)", "lower_code": "lower(concept_code)"},
    "omop_concept_synonym": {"lower_name": "lower(concept_synonym_name)"},
}


def write_duckdb(
    path: Path,
    tables: list[tuple[Table, Path]],
    *,
    macros: Sequence[str] = (),
    report: Callable[[str], None] = lambda _: None,
) -> None:
    """Create ``path`` with ``tables`` (declaration, Parquet file) and ``macros``."""
    with connect(path) as con:
        for table, parquet in tables:
            con.execute(duckdb_ddl(table))
            for statement in duckdb_comments(table):
                con.execute(statement)
            con.execute(
                f"INSERT INTO {quote_identifier(table.name)} "
                f"SELECT * FROM read_parquet('{parquet}')"
            )
            if len(table.primary_key) > 1:  # not declared in DuckDB: see duckdb_ddl
                _check_unique(con, table)
            for name, expression in LOOKUP_INDEXES.get(table.name, {}).items():
                index = quote_identifier(f"{table.name}_by_{name}")
                con.execute(
                    f"CREATE INDEX {index} ON {quote_identifier(table.name)} (({expression}))"
                )
            report(f"DuckDB database: table {table.name} written")
        for statement in macros:
            con.execute(statement)
        con.execute("CHECKPOINT")


def _check_unique(con: duckdb.DuckDBPyConnection, table: Table) -> None:
    """Refuse a table whose rows repeat its key of several columns."""
    duplicates, examples = duplicate_keys(con, table, quote_identifier(table.name))
    if duplicates:
        raise ReleaseError(
            f"Table {table.name} repeats {duplicates:,} keys "
            f"({', '.join(table.primary_key)}), for example {examples[0]}."
        )
