"""Write the release's DuckDB file: every table with its DDL, descriptions and keys,
plus the SQL macros that let any DuckDB client search without our code."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from metabundle.db import connect
from metabundle.schemas import Table, duckdb_comments, duckdb_ddl, quote_identifier

# What serving looks rows up by, as index name -> SQL expression, per table. DuckDB
# answers an equality filter from an ART index of one column or expression only: the
# composite primary key's index does not serve a lookup by its first column, and a
# filter on ``lower(name)`` otherwise reads every row (a whole row group, or the whole
# table) per lookup.
LOOKUP_INDEXES: dict[str, dict[str, str]] = {
    "search_identifier": {"identifier": "identifier"},
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
            for name, expression in LOOKUP_INDEXES.get(table.name, {}).items():
                index = quote_identifier(f"{table.name}_by_{name}")
                con.execute(
                    f"CREATE INDEX {index} ON {quote_identifier(table.name)} (({expression}))"
                )
            report(f"duckdb: {table.name}")
        for statement in macros:
            con.execute(statement)
        con.execute("CHECKPOINT")
