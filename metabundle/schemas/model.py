"""The declaration types of the table registry: :class:`Column` and :class:`Table`.

A table is declared once with its columns, logical types, nullability, primary key,
descriptions and source. Everything else (Arrow schemas, DDL, Datasette metadata,
``datapackage.json``) is derived from these declarations in :mod:`.derive`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum


class ColumnType(StrEnum):
    """Logical column types; :mod:`.derive` maps them to Arrow, DuckDB and SQLite."""

    STRING = "string"
    INT32 = "int32"
    INT64 = "int64"
    FLOAT32 = "float32"
    FLOAT64 = "float64"
    BOOL = "bool"
    DATE = "date"
    TIMESTAMP = "timestamp"
    JSON = "json"
    STRING_LIST = "string_list"
    INT32_LIST = "int32_list"
    VECTOR = "vector"


class Target(StrEnum):
    """Where a table is written in a release."""

    DUCKDB = "duckdb"
    PARQUET = "parquet"
    SQLITE = "sqlite"


ALL_TARGETS = frozenset(Target)


@dataclass(frozen=True)
class Column:
    """One column: name, logical type, description and whether nulls are allowed."""

    name: str
    type: ColumnType
    description: str
    nullable: bool = True


@dataclass(frozen=True)
class ForeignKey:
    """``column`` refers to a row of ``table`` by that table's one-column primary key.

    Written into the SQLite file when both tables are in it, so Datasette links a
    row to its parent and lists the rows that refer to it.
    """

    column: str
    table: str


@dataclass(frozen=True)
class Table:
    """One release table, declared once.

    ``primary_key`` also fixes the row order written to every file, which makes
    releases reproducible. ``url_column`` names the column that holds the canonical
    source page of a row; ``label_column`` the human label; ``facets`` the columns a
    browser should offer as facets; ``text_columns`` the columns worth full-text
    indexing in SQLite; ``foreign_keys`` the columns naming a row of another table.
    """

    name: str
    source: str
    description: str
    columns: tuple[Column, ...]
    primary_key: tuple[str, ...]
    targets: frozenset[Target] = ALL_TARGETS
    label_column: str | None = None
    url_column: str | None = None
    facets: tuple[str, ...] = ()
    text_columns: tuple[str, ...] = ()
    allow_empty: bool = False
    hidden: bool = False
    vector_dimension: int | None = None
    extra_sort: tuple[str, ...] = field(default=())
    foreign_keys: tuple[ForeignKey, ...] = ()

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    @property
    def sort_key(self) -> tuple[str, ...]:
        """The ordering rows are written in: the primary key, then any tie breakers."""
        return self.primary_key + self.extra_sort

    def column(self, name: str) -> Column:
        for candidate in self.columns:
            if candidate.name == name:
                return candidate
        raise KeyError(f"table {self.name} has no column {name}")
