"""DuckDB's working connections (a build's steps, the release writer) hold at most
``METABUNDLE_DUCKDB_WORK_MEMORY_MB`` and spill past it to ``METABUNDLE_DUCKDB_TEMP_DIR``,
with the same results; a bad value is one sentence naming the variable."""

from __future__ import annotations

from pathlib import Path

import pytest

from metabundle.db import connect
from metabundle.errors import ConfigError

# about 400 MB of rows to sort: more than the smallest limit the setting allows
SORT_MORE_THAN_THE_LIMIT = """
    SELECT count(*), min(padded), max(padded), sum(hash(padded) % 1000)
    FROM (SELECT padded FROM (
        SELECT repeat(md5(CAST(range AS VARCHAR)), 4) AS padded FROM range(3000000)
    ) ORDER BY padded)
"""


def _setting(con: object, name: str) -> str:
    return con.execute(f"SELECT current_setting('{name}')").fetchone()[0]  # type: ignore[attr-defined]


def test_a_working_connection_is_bounded_by_default() -> None:
    with connect() as con:
        assert _setting(con, "memory_limit") == "1.9 GiB"  # 2048 MB, not 80 % of the machine


def test_a_query_larger_than_the_limit_spills_to_the_temp_dir_and_answers_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with connect() as con:
        expected = con.execute(SORT_MORE_THAN_THE_LIMIT).fetchone()
    spill = tmp_path / "spill"
    monkeypatch.setenv("METABUNDLE_DUCKDB_WORK_MEMORY_MB", "256")
    monkeypatch.setenv("METABUNDLE_DUCKDB_TEMP_DIR", str(spill))
    with connect() as con:
        assert _setting(con, "memory_limit") == "244.1 MiB"
        assert con.execute(SORT_MORE_THAN_THE_LIMIT).fetchone() == expected
        assert any(spill.iterdir())  # it did not fit: DuckDB spilled here
    assert not spill.exists()  # and removed its files with the connection


def test_a_limit_given_by_the_caller_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("METABUNDLE_DUCKDB_WORK_MEMORY_MB", "4096")
    with connect(config={"memory_limit": "1GB"}) as con:
        assert _setting(con, "memory_limit") == "953.6 MiB"


def test_a_bad_value_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("METABUNDLE_DUCKDB_WORK_MEMORY_MB", "64")
    with pytest.raises(ConfigError, match=r"^METABUNDLE_DUCKDB_WORK_MEMORY_MB '64' is not valid"):
        connect()
