"""The shared mirror build: one real ``metabundle build`` over loopback for the session."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.cli import run_cli

BUILD_SOURCES = "idc"


@dataclass(frozen=True)
class Build:
    """A finished build: its output folder, cache and the release it wrote."""

    out: Path
    cache: Path
    release: Path
    stdout: str
    stderr: str


def build_release(out: Path, cache: Path, mirror_url: str, sources: str) -> Build:
    result = run_cli(
        "build",
        "--upstream",
        mirror_url,
        "--out",
        str(out),
        "--cache",
        str(cache),
        "--sources",
        sources,
    )
    assert result.returncode == 0, f"build failed:\n{result.stderr[-4000:]}"
    release = Path(result.stdout.strip().splitlines()[-1])
    return Build(out, cache, release, result.stdout, result.stderr)


@pytest.fixture(scope="session")
def mirror_build(tmp_path_factory: pytest.TempPathFactory, mirror_url: str) -> Build:
    """A release of every tested source, built once from the loopback mirror."""
    root = tmp_path_factory.mktemp("mirror-build")
    return build_release(root / "out", root / "out" / "cache", mirror_url, BUILD_SOURCES)
