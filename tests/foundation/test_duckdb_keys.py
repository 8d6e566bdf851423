"""The release's DuckDB file declares a primary key where DuckDB can look rows up by it
(one column), names a key of several columns in the table's comment, and refuses a
table whose rows repeat such a key (``schemas.derive.duckdb_ddl``,
``release/duckdb_file.py``)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from metabundle.db import connect
from metabundle.errors import ReleaseError
from metabundle.release.duckdb_file import write_duckdb
from metabundle.schemas import get_table
from metabundle.search.release import Release


def test_only_keys_of_one_column_are_indexed_and_the_others_are_named(release: Release) -> None:
    declared = {
        name: tuple(columns)
        for name, columns in release.query(
            "SELECT table_name, constraint_column_names FROM duckdb_constraints() "
            "WHERE constraint_type = 'PRIMARY KEY'"
        )
    }
    comments = dict(release.query("SELECT table_name, comment FROM duckdb_tables()"))
    composite = []
    for name in comments:
        key = get_table(name).primary_key
        if len(key) == 1:
            assert declared.get(name) == key, name
        else:
            composite.append(name)
            assert name not in declared, name
            assert comments[name].endswith(f"Unique key: ({', '.join(key)})."), name
    assert {"fts_posting", "search_identifier", "omop_concept_relationship"} <= set(composite)


def postings(path: Path, term_ids: list[int], docnos: list[int]) -> Path:
    schema = pa.schema([("term_id", pa.int32()), ("docno", pa.int32()), ("tf", pa.int32())])
    table = pa.table({"term_id": term_ids, "docno": docnos, "tf": [1] * len(docnos)}, schema=schema)
    pq.write_table(table, path)
    return path


def test_a_repeated_key_of_several_columns_is_refused(tmp_path: Path) -> None:
    repeated = postings(tmp_path / "fts_posting.parquet", [1, 1, 2, 2], [7, 7, 7, 8])
    with pytest.raises(ReleaseError, match=r"fts_posting repeats 1 keys \(term_id, docno\)"):
        write_duckdb(tmp_path / "bad.duckdb", [(get_table("fts_posting"), repeated)])


def test_distinct_keys_of_several_columns_are_written(tmp_path: Path) -> None:
    distinct = postings(tmp_path / "fts_posting.parquet", [1, 1, 2], [7, 8, 7])
    write_duckdb(tmp_path / "good.duckdb", [(get_table("fts_posting"), distinct)])
    with connect(tmp_path / "good.duckdb", read_only=True) as con:
        assert con.execute("SELECT count(*) FROM fts_posting").fetchone() == (3,)
