"""The schema registry: every table is described, and its DDL works in both engines."""

from __future__ import annotations

import sqlite3

import pyarrow as pa
import pytest

from metabundle.db import connect
from metabundle.schemas import (
    all_tables,
    arrow_schema,
    datapackage_resource,
    duckdb_ddl,
    get_table,
    sqlite_ddl,
)

TABLES = all_tables()


def test_registry_has_the_foundation_tables() -> None:
    names = {t.name for t in TABLES}
    assert {"idc_collection", "idc_series", "release_info", "source_snapshot"} <= names
    assert {"search_doc", "fts_term", "fts_posting", "embedding"} <= names


@pytest.mark.parametrize("table", TABLES, ids=lambda t: t.name)
def test_every_table_and_column_is_described(table) -> None:
    assert len(table.description.strip()) >= 20, f"{table.name} needs a real description"
    undescribed = [c.name for c in table.columns if len(c.description.strip()) < 5]
    assert not undescribed, f"{table.name} columns without description: {undescribed}"
    assert table.source, f"{table.name} names no source"


@pytest.mark.parametrize("table", TABLES, ids=lambda t: t.name)
def test_keys_are_required_columns(table) -> None:
    assert table.primary_key, f"{table.name} has no primary key"
    for key in table.primary_key:
        assert not table.column(key).nullable, f"{table.name}.{key} is a key but nullable"


@pytest.mark.parametrize("table", TABLES, ids=lambda t: t.name)
def test_ddl_creates_the_declared_columns_in_duckdb_and_sqlite(table) -> None:
    with connect() as con:
        con.execute(duckdb_ddl(table))
        duck_columns = [r[0] for r in con.execute(f'DESCRIBE "{table.name}"').fetchall()]
    assert duck_columns == list(table.column_names)
    db = sqlite3.connect(":memory:")
    db.execute(sqlite_ddl(table))
    lite_columns = [r[1] for r in db.execute(f'PRAGMA table_info("{table.name}")')]
    assert lite_columns == list(table.column_names)


def test_arrow_schema_carries_types_nullability_and_descriptions() -> None:
    schema = arrow_schema(get_table("idc_collection"))
    assert schema.field("collection_id").type == pa.string()
    assert not schema.field("collection_id").nullable
    assert schema.field("subjects").type == pa.int64()
    assert schema.field("source_dois").type == pa.list_(pa.string())
    assert schema.field("collection_id").metadata[b"description"]


def test_idc_descriptions_come_from_the_package_schema() -> None:
    import idc_index_data

    shipped = idc_index_data.INDEX_METADATA["idc_index"]["schema"]
    described = {c["name"]: c["description"] for c in shipped["columns"]}
    series = get_table("idc_series")
    assert series.column_names == tuple(described)
    assert all(series.column(name).description == text for name, text in described.items())


def test_datapackage_resource_lists_fields_and_key() -> None:
    resource = datapackage_resource(get_table("release_info"), "parquet/release_info.parquet")
    assert resource["schema"]["primaryKey"] == ["key"]
    assert [f["name"] for f in resource["schema"]["fields"]] == ["key", "value"]
