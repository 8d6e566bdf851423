"""Shared fixtures: the offline mirror served over loopback HTTP."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.servers import serve_directory

REPO = Path(__file__).resolve().parents[1]


def mirror_dir() -> Path:
    """``METABUNDLE_UPSTREAM_DIR`` or ``../shared/upstream`` next to the checkout."""
    value = os.environ.get("METABUNDLE_UPSTREAM_DIR")
    path = Path(value) if value else REPO.parent / "shared" / "upstream"
    return path.resolve()


@pytest.fixture(scope="session")
def upstream_dir() -> Path:
    path = mirror_dir()
    if not (path / "README.md").exists():
        pytest.fail(f"the upstream mirror is missing at {path}; set METABUNDLE_UPSTREAM_DIR")
    return path


@pytest.fixture(scope="session")
def mirror_url(upstream_dir: Path) -> Iterator[str]:
    """Base URL of the mirror served on 127.0.0.1 for the whole session."""
    with serve_directory(upstream_dir) as url:
        yield url
