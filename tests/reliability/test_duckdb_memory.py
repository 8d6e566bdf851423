"""A serving process's DuckDB memory is set by ``METABUNDLE_DUCKDB_MEMORY_MB``, and a bad
value is one sentence naming the variable; what DuckDB holds between tool calls is let
go down to ``METABUNDLE_DUCKDB_KEPT_MB`` once no call is running, and answers stay the
same."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from metabundle.errors import ConfigError
from metabundle.search.release import TABLE_BLOCKS, Release
from metabundle.search.tools import call_tool

OPEN_AND_ANSWER = """
import json, sys
from metabundle.search.release import TABLE_BLOCKS, Release
from metabundle.search.tools import call_tool
from metabundle.search.tools import call_tool
release = Release.open(sys.argv[1])
limit = release.query("SELECT current_setting('memory_limit')")[0][0]
answer = call_tool(release, "search_all", {"query": "blood pressure", "method": "keyword"})
print(json.dumps({"limit": limit, "ids": [r["id"] for r in answer["results"]]}))
"""


def _serve(release: Release, memory_mb: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k != "METABUNDLE_DUCKDB_MEMORY_MB"}
    if memory_mb is not None:
        env["METABUNDLE_DUCKDB_MEMORY_MB"] = memory_mb
    done = subprocess.run(
        [sys.executable, "-c", OPEN_AND_ANSWER, str(release.path)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def test_the_variable_sets_duckdbs_memory_and_answers_stay_the_same(release: Release) -> None:
    default, capped = (json.loads(_serve(release, value)) for value in (None, "100"))
    assert default["limit"] == "1.9 GiB"  # 2048 MB
    assert capped["limit"] == "95.3 MiB"  # 100 MB
    assert capped["ids"] and capped["ids"] == default["ids"]


def test_a_bad_value_names_the_variable(release: Release, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("METABUNDLE_DUCKDB_MEMORY_MB", "10")
    with pytest.raises(ConfigError, match=r"^METABUNDLE_DUCKDB_MEMORY_MB '10' is not valid"):
        Release.open(release.path)


@pytest.fixture(scope="module")
def own_release(release: Release, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Release]:
    """The session release opened alone: DuckDB shares one database, and its memory,
    between the connections of a process to one file, so the release is linked (not
    copied) into a folder of its own."""
    folder = tmp_path_factory.mktemp("own-release") / release.path.name
    shutil.copytree(release.path, folder, copy_function=os.link)
    with Release.open(folder) as opened:
        yield opened


# any tool call; a query that reads every document's text, several MB of table blocks;
# and lookups by key spread over search_doc's primary-key index, several MB of its nodes
GROUND = {"query": "systolic blood pressure", "domain": "Measurement", "limit": 10}
READ_EVERY_DOCUMENT = "SELECT count(*), max(length(title)), max(length(body)) FROM search_doc"
SPREAD_KEYS = "SELECT list(doc_id ORDER BY docno) FROM search_doc WHERE docno % 100 = 0"
LOOK_UP_BY_KEY = "SELECT count(*) FROM search_doc WHERE list_contains(?::VARCHAR[], doc_id)"


def _limit(release: Release) -> str:
    return release.query("SELECT current_setting('memory_limit')")[0][0]


def _blocks(release: Release) -> float:
    return release.duckdb_held_mb().get(TABLE_BLOCKS, 0.0)


def _nodes(release: Release) -> float:
    held = release.duckdb_held_mb()
    return sum(held.values()) - held.get(TABLE_BLOCKS, 0.0)


def _look_up_spread_keys(release: Release) -> None:
    with release.tool_call():
        (keys,) = release.query(SPREAD_KEYS)[0]
        assert release.query(LOOK_UP_BY_KEY, [keys])[0][0] == len(keys)


def test_table_blocks_over_the_kept_budget_are_let_go_after_a_call(
    own_release: Release, monkeypatch: pytest.MonkeyPatch
) -> None:
    limit = _limit(own_release)
    monkeypatch.setenv("METABUNDLE_DUCKDB_KEPT_MB", "0")  # never
    first = call_tool(own_release, "concept_ground", GROUND)
    assert first["results"]
    with own_release.tool_call():
        own_release.query(READ_EVERY_DOCUMENT)
    assert _blocks(own_release) > 2 and own_release.trim_duckdb_memory() is None
    monkeypatch.setenv("METABUNDLE_DUCKDB_KEPT_MB", "1")
    again = call_tool(own_release, "concept_ground", GROUND)
    assert _blocks(own_release) <= 1  # the call ended by letting them go
    assert again == first
    assert _limit(own_release) == limit  # queries keep their whole working memory
    monkeypatch.setenv("METABUNDLE_DUCKDB_KEPT_MB", "100000")  # far under
    with own_release.tool_call():
        own_release.query(READ_EVERY_DOCUMENT)
    assert _blocks(own_release) > 2 and own_release.trim_duckdb_memory() is None


def test_index_nodes_over_the_kept_budget_are_let_go_by_a_new_connection(
    own_release: Release, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("METABUNDLE_DUCKDB_KEPT_MB", "0")
    first = call_tool(own_release, "search_all", {"query": "blood pressure", "method": "hybrid"})
    assert first["results"]
    _look_up_spread_keys(own_release)
    assert _nodes(own_release) > 2 and own_release.trim_duckdb_memory() is None
    monkeypatch.setenv("METABUNDLE_DUCKDB_KEPT_MB", "1")
    assert own_release.trim_duckdb_memory() == "connection"
    assert _nodes(own_release) <= 1
    _look_up_spread_keys(own_release)  # the call ends by opening the connection again
    assert _nodes(own_release) <= 1
    again = call_tool(own_release, "search_all", {"query": "blood pressure", "method": "hybrid"})
    assert again == first


def test_blocks_are_let_go_only_when_the_last_running_call_ends(
    own_release: Release, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("METABUNDLE_DUCKDB_KEPT_MB", "1")
    with own_release.tool_call():  # a request still running
        with own_release.tool_call():  # another one, which ends first
            own_release.query(READ_EVERY_DOCUMENT)
        assert _blocks(own_release) > 2
    assert _blocks(own_release) <= 1


def test_concurrent_calls_answer_the_same_while_memory_is_let_go(
    own_release: Release, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Calls from several threads, with a budget every call passes: DuckDB's memory is
    let go (the connection opened again) between them while the load goes on, never
    under a running call."""
    calls = [
        ("concept_ground", GROUND),
        ("search_all", {"query": "blood pressure", "method": "hybrid"}),
        ("search_aou_catalog", {"query": "smoking", "method": "keyword"}),
        ("search_ukb_fields", {"query": "body mass index", "method": "hybrid"}),
    ]
    monkeypatch.setenv("METABUNDLE_DUCKDB_KEPT_MB", "0")
    expected = [call_tool(own_release, name, arguments) for name, arguments in calls]
    assert all("error" not in answer for answer in expected)
    monkeypatch.setenv("METABUNDLE_DUCKDB_KEPT_MB", "1")
    trims: list[str | None] = []
    trim = Release.trim_duckdb_memory

    def counted(self: Release) -> str | None:
        trims.append(trim(self))
        return trims[-1]

    monkeypatch.setattr(Release, "trim_duckdb_memory", counted)

    def look_up_and_call(i: int) -> dict[str, Any]:
        if i % 4 == 0:
            _look_up_spread_keys(own_release)
        return call_tool(own_release, *calls[i % len(calls)])

    with ThreadPoolExecutor(max_workers=4) as pool:
        answers = list(pool.map(look_up_and_call, range(40)))
    assert answers == [expected[i % len(calls)] for i in range(40)]
    assert trims.count("connection") > 1  # let go during the load, not only after it
