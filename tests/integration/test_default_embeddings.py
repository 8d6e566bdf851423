"""A release built with the default embedding provider (minilm) answers semantic
queries offline: the build and the query embedding run from installed packages, and the
query runs in an empty network namespace."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from tests.support.build import Build, build_release
from tests.support.cli import clean_env, metabundle_command


def no_network_prefix() -> list[str]:
    """``unshare -n`` (an empty network namespace) where this machine allows it."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return []
    probe = subprocess.run([unshare, "-n", "true"], capture_output=True, check=False)
    return [unshare, "-n"] if probe.returncode == 0 else []


@pytest.fixture(scope="module")
def minilm_build(tmp_path_factory: pytest.TempPathFactory, mirror_url: str) -> Build:
    """OMOP alone (about 4,000 concepts), embedded by the default provider."""
    root = tmp_path_factory.mktemp("minilm")
    return build_release(root / "out", root / "cache", mirror_url, "omop", embeddings=None)


def test_the_default_provider_is_recorded(minilm_build: Build) -> None:
    manifest = json.loads((minilm_build.release / "manifest.json").read_text())
    assert manifest["search"]["embedding_provider"] == "minilm"
    assert manifest["search"]["embedding_model"].startswith("sentence-transformers/all-MiniLM")
    assert manifest["search"]["embedding_dimension"] == 384


def test_semantic_search_runs_without_a_network(minilm_build: Build) -> None:
    prefix = no_network_prefix()
    if not prefix:
        pytest.skip("this machine cannot create an empty network namespace (unshare -n)")
    command = [
        *prefix, *metabundle_command(), "search", "bleeding in the stomach or bowel",
        "--method", "semantic", "--json", "--release", str(minilm_build.release),
    ]  # fmt: skip
    result = subprocess.run(
        command, capture_output=True, text=True, env=clean_env(), timeout=300, check=False
    )
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    assert payload["retrieval"]["embedding_provider"] == "minilm"
    titles = [item["title"].lower() for item in payload["results"][:5]]
    assert any("hemorrhage" in title or "bleeding" in title for title in titles), titles
