"""The table registry: every table of a release is declared here exactly once.

One module per source plus the search and release tables. From a declaration the
registry derives PyArrow schemas (enforced by writers), DuckDB and SQLite DDL,
Datasette metadata and ``datapackage.json``. Nothing here reads or writes data.
Importing this package imports every table module here, which registers its tables.
"""

import importlib
import pkgutil

from metabundle.schemas.derive import (
    arrow_schema,
    datapackage_resource,
    duckdb_comments,
    duckdb_ddl,
    duckdb_type,
    quote_identifier,
    sqlite_ddl,
)
from metabundle.schemas.model import Column, ColumnType, ForeignKey, Table, Target
from metabundle.schemas.registry import all_tables, get_table, register, tables_of_source

_INFRASTRUCTURE = {"derive", "model", "registry"}
for _module in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
    if _module.name not in _INFRASTRUCTURE:
        importlib.import_module(f"{__name__}.{_module.name}")

__all__ = [
    "Column",
    "ColumnType",
    "ForeignKey",
    "Table",
    "Target",
    "all_tables",
    "arrow_schema",
    "datapackage_resource",
    "duckdb_comments",
    "duckdb_ddl",
    "duckdb_type",
    "get_table",
    "quote_identifier",
    "register",
    "sqlite_ddl",
    "tables_of_source",
]
