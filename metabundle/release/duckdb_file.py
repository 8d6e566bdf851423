"""Write the release's DuckDB file: every table with its DDL, descriptions and keys,
plus the SQL macros that let any DuckDB client search without our code."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from metabundle.db import connect
from metabundle.schemas import Table, duckdb_comments, duckdb_ddl, quote_identifier

# Columns serving looks rows up by that lead a composite primary key: DuckDB answers an
# equality filter from an ART index of that one column only (the key's own index is not
# used), and otherwise reads a whole row group (122,880 rows) per lookup.
LOOKUP_INDEXES: dict[str, tuple[str, ...]] = {
    "search_identifier": ("identifier",),
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
            for column in LOOKUP_INDEXES.get(table.name, ()):
                index = quote_identifier(f"{table.name}_by_{column}")
                con.execute(
                    f"CREATE INDEX {index} ON {quote_identifier(table.name)} "
                    f"({quote_identifier(column)})"
                )
            report(f"duckdb: {table.name}")
        for statement in macros:
            con.execute(statement)
        con.execute("CHECKPOINT")
