"""The serving side imports no build code: the search core, the MCP server and the
Datasette plugin, answering every tool's representative call, load nothing of the
fetch, parse and Dagster side (``docs/architecture.md``, "Layers")."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from metabundle.schemas.sources import DESCRIPTORS
from metabundle.search.examples import EXAMPLE_CALLS
from metabundle.sources.registry import SOURCES
from tests.support.build import Build

BUILD_MODULES = (
    "metabundle.sources",
    "metabundle.orchestration.assets",
    "metabundle.orchestration",
    "metabundle.config",
    "metabundle.staging",
    "metabundle.release.writer",
    "dagster",
    "polars",
)
HTTP_CLIENT = "httpx"  # the build's download layer; Datasette itself imports it
CORE = "import metabundle.mcp.server"
DATASETTE = "import metabundle.datasette_plugin, metabundle.datasette_plugin.serve"
SERVING = """
import json, sys
from metabundle.search.release import Release
from metabundle.search.tools import call_tool
{imports}
with Release.open(sys.argv[1]) as release:
    for tool, arguments in json.loads(sys.argv[2]).items():
        call_tool(release, tool, arguments)
print(json.dumps(sorted(sys.modules)))
"""


def modules_loaded(release: Path, imports: str, forbidden: tuple[str, ...]) -> list[str]:
    """The ``forbidden`` modules a serving process holds after ``imports`` and every
    tool's example call."""
    script = SERVING.format(imports=imports)
    result = subprocess.run(
        [sys.executable, "-c", script, str(release), json.dumps(EXAMPLE_CALLS)],
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    modules = json.loads(result.stdout.strip().splitlines()[-1])
    return [m for m in modules if any(m == b or m.startswith(f"{b}.") for b in forbidden)]


def test_the_search_core_and_the_mcp_server_import_no_build_code(mirror_build: Build) -> None:
    assert modules_loaded(mirror_build.release, CORE, (*BUILD_MODULES, HTTP_CLIENT)) == []


def test_the_datasette_plugin_imports_no_build_code(mirror_build: Build) -> None:
    assert modules_loaded(mirror_build.release, DATASETTE, BUILD_MODULES) == []


def test_the_rule_catches_a_build_import(mirror_build: Build) -> None:
    imports = f"{CORE}\nimport metabundle.sources.registry"
    loaded = modules_loaded(mirror_build.release, imports, (*BUILD_MODULES, HTTP_CLIENT))
    assert {"metabundle.sources.registry", "metabundle.config"} <= set(loaded)


def test_the_build_and_the_readers_describe_the_same_sources() -> None:
    assert tuple(DESCRIPTORS) == tuple(SOURCES)
    for name, spec in SOURCES.items():
        assert spec.descriptor is DESCRIPTORS[name]
