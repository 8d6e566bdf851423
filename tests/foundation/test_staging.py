"""The staging writer enforces the registry: columns, types and row order."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from metabundle.errors import SchemaError
from metabundle.staging import stage_table


def rows(**overrides: object) -> pa.Table:
    data = {"key": ["b", "a", "c"], "value": ["2", "1", "3"]}
    data.update(overrides)  # type: ignore[arg-type]
    return pa.table(data)


def test_rows_are_written_in_key_order_with_declared_types(tmp_path: Path) -> None:
    staged = stage_table("release_info", rows(), tmp_path / "t.parquet")
    table = pq.read_table(staged.path)
    assert staged.rows == 3
    assert table.column("key").to_pylist() == ["a", "b", "c"]
    assert table.schema.field("key").type == pa.string()


def test_missing_column_is_named(tmp_path: Path) -> None:
    with pytest.raises(SchemaError, match="release_info is missing column 'value'"):
        stage_table("release_info", pa.table({"key": ["a"]}), tmp_path / "t.parquet")
    assert not (tmp_path / "t.parquet").exists()


def test_undeclared_column_is_named(tmp_path: Path) -> None:
    with pytest.raises(SchemaError, match="undeclared column 'extra'"):
        stage_table("release_info", rows(extra=[1, 2, 3]), tmp_path / "t.parquet")


def test_values_are_cast_to_declared_types(tmp_path: Path) -> None:
    data = pa.table({"idc_version": ["25", "3"], "version_timestamp": ["2026-09-26", None]})
    staged = stage_table("idc_version", data, tmp_path / "v.parquet")
    table = pq.read_table(staged.path)
    assert table.schema.field("idc_version").type == pa.int64()
    assert table.column("idc_version").to_pylist() == [3, 25]


def test_uncastable_value_is_a_schema_error(tmp_path: Path) -> None:
    data = pa.table({"idc_version": ["twenty"], "version_timestamp": ["x"]})
    with pytest.raises(SchemaError, match="idc_version"):
        stage_table("idc_version", data, tmp_path / "v.parquet")
