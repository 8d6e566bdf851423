"""Fixtures of the operations tests: small real builds of the OMOP source from a
writable copy of the mirror (served with Range support), built three times into one
output folder and cache: cold, unchanged, and after an upstream edit."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.build import Build, build_release
from tests.support.cli import run_cli
from tests.support.static_server import Request, StaticServer, serve_static

SOURCES = "omop"
EDITED_EXPORT = "omop/eunomia_gibleed/CONCEPT.csv"
RENAMED_CONCEPT = 192671  # Gastrointestinal hemorrhage
REMOVED_CONCEPT = 35208414  # only in the GiBleed export
ADDED_CONCEPT = 2000000001  # a made-up id, in no export


@dataclass(frozen=True)
class BuildRun:
    """A finished build and the build report it wrote."""

    build: Build
    report: dict[str, Any]
    requests: list[Request]  # what the mirror server received during this build
    releases: list[str]  # the release folders right after this build

    def step(self, name: str) -> dict[str, Any]:
        return self.report["steps"][name]


@dataclass(frozen=True)
class OmopBuilds:
    """Three builds of one output folder: cold, unchanged inputs, one edited file."""

    mirror: Path
    cold: BuildRun
    unchanged: BuildRun
    changed: BuildRun


def writable_copy(source: Path, destination: Path) -> None:
    """Copy a read-only mirror folder so that tests may edit the copy."""
    shutil.copytree(source, destination, copy_function=shutil.copyfile)
    for path in [destination, *destination.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)


def edit_concepts(path: Path) -> None:
    """Rename one concept, drop one and add one, as an upstream vocabulary update would;
    the file's mtime moves forward so that revalidation sees the change."""
    lines = path.read_text().splitlines(keepends=True)
    kept = []
    for line in lines:
        concept_id = line.split("\t", 1)[0]
        if concept_id == str(REMOVED_CONCEPT):
            continue
        if concept_id == str(RENAMED_CONCEPT):
            fields = line.split("\t")
            fields[1] = "Gastrointestinal hemorrhage (renamed upstream)"
            line = "\t".join(fields)
            added = line.split("\t")
            added[0], added[1], added[6] = str(ADDED_CONCEPT), "Metabundle test concept", "MB1"
            kept.append("\t".join(added))
        kept.append(line)
    path.write_text("".join(kept))
    later = time.time() + 10
    os.utime(path, (later, later))


def read_report(build: Build) -> dict[str, Any]:
    return json.loads((build.out / "work" / "build_report.json").read_text())


def _run(out: Path, cache: Path, server: StaticServer) -> BuildRun:
    before = len(server.requests)
    build = build_release(out, cache, server.url, SOURCES)
    releases = sorted(p.name for p in (out / "releases").iterdir() if p.is_dir())
    return BuildRun(build, read_report(build), server.requests[before:], releases)


@pytest.fixture(scope="session")
def ops_mirror(
    tmp_path_factory: pytest.TempPathFactory, upstream_dir: Path
) -> Iterator[tuple[Path, StaticServer]]:
    """A writable copy of the OMOP mirror, served on loopback with Range support."""
    root = tmp_path_factory.mktemp("ops-mirror")
    writable_copy(upstream_dir / "omop", root / "omop")
    with serve_static(root) as server:
        yield root, server


@pytest.fixture(scope="session")
def omop_builds(
    tmp_path_factory: pytest.TempPathFactory, ops_mirror: tuple[Path, StaticServer]
) -> OmopBuilds:
    mirror, server = ops_mirror
    root = tmp_path_factory.mktemp("ops-builds")
    out, cache = root / "out", root / "cache"
    cold = _run(out, cache, server)
    unchanged = _run(out, cache, server)
    edit_concepts(mirror / EDITED_EXPORT)
    changed = _run(out, cache, server)
    return OmopBuilds(mirror, cold, unchanged, changed)


def error_line(stderr: str) -> str:
    """The one ``metabundle: ...`` sentence of a failed command (progress lines aside)."""
    errors = [line for line in stderr.splitlines() if line.startswith("metabundle: ")]
    assert len(errors) == 1, stderr
    assert stderr.strip().splitlines()[-1] == errors[0] and "Traceback" not in stderr
    return errors[0]


def run_in(
    cwd: Path, *args: str, timeout: float = 600, **env: str
) -> subprocess.CompletedProcess[str]:
    """``metabundle ARGS`` run from ``cwd`` (so that ``./build/current`` is absent)."""
    return run_cli(*args, timeout=timeout, cwd=cwd, **env)
