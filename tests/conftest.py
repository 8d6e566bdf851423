"""Shared fixtures: the offline mirror served over loopback HTTP, and one real build
of every source from it for the whole session.

The served mirror is ``../shared/upstream`` plus the Imaging Data Commons files the
mirror lacks (the specialized indices and a clinical table), GENERATED from the
``idc-index-data`` package's own schema JSON (``tests.support.idc_generated``), with
:data:`OMITTED_IDC_INDEX` left out so every build also shows a missing index."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from datasette.app import Datasette

from metabundle.search.release import Release
from tests.support.build import Build, build_release, share_embedding_cache
from tests.support.datasette_instance import running_datasette
from tests.support.mirrors import ServedMirror, served_mirror_at
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
def served_mirror(upstream_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> ServedMirror:
    """The session's mirror folder (:func:`tests.support.mirrors.served_mirror_at`)."""
    return served_mirror_at(upstream_dir, tmp_path_factory.mktemp("mirror"))


@pytest.fixture(scope="session")
def mirror_url(served_mirror: ServedMirror) -> Iterator[str]:
    """Base URL of the mirror served on 127.0.0.1 for the whole session."""
    with serve_directory(served_mirror.root) as url:
        yield url


@pytest.fixture(scope="session")
def mirror_build(tmp_path_factory: pytest.TempPathFactory, mirror_url: str) -> Build:
    """A release of every source (dbGaP: ``SESSION_STUDIES``), built once from the
    loopback mirror by the real ``metabundle build``."""
    reuse = os.environ.get("METABUNDLE_TEST_BUILD")
    if reuse:  # a developer's earlier mirror build, to iterate quickly; CI never sets it
        out = Path(reuse).resolve()
        return Build(out, out / "cache", (out / "current").resolve(), "", "")
    root = tmp_path_factory.mktemp("mirror-build")
    return build_release(root / "out", root / "out" / "cache", mirror_url)


@pytest.fixture(scope="session")
def release(mirror_build: Build) -> Iterator[Release]:
    """The session build opened for searching."""
    with Release.open(mirror_build.release) as opened:
        yield opened


@pytest.fixture(scope="session")
def complete_build(
    tmp_path_factory: pytest.TempPathFactory, mirror_url: str, mirror_build: Build
) -> Build:
    """The README's build over the whole mirror (the default profile: every dbGaP
    study), embedding with wordllama and reusing the shared build's embeddings."""
    reuse = os.environ.get("METABUNDLE_TEST_COMPLETE_BUILD")
    if reuse:  # a developer's earlier complete build; CI never sets it
        out = Path(reuse).resolve()
        return Build(out, out / "cache", (out / "current").resolve(), "", "")
    root = tmp_path_factory.mktemp("complete-build")
    share_embedding_cache(mirror_build, root / "cache")
    return build_release(root / "out", root / "cache", mirror_url, dbgap_studies=None)


@pytest.fixture(scope="session")
def complete_release(complete_build: Build) -> Iterator[Release]:
    """The complete build opened for searching."""
    with Release.open(complete_build.release) as opened:
        yield opened


@pytest.fixture(scope="module")
async def datasette(release_path: Path) -> AsyncIterator[Datasette]:
    """The instance ``metabundle datasette`` serves for ``release_path`` (each test
    folder's own), started in-process."""
    async with running_datasette(release_path) as instance:
        yield instance
