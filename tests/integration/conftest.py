"""Fixtures of the integration tests: a small partial release."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.build import Build
from tests.support.cli import run_cli


@pytest.fixture(scope="session")
def dev_build(tmp_path_factory: pytest.TempPathFactory, mirror_url: str) -> Build:
    """A ``--profile dev`` release of dbGaP alone, without embeddings: partial in what
    it selected of dbGaP, and without the other four sources."""
    root = tmp_path_factory.mktemp("dev")
    result = run_cli(
        "build",
        *("--upstream", mirror_url, "--out", str(root / "out"), "--sources", "dbgap"),
        *("--profile", "dev", "--embeddings", "none"),
    )
    assert result.returncode == 0, result.stderr[-3000:]
    release = Path(result.stdout.strip().splitlines()[-1])
    return Build(root / "out", root / "out" / "cache", release, result.stdout, result.stderr)
