"""``metabundle mcp`` lists its tools without loading the search core.

The tool catalogue is precomputed into the package (``metabundle/mcp/tools.json``) and
must equal what the registry generates; a fresh process serving a release answers
``tools/list`` (and ``initialize``) before DuckDB, NumPy, PyArrow or the services are
imported, and loads them on the first tool call. The time this saves is measured by
``python -m benchmarks.tokens`` against the SDK's own import.
"""

from __future__ import annotations

import json
import shutil
from importlib import resources
from pathlib import Path

import pytest
from mcp import Client

from metabundle.mcp.catalogue import CATALOGUE_FILE, generate, render
from metabundle.mcp.handle import ReleaseHandle
from metabundle.mcp.server import build_server
from metabundle.search.errors import RELEASE_DAMAGED
from tests.support.cli import run_python_json

HEAVY_MODULES = (
    "duckdb",
    "numpy",
    "pyarrow",
    "metabundle.search.release",
    "metabundle.search.tools",
    "metabundle.search.services",
)

PROBE = f"""
import json, sys
import anyio
from mcp import Client
from metabundle.mcp.handle import ReleaseHandle
from metabundle.mcp.server import build_server

HEAVY = {HEAVY_MODULES!r}


async def main():
    handle = ReleaseHandle(sys.argv[1])
    async with Client(build_server(handle)) as client:
        tools = (await client.list_tools()).tools
        before = sorted(m for m in HEAVY if m in sys.modules)
        result = await client.call_tool("get_release_info", {{}})
        after = sorted(m for m in HEAVY if m in sys.modules)
    handle.close()
    print(json.dumps({{"tools": len(tools), "before": before, "after": after,
                      "error": result.is_error}}))

anyio.run(main)
"""


def test_the_shipped_catalogue_is_the_registry() -> None:
    shipped = resources.files("metabundle.mcp").joinpath(CATALOGUE_FILE).read_text("utf-8")
    assert shipped == render(generate()), (
        "metabundle/mcp/tools.json is stale: run python -m metabundle.mcp.catalogue"
    )


def run_probe(script: str, release_path: Path) -> dict:
    """Run ``script`` in a fresh interpreter on the release; its JSON report."""
    return run_python_json(script, str(release_path), timeout=300)


def test_tools_are_listed_before_the_search_core_is_imported(release_path: Path) -> None:
    report = run_probe(PROBE, release_path)
    assert report["tools"] == len(generate()) and report["error"] is False
    assert report["before"] == []
    assert set(report["after"]) >= {"duckdb", "numpy", "metabundle.search.tools"}


CITATION_LIBRARIES = ("bibtexparser", "rdflib")

SEARCH_THEN_CITE = f"""
import json, sys
from metabundle.search.release import Release
from metabundle.search.tools import call_tool

LIBRARIES = {CITATION_LIBRARIES!r}
release = Release.open(sys.argv[1])
found = call_tool(release, "search_all", {{"query": "lung CT", "method": "hybrid"}})
searched = sorted(m for m in LIBRARIES if m in sys.modules)
cited = [
    call_tool(release, "get_citations", {{"collection_id": "nlst", "format": f}})
    for f in ("bibtex", "turtle")
]
print(json.dumps({{"results": len(found["results"]), "searched": searched,
                  "cited": sorted(m for m in LIBRARIES if m in sys.modules),
                  "documents": [bool(c.get("document")) for c in cited]}}))
"""


def test_a_search_process_loads_the_citation_formats_only_when_asked(
    release_path: Path,
) -> None:
    """BibTeX and Turtle writers (60 ms of imports) load with the format that needs them."""
    report = run_probe(SEARCH_THEN_CITE, release_path)
    assert report["results"] > 0 and report["searched"] == []
    assert report["cited"] == sorted(CITATION_LIBRARIES) and report["documents"] == [True, True]


@pytest.mark.anyio
async def test_a_release_that_cannot_open_answers_release_damaged(
    release_path: Path, tmp_path: Path
) -> None:
    """Only the manifest is read at start: a release whose files are gone still lists
    its tools, and each call answers the typed ``release_damaged`` error."""
    shutil.copy(release_path / "manifest.json", tmp_path / "manifest.json")
    handle = ReleaseHandle(tmp_path)
    async with Client(build_server(handle)) as client:
        listed = (await client.list_tools()).tools
        result = await client.call_tool("get_release_info", {})
    assert listed
    assert result.is_error
    error = json.loads(result.content[0].text)["error"]
    assert error["code"] == RELEASE_DAMAGED and "\n" not in error["message"]
