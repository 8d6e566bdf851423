"""No Datasette statement outlives its time limit, and SQLite's legacy
``fts3_tokenizer`` is out of reach: through Datasette's SQL page (in-process ASGI),
a real ``metabundle datasette`` under concurrent bombs (loopback HTTP), and
datasette-mcp's ``execute_sql`` on ``/-/mcp``.

Each slow statement here spends its time inside single calls of SQLite's built-in
functions, where Datasette's progress handler never runs: unbounded, the printf bomb
took 27 s, three of them held every SQL thread for 86 s, and the ``instr`` row more
than a minute."""

from __future__ import annotations

import base64
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest
from datasette.app import Datasette
from mcp import Client

from metabundle.datasette_plugin.sql_workers import WorkerDatabase
from tests.support.processes import free_port, serving

pytestmark = pytest.mark.anyio

PRINTF_BOMB = "SELECT printf('%.*c%.*c%.*c',2147483647,'x',2147483647,'y',2147483647,'z')"
HUNDRED_KB = "replace(hex(zeroblob(49999)),'0','a')"
SLOW_STATEMENTS = {
    "printf": PRINTF_BOMB,
    # 200 calls of a 0.15 s instr in one row: no jump, so no progress check, between them
    "instr row": (
        f"WITH t(a, b) AS (SELECT {HUNDRED_KB}, substr({HUNDRED_KB}, 1, 49999) || 'b') "
        "SELECT " + ", ".join(f"instr(a, b || '{i}')" for i in range(200)) + " FROM t"
    ),
    # ltrim compares each character with each of 5,000 others: 3 s a call
    "trim row": (
        f"WITH t(a, s) AS (SELECT {HUNDRED_KB}, replace(hex(zeroblob(2499)), '0', 'b') || 'a') "
        "SELECT " + ", ".join(f"length(ltrim(a, s || '{i}'))" for i in range(20)) + " FROM t"
    ),
}
ANSWER_WITHIN_S = 10.0
"""Generous: a statement is stopped at the release's ``sql_time_limit_ms`` (3 s) plus
the grace period, 4 s."""
TOKENIZER_CALLS = [
    "SELECT fts3_tokenizer('simple')",
    "SELECT hex(fts3_tokenizer('simple'))",
    "SELECT fts3_tokenizer('simple', x'0000000000000000')",
    "SELECT FTS3_TOKENIZER('porter', fts3_tokenizer('simple'))",
]
TABLE_PAGE = "/metabundle/ukb_field.json?_size=5"


def sql_path(sql: str) -> str:
    return f"/metabundle.json?sql={quote(sql)}"


async def test_the_release_database_runs_its_sql_in_workers(datasette: Datasette) -> None:
    assert isinstance(datasette.get_database("metabundle"), WorkerDatabase)


@pytest.mark.parametrize("sql", SLOW_STATEMENTS.values(), ids=SLOW_STATEMENTS.keys())
async def test_a_statement_stuck_inside_sqlite_is_stopped_at_the_time_limit(
    datasette: Datasette, sql: str
) -> None:
    started = time.monotonic()
    response = await datasette.client.get(sql_path(sql))
    elapsed = time.monotonic() - started
    assert elapsed < ANSWER_WITHIN_S, f"answered after {elapsed:.1f} s"
    assert response.status_code == 400, response.text[:300]
    assert response.json()["ok"] is False
    assert response.json()["title"] == "SQL Interrupted"
    after = await datasette.client.get(TABLE_PAGE)
    assert after.status_code == 200 and after.json()["rows"], "the next statement runs"


async def test_rows_types_and_parameters_come_back_as_before(datasette: Datasette) -> None:
    sql = "SELECT :a AS text, 2 AS n, 1.5 AS x, x'00ff' AS b, NULL AS z, 'é' AS \"q\"\"uote\""
    response = await datasette.client.get(sql_path(sql) + "&a=hello&_shape=objects")
    assert response.status_code == 200, response.text[:300]
    row = response.json()["rows"][0]
    blob = {"$base64": True, "encoded": base64.b64encode(b"\x00\xff").decode()}
    assert row == {"text": "hello", "n": 2, "x": 1.5, "b": blob, "z": None, 'q"uote': "é"}


@pytest.mark.parametrize("sql", TOKENIZER_CALLS)
async def test_fts3_tokenizer_is_refused_and_reveals_no_pointer(
    datasette: Datasette, sql: str
) -> None:
    response = await datasette.client.get(sql_path(sql))
    assert response.status_code == 400, response.text[:300]
    payload = response.json()
    assert payload["ok"] is False and payload["rows"] == []
    assert payload["error"].lower() == "not authorized to use function: fts3_tokenizer"


async def test_full_text_search_still_works(datasette: Datasette) -> None:
    response = await datasette.client.get("/metabundle/ukb_field.json?_search=blood&_size=3")
    assert response.status_code == 200, response.text[:300]
    assert response.json()["rows"], "the FTS5 index answers"


@pytest.fixture(scope="module")
def bombed_server(release_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A ``metabundle datasette`` of its own, for the bombs not to slow other tests."""
    port = free_port()
    log = tmp_path_factory.mktemp("bombed-datasette") / "server.log"
    with serving(["datasette", "--release", str(release_path), "--port", str(port)], port, log):
        yield f"http://127.0.0.1:{port}"


def timed_get(url: str) -> tuple[float, int]:
    started = time.monotonic()
    response = httpx.get(url, timeout=120)
    return time.monotonic() - started, response.status_code


def test_three_bombs_at_once_do_not_hold_a_table_page(bombed_server: str) -> None:
    with ThreadPoolExecutor(4) as pool:
        bombs = [pool.submit(timed_get, bombed_server + sql_path(PRINTF_BOMB)) for _ in range(3)]
        time.sleep(0.5)  # the bombs hold every worker
        page = pool.submit(timed_get, bombed_server + TABLE_PAGE)
        page_s, page_status = page.result()
        answers = [bomb.result() for bomb in bombs]
    assert page_status == 200
    assert page_s < ANSWER_WITHIN_S, f"the table page waited {page_s:.1f} s"
    for seconds, status in answers:
        assert status == 400 and seconds < ANSWER_WITHIN_S, (seconds, status)
    assert timed_get(bombed_server + TABLE_PAGE)[1] == 200, "the killed workers are replaced"


async def test_mcp_execute_sql_is_bounded_too(served_url: str) -> None:
    async with Client(served_url + "/-/mcp") as client:
        started = time.monotonic()
        bomb = await client.call_tool("execute_sql", {"database": "metabundle", "sql": PRINTF_BOMB})
        elapsed = time.monotonic() - started
        tokenizer = await client.call_tool(
            "execute_sql", {"database": "metabundle", "sql": TOKENIZER_CALLS[0]}
        )
        fine = await client.call_tool(
            "execute_sql", {"database": "metabundle", "sql": "SELECT count(*) AS n FROM ukb_field"}
        )
    assert bomb.is_error and "time limit" in bomb.content[0].text
    assert elapsed < ANSWER_WITHIN_S, f"answered after {elapsed:.1f} s"
    assert tokenizer.is_error and "not authorized" in tokenizer.content[0].text
    assert not fine.is_error and fine.structured_content["rows"][0]["n"] > 0
