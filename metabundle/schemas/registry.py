"""The registry itself: a name → :class:`Table` mapping filled by the table modules."""

from __future__ import annotations

from collections.abc import Iterable

from metabundle.schemas.model import Table

_TABLES: dict[str, Table] = {}


def register(*tables: Table) -> None:
    """Add tables to the registry; a name may be declared only once."""
    for table in tables:
        if table.name in _TABLES:
            raise ValueError(f"table {table.name} is declared twice")
        unknown = [k for k in table.sort_key if k not in table.column_names]
        if unknown:
            raise ValueError(f"table {table.name}: key columns {unknown} are not columns")
        dangling = [k.column for k in table.foreign_keys if k.column not in table.column_names]
        if dangling:
            raise ValueError(f"table {table.name}: foreign keys {dangling} are not columns")
        _TABLES[table.name] = table


def get_table(name: str) -> Table:
    """The declaration of ``name``; ``KeyError`` with the name when it is unknown."""
    try:
        return _TABLES[name]
    except KeyError:
        raise KeyError(f"no table named {name!r} in the registry") from None


def all_tables() -> list[Table]:
    """Every declared table, sorted by name."""
    return [_TABLES[name] for name in sorted(_TABLES)]


def tables_of_source(source: str) -> list[Table]:
    """The tables a source produces, sorted by name."""
    return [t for t in all_tables() if t.source == source]


def table_names(tables: Iterable[Table]) -> list[str]:
    return [t.name for t in tables]
