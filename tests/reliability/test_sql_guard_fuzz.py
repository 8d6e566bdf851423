"""The SQL guard under generated statements: every kind of statement DuckDB knows,
SELECTs that call file and URL readers, stacked and disguised forms. Only SELECT-type
statements are accepted; nothing is written (a sentinel folder stays as it was and no
file named by the fuzz appears under /tmp) and nothing reaches the network (a loopback
canary sees no connection; an audit hook sees no Python socket use)."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest
from hypothesis import given
from hypothesis import strategies as st

from metabundle.search.errors import INVALID_REQUEST, SQL_ERROR, ToolError
from metabundle.search.release import Release
from metabundle.search.sql_guard import classify
from metabundle.search.tools import call_tool
from tests.reliability.conftest import FUZZ
from tests.support.sandbox import Canary, Sentinel, SocketGuard

TOKEN = f"mbfuzz{secrets.token_hex(4)}"
"""Every path the fuzz asks DuckDB to write starts with this, so a leak is findable."""
TABLES = ("search_doc", "release_info", "source_snapshot")


class Sandbox:
    """What the fuzz aims at, and what must stay untouched."""

    def __init__(self, sentinel: Sentinel, canary: Canary, guard: SocketGuard) -> None:
        self.sentinel = sentinel
        self.canary = canary
        self.guard = guard
        tmp_target = f"/tmp/{TOKEN}"
        self.write_targets = (
            f"{tmp_target}.csv",
            f"{tmp_target}.parquet",
            f"{tmp_target}-dir",
            str(sentinel.root / "new.csv"),
            str(sentinel.root / "secret.csv"),
        )
        self.read_targets = (
            str(sentinel.root / "secret.csv"),
            str(sentinel.root / "secret.txt"),
            str(sentinel.root / "secret.json"),
            str(sentinel.root / "*"),
            "/etc/passwd",
            f"{canary.url}/data.csv",
            f"{canary.url}/data.parquet",
            f"https://127.0.0.1:{canary.port}/x.json",
            f"s3://{TOKEN}/x.parquet",
            f"file://{sentinel.root}/secret.csv",
        )


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory, release: Release) -> Iterator[Sandbox]:
    sentinel = Sentinel(tmp_path_factory.mktemp("sentinel")).plant()
    canary = Canary()
    guard = SocketGuard()
    before = sentinel.state()
    release_files = _release_state(release.path)
    with guard.watching():
        yield Sandbox(sentinel, canary, guard)
    canary.close()
    assert sentinel.state() == before, "the sentinel folder changed"
    leaked = sorted(str(p) for p in Path("/tmp").glob(f"{TOKEN}*"))
    assert not leaked, f"files appeared under /tmp: {leaked}"
    assert canary.connections == 0, "a statement reached the (loopback) network"
    assert not guard.events, f"Python socket use during the fuzz: {guard.events[:3]}"
    assert _release_state(release.path) == release_files, "the release folder changed"


def _release_state(root: Path) -> dict[str, tuple[int, int]]:
    """Every file of the release (and any .wal/.tmp DuckDB would add) by size and mtime."""
    return {
        str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def quoted(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


# -- the grammar ------------------------------------------------------------------------

READERS = (
    "read_csv",
    "read_csv_auto",
    "read_parquet",
    "parquet_scan",
    "read_json",
    "read_json_auto",
    "read_ndjson",
    "read_json_objects",
    "read_text",
    "read_blob",
    "glob",
    "sniff_csv",
    "parquet_metadata",
    "parquet_schema",
)


def disguise(statement: str) -> st.SearchStrategy[str]:
    """``statement`` with the cosmetic variations a filter by text would miss."""
    return st.sampled_from(
        [
            statement,
            statement.lower(),
            f"  \n\t{statement};",
            f"/* SELECT */ {statement}",
            f"-- SELECT\n{statement}",
            statement.replace(" ", "\n"),
            f"{statement};;",
        ]
    )


def writes(box: Sandbox) -> st.SearchStrategy[str]:
    """Statements of every non-SELECT kind, aimed at the release and the sandbox."""
    table = st.sampled_from(TABLES)
    target = st.sampled_from(box.write_targets).map(quoted)
    ext = st.sampled_from(["httpfs", "sqlite", "postgres_scanner", "shellfs", "json"])
    forms = st.one_of(
        st.builds("INSERT INTO {} VALUES (1)".format, table),
        st.builds("INSERT INTO {} SELECT * FROM {}".format, table, table),
        st.builds("UPDATE {} SET title = 'pwned'".format, table),
        st.builds("DELETE FROM {}".format, table),
        st.builds("DROP TABLE {}".format, table),
        st.builds("ALTER TABLE {} RENAME TO gone".format, table),
        st.builds("TRUNCATE {}".format, table),
        st.builds("CREATE TABLE {} AS SELECT 1 AS x".format, st.just(TOKEN)),
        st.builds("CREATE OR REPLACE VIEW {} AS SELECT 1".format, table),
        st.just(f"CREATE MACRO {TOKEN}(x) AS x"),
        st.just(f"CREATE SEQUENCE {TOKEN}"),
        st.builds("COPY {} TO {}".format, table, target),
        st.builds("COPY (SELECT * FROM {}) TO {} (FORMAT parquet)".format, table, target),
        st.builds("COPY {} FROM {}".format, table, target),
        st.builds("EXPORT DATABASE {}".format, target),
        st.builds("IMPORT DATABASE {}".format, target),
        st.builds("ATTACH {} AS {}".format, target, st.just(TOKEN)),
        st.builds("ATTACH {} AS x (READ_ONLY)".format, target),
        st.just("DETACH metabundle"),
        st.builds("INSTALL {}".format, ext),
        st.builds("LOAD {}".format, ext),
        st.builds("FORCE INSTALL {} FROM community".format, ext),
        st.just("SET enable_external_access = true"),
        st.just("SET memory_limit = '100GB'"),
        st.just("RESET threads"),
        st.just("PRAGMA enable_profiling"),
        st.just("PRAGMA table_info('search_doc')"),
        st.just("CALL pragma_version()"),
        st.just(f"CREATE SECRET {TOKEN} (TYPE s3, KEY_ID 'x', SECRET 'y')"),
        st.just("CHECKPOINT"),
        st.just("VACUUM"),
        st.just("BEGIN TRANSACTION"),
        st.just("USE memory"),
        st.just("EXPLAIN SELECT 1"),
        st.just("EXPLAIN ANALYZE SELECT 1"),
        st.just("PREPARE p AS SELECT 1"),
        st.just("EXECUTE p"),
        st.just("UPDATE EXTENSIONS"),
        st.builds("WITH x AS (SELECT 1) INSERT INTO {} SELECT * FROM x".format, table),
        st.builds("SELECT 1; DROP TABLE {}".format, table),
        st.builds("SELECT 1; COPY {} TO {}".format, table, target),
    )
    return forms.flatmap(disguise)


def reads(box: Sandbox) -> st.SearchStrategy[str]:
    """SELECT-type statements that call file or URL readers, plainly or nested."""
    target = st.sampled_from(box.read_targets).map(quoted)
    call = st.builds("{}({})".format, st.sampled_from(READERS), target)
    forms = st.one_of(
        st.builds("SELECT * FROM {}".format, call),
        st.builds("SELECT * FROM {}".format, target),  # a replacement scan
        st.builds("FROM {} LIMIT 1".format, call),
        st.builds("SELECT (SELECT count(*) FROM {})".format, call),
        st.builds("WITH t AS (SELECT * FROM {}) SELECT * FROM t".format, call),
        st.builds("SELECT 1 UNION ALL SELECT count(*) FROM {}".format, call),
        st.builds("SELECT * FROM search_doc, LATERAL (SELECT * FROM {}) LIMIT 1".format, call),
        st.builds("SELECT * FROM query({})".format, call.map(lambda c: quoted(f"FROM {c}"))),
        st.builds("SELECT * FROM query_table({})".format, target),
        st.builds("SUMMARIZE SELECT * FROM {}".format, call),
    )
    return forms.flatmap(disguise)


def describes(box: Sandbox) -> st.SearchStrategy[str]:
    """DESCRIBE of a reader: binds the query without running it (a reader with a fixed
    output, such as sniff_csv, then describes without opening anything)."""
    target = st.sampled_from(box.read_targets).map(quoted)
    call = st.builds("{}({})".format, st.sampled_from(READERS), target)
    return st.builds("DESCRIBE SELECT * FROM {}".format, call).flatmap(disguise)


def selects() -> st.SearchStrategy[str]:
    """Plain read-only SELECT-type statements over the release, which must run."""
    table = st.sampled_from(TABLES)
    limit = st.integers(min_value=0, max_value=5)
    return st.one_of(
        st.builds("SELECT count(*) FROM {}".format, table),
        st.builds("FROM {} LIMIT {}".format, table, limit),
        st.builds("WITH t AS (SELECT * FROM {}) SELECT count(*) FROM t".format, table),
        st.builds("SELECT * FROM (VALUES ({}), (2)) v(x)".format, limit),
        st.builds("SELECT 1 AS a UNION ALL SELECT {}".format, limit),
        st.builds("DESCRIBE {}".format, table),
        st.just("SHOW TABLES"),
        st.just("SELECT * FROM duckdb_tables() LIMIT 3"),
    ).flatmap(disguise)


# -- the properties ---------------------------------------------------------------------


def refused(release: Release, box: Sandbox, sql: str) -> dict[str, Any]:
    """run_sql's answer to ``sql``, which must be a typed refusal leaking nothing."""
    payload = call_tool(release, "run_sql", {"sql": sql, "max_rows": 5})
    assert "error" in payload, f"accepted: {sql!r} → {payload}"
    assert payload["error"]["code"] in (INVALID_REQUEST, SQL_ERROR), payload
    assert box.sentinel.secret not in str(payload), f"the sentinel secret leaked: {sql!r}"
    return payload


@FUZZ
@given(data=st.data())
def test_non_select_statements_are_refused_before_they_run(
    release: Release, sandbox: Sandbox, data: st.DataObject
) -> None:
    sql = data.draw(writes(sandbox), label="sql")
    with pytest.raises(ToolError) as caught:
        classify(sql)
    assert caught.value.code in (INVALID_REQUEST, SQL_ERROR)
    refused(release, sandbox, sql)


@FUZZ
@given(data=st.data())
def test_selects_that_read_files_or_urls_fail_inside_the_engine(
    release: Release, sandbox: Sandbox, data: st.DataObject
) -> None:
    sql = data.draw(reads(sandbox), label="sql")
    refused(release, sandbox, sql)


@FUZZ
@given(data=st.data())
def test_describing_a_reader_reveals_no_file_content(
    release: Release, sandbox: Sandbox, data: st.DataObject
) -> None:
    sql = data.draw(describes(sandbox), label="sql")
    payload = call_tool(release, "run_sql", {"sql": sql, "max_rows": 50})
    assert sandbox.sentinel.secret not in str(payload)
    assert "root:" not in str(payload)  # /etc/passwd
    if "error" in payload:
        assert payload["error"]["code"] == SQL_ERROR


@FUZZ
@given(sql=selects())
def test_plain_selects_are_accepted_and_run(release: Release, sql: str) -> None:
    statement = classify(sql)
    assert duckdb.extract_statements(statement)[0].type == duckdb.StatementType.SELECT
    payload = call_tool(release, "run_sql", {"sql": sql, "max_rows": 5})
    assert "error" not in payload, f"{sql!r} → {payload}"
    assert payload["row_count"] <= 5


@FUZZ
@given(sql=st.text(max_size=200))
def test_arbitrary_text_is_refused_or_is_a_select(release: Release, sql: str) -> None:
    try:
        statement = classify(sql)
    except ToolError as error:
        assert error.code in (INVALID_REQUEST, SQL_ERROR)
        return
    assert duckdb.extract_statements(statement)[0].type == duckdb.StatementType.SELECT


WRITES_FOR_THE_ENGINE = (
    "COPY search_doc TO '{tmp}.csv'",
    "COPY (SELECT 1) TO '{sentinel}/engine.parquet' (FORMAT parquet)",
    "EXPORT DATABASE '{tmp}-export'",
    "ATTACH '{tmp}.db' AS {token}",
    "INSTALL httpfs",
    "LOAD httpfs",
    "SET enable_external_access = true",
    "CREATE TABLE {token} AS SELECT 1",
    "INSERT INTO release_info VALUES ('x', 'y')",
    "DROP TABLE search_doc",
    "CREATE SECRET {token} (TYPE s3, KEY_ID 'x', SECRET 'y')",
    "SELECT * FROM read_csv('{canary}/x.csv')",
)


@pytest.mark.parametrize("template", WRITES_FOR_THE_ENGINE)
def test_the_engine_refuses_them_even_without_the_parser_check(
    release: Release, sandbox: Sandbox, template: str
) -> None:
    """Defense in depth: the read-only, locked connection refuses what the guard would."""
    sql = template.format(
        tmp=f"/tmp/{TOKEN}",
        sentinel=sandbox.sentinel.root,
        token=TOKEN,
        canary=sandbox.canary.url,
    )
    with release.cursor() as cursor, pytest.raises(duckdb.Error):
        cursor.execute(sql)
