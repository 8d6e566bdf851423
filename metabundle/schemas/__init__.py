"""The table registry: every table of a release is declared here exactly once.

One module per source (its :class:`~metabundle.schemas.sources.SourceDescriptor`
and its tables) plus the search and release tables, which span the sources. From a
declaration the registry derives PyArrow schemas (enforced by writers), DuckDB and
SQLite DDL, Datasette metadata and ``datapackage.json``. Nothing here reads or writes
data. Importing this package imports every module here, which registers its source
and tables: the sources' modules first, then the cross-source ones, whose
descriptions name every source.
"""

import importlib
import pkgutil

from metabundle.schemas.derive import (
    arrow_schema,
    datapackage_resource,
    duckdb_comments,
    duckdb_ddl,
    duckdb_type,
    duplicate_keys,
    quote_identifier,
    sqlite_ddl,
)
from metabundle.schemas.model import Column, ColumnType, ForeignKey, Table, Target
from metabundle.schemas.registry import all_tables, get_table, register, tables_of_source

_INFRASTRUCTURE = {"derive", "idc_package", "model", "registry", "sources"}
_CROSS_SOURCE = ("search", "release")
for _module in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
    if _module.name not in _INFRASTRUCTURE | set(_CROSS_SOURCE):
        importlib.import_module(f"{__name__}.{_module.name}")
for _name in _CROSS_SOURCE:
    importlib.import_module(f"{__name__}.{_name}")

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
    "duplicate_keys",
    "get_table",
    "quote_identifier",
    "register",
    "sqlite_ddl",
    "tables_of_source",
]
