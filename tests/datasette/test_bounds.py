"""One Datasette request is bounded: SQLite refuses huge values, a huge response is a
typed ``result_too_large``, and no route answers a 500 with Python text, whatever the
path, the JSON body or the integers in it (a hypothesis fuzz of the plugin's routes)."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from urllib.parse import quote

import pytest
from datasette.app import Datasette
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from metabundle.datasette_plugin.bounds import MAX_BODY_BYTES, MAX_RESPONSE_BYTES
from metabundle.search.errors import HTTP_STATUS, INVALID_REQUEST, RESULT_TOO_LARGE
from metabundle.search.tools import all_tools

pytestmark = pytest.mark.anyio

PYTHON_TEXT = ("Traceback", "RecursionError", "ValueError", "Exceeds the limit", 'File "')


def sql_url(sql: str) -> str:
    return f"/metabundle.json?sql={quote(sql)}&_shape=array"


def assert_answered(status: int, body: str, where: str) -> None:
    """Not a server error, and no Python text in the body."""
    assert status < 500, f"{where}: {status} {body[:300]}"
    for text in PYTHON_TEXT:
        assert text not in body, f"{where}: {body[:300]}"


@pytest.mark.parametrize("size", [1_000_000_000, 100_000_000, 1_000_000])
async def test_a_huge_value_fails_inside_sqlite(datasette: Datasette, size: int) -> None:
    response = await datasette.client.get(sql_url(f"SELECT zeroblob({size})"))
    assert response.status_code == 400
    assert "too big" in response.text and len(response.content) < 10_000


async def test_a_huge_response_is_result_too_large(datasette: Datasette) -> None:
    sql = (
        "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r WHERE i < 300) "
        "SELECT i, zeroblob(90000) AS b FROM r"
    )
    response = await datasette.client.get(sql_url(sql))
    assert response.status_code == HTTP_STATUS[RESULT_TOO_LARGE]
    assert response.json()["error"]["code"] == RESULT_TOO_LARGE
    assert f"{MAX_RESPONSE_BYTES:,}-byte cap" in response.json()["error"]["message"]


async def test_a_deeply_nested_body_is_invalid_request(datasette: Datasette) -> None:
    body = "[" * 100_000 + "]" * 100_000
    response = await datasette.client.post("/-/api/search_all", content=body.encode())
    assert response.status_code == 400
    assert response.json()["error"]["code"] == INVALID_REQUEST


async def test_integers_of_thousands_of_digits_are_invalid_request(datasette: Datasette) -> None:
    digits = "9" * 5000
    posted = await datasette.client.post(
        "/-/api/list_collections", content=f'{{"limit": {digits}}}'.encode()
    )
    got = await datasette.client.get(f"/-/api/list_collections?limit={digits}")
    for response in (posted, got):
        assert response.status_code == 400, response.text[:300]
        assert response.json()["error"]["code"] == INVALID_REQUEST


@pytest.mark.parametrize(
    "path",
    [
        "//etc/passwd",
        "/metabundle/search_doc/-/insert",
        "/metabundle/search_doc/-/upsert",
        "/metabundle/-/create",
        "/metabundle/search_doc/-/drop",
        "/-/api/..%2f..%2fetc%2fpasswd",
        "/%2e%2e/%2e%2e/etc/passwd",
    ],
)
async def test_odd_paths_get_no_server_error(datasette: Datasette, path: str) -> None:
    for method in ("GET", "POST"):
        response = await datasette.client.request(method, path, content=b"{}")
        assert_answered(response.status_code, response.text, f"{method} {path}")


TOOLS = [spec.name for spec in all_tools()]
JSON_LEAF = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**4000), max_value=10**4000),
    st.floats(allow_nan=False),
    st.text(max_size=50),
)
JSON_VALUE = st.recursive(
    JSON_LEAF,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner),
    max_leaves=20,
)
PATHS = st.one_of(
    st.sampled_from(
        ["/-/api/", "/-/search", "/-/search.json", "/metabundle/", "//", "/-/"]
    ).flatmap(lambda prefix: st.text(max_size=30).map(lambda tail: prefix + quote(tail, safe="/"))),
    st.sampled_from(TOOLS).map(lambda name: f"/-/api/{name}"),
)
BODIES = st.one_of(
    JSON_VALUE.map(json.dumps),
    st.integers(1, 3000).map(lambda depth: "[" * depth + "]" * depth),
    st.integers(1, 3000).map(lambda depth: '{"a":' * depth + "1" + "}" * depth),
    st.integers(4000, 6000).map(lambda digits: f'{{"limit": {"7" * digits}}}'),
    st.binary(max_size=40).map(lambda raw: raw.decode("latin-1")),
)
QUERIES = st.dictionaries(
    st.sampled_from(["query", "limit", "offset", "sources", "filters", "sql", "_shape", "x"]),
    st.one_of(st.text(max_size=20), st.integers(1, 6000).map(lambda digits: "9" * digits)),
    max_size=3,
)


@settings(
    max_examples=60,
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(path=PATHS, body=BODIES, query=QUERIES, method=st.sampled_from(["GET", "POST"]))
async def test_fuzzed_requests_to_the_plugin_routes_get_no_server_error(
    datasette: Datasette, path: str, body: str, query: dict[str, str], method: str
) -> None:
    response = await datasette.client.request(
        method, path, params=query, content=body.encode("utf-8", "surrogatepass")
    )
    where = f"{method} {path} {query} {body[:80]!r}"
    assert_answered(response.status_code, response.text, where)


TABLE = "/metabundle/ukb_field"
REFUSED_PARAMETERS = [  # (id, the parameter the message names, query)
    ("sort", "_sort", "_sort=nosuch"),
    ("sort-rowid", "_sort", "_sort=rowid"),  # the table has a primary key
    ("sort-desc", "_sort_desc", "_sort_desc=nosuch"),
    ("both-sorts", "_sort and _sort_desc", "_sort=title&_sort_desc=title"),
    ("in-malformed", "title__in", "title__in=" + quote("[1")),
    ("in-too-deep", "title__in", "title__in=" + quote("[" * 5000)),
    ("in-huge-integer", "title__in", "title__in=" + quote("[99999999999999999999999]")),
    ("notin-object", "title__notin", "title__notin=" + quote('[{"a": 1}]')),
    ("through-text", "_through", "_through=x"),
    ("through-list", "_through", "_through=" + quote("[1]")),
    ("through-no-key", "_through", "_through=" + quote('{"table": "ukb_field"}')),
    (
        "through-no-foreign-key",
        "_through",
        "_through=" + quote('{"table": "nosuch", "column": "title", "value": 1}'),
    ),
]


@pytest.mark.parametrize("suffix", ["", ".json"], ids=["html", "json"])
@pytest.mark.parametrize(
    ("named", "query"),
    [case[1:] for case in REFUSED_PARAMETERS],
    ids=[case[0] for case in REFUSED_PARAMETERS],
)
async def test_a_table_parameter_datasette_cannot_use_is_invalid_request(
    datasette: Datasette, named: str, query: str, suffix: str
) -> None:
    response = await datasette.client.get(f"{TABLE}{suffix}?{query}")
    assert response.status_code == 400, response.text[:300]
    if suffix:
        error = response.json()["error"]
        assert error["code"] == INVALID_REQUEST
        message = error["message"]
    else:
        assert f"<title>{INVALID_REQUEST}</title>" in response.text
        message = response.text
    assert f"{named} " in message, message[:300]


@pytest.mark.parametrize(
    "query",
    [
        "_sort=title",
        "_sort_desc=title",
        "title__in=Sex,Age",
        "title__in=" + quote('["Sex", 31, 1.5, null, true]'),
        "title__notin=" + quote('["Sex"]'),
    ],
)
async def test_the_same_parameters_well_formed_still_answer(
    datasette: Datasette, query: str
) -> None:
    response = await datasette.client.get(f"{TABLE}.json?{query}")
    assert response.status_code == 200, response.text[:300]


async def test_a_body_past_the_cap_is_refused_before_it_is_read(datasette: Datasette) -> None:
    body = json.dumps({"query": "x" * (3 * MAX_BODY_BYTES)}).encode()

    async def streamed() -> AsyncIterator[bytes]:  # no Content-Length: counted as it comes
        for start in range(0, len(body), 65536):
            yield body[start : start + 65536]

    started = time.monotonic()
    declared = await datasette.client.post("/-/api/search_all", content=body)
    chunked = await datasette.client.post("/-/api/search_all", content=streamed())
    to_mcp = await datasette.client.post("/-/mcp", content=body)
    assert time.monotonic() - started < 5
    for response in (declared, chunked, to_mcp):
        assert response.status_code == 413, response.text[:300]
        assert response.json()["error"] == {
            "code": INVALID_REQUEST,
            "message": f"The request body is over the {MAX_BODY_BYTES:,}-byte cap.",
        }


async def test_a_body_within_the_cap_still_answers(datasette: Datasette) -> None:
    body = json.dumps({"query": "waist", "limit": 2}) + " " * (MAX_BODY_BYTES // 2)
    response = await datasette.client.post("/-/api/search_all", content=body.encode())
    assert response.status_code == 200, response.text[:300]
    assert response.json()["results"]
