"""A serving process's DuckDB memory is set by ``METABUNDLE_DUCKDB_MEMORY_MB``, and a bad
value is one sentence naming the variable."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from metabundle.errors import ConfigError
from metabundle.search.release import Release

OPEN_AND_ANSWER = """
import json, sys
from metabundle.search.release import Release
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
