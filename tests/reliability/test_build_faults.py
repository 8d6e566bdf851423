"""``metabundle build`` end to end over a misbehaving mirror: transient faults are
retried and the build succeeds; a permanent failure, a malformed file and a changed
upstream schema each fail with one sentence naming the URL, or the file and line, or
the column; and after every failure ``current`` is where it was and no partial
release folder remains."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.reliability.conftest import BUILD_FAULTS, OMOP_EXPORT, FlakyBuild, build_omop
from tests.support.cli import run_cli
from tests.support.faults import FaultPlan
from tests.support.mirrors import edit_lines, truncate_mid_line
from tests.support.servers import faulty_handler, serve_directory


def release_state(out: Path) -> tuple[Path, list[str]]:
    """Where ``current`` points and every entry of ``releases/`` (temp folders too)."""
    return (out / "current").resolve(), sorted(p.name for p in (out / "releases").iterdir())


def last_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    return lines[-1] if lines else ""


def test_a_build_over_a_flaky_mirror_retries_and_succeeds(flaky_build: FlakyBuild) -> None:
    plan, build = flaky_build.plan, flaky_build.build
    assert plan.pending() == {}, "some planned faults were never met"
    for path, faults in BUILD_FAULTS.items():
        outcomes = plan.requests(path)
        assert outcomes[: len(faults)] == faults, (path, outcomes)
        assert "served" in outcomes, (path, outcomes)
    retries = [line for line in build.stderr.splitlines() if "retrying" in line]
    assert len(retries) >= sum(len(faults) for faults in BUILD_FAULTS.values()), retries
    assert not list((build.out / "releases").glob(".tmp-*"))
    verified = run_cli("verify", str(build.release))
    assert verified.returncode == 0, verified.stderr


@dataclass(frozen=True)
class Failed:
    """A build that failed: its result, the URL that failed, and the state before."""

    result: subprocess.CompletedProcess[str]
    url: str
    requests: list[str]
    before: tuple[Path, list[str]]


@pytest.fixture(scope="module")
def permanent_failure(flaky_build: FlakyBuild, tmp_path_factory: pytest.TempPathFactory) -> Failed:
    """A build into the small build's folder whose mirror answers one file with 503 on
    every attempt."""
    out = flaky_build.build.out
    before = release_state(out)
    path = f"/{OMOP_EXPORT}/VOCABULARY.csv"
    plan = FaultPlan({path: ["always:503"]})
    with serve_directory(flaky_build.mirror, faulty_handler(plan)) as url:
        result = build_omop(url, out, tmp_path_factory.mktemp("cache"))
    return Failed(result, f"{url}{path}", plan.requests(path), before)


def test_a_permanent_failure_names_the_url_and_keeps_current(
    flaky_build: FlakyBuild, permanent_failure: Failed
) -> None:
    assert permanent_failure.result.returncode == 1
    message = last_line(permanent_failure.result.stderr)
    assert f"Could not download {permanent_failure.url}: HTTP 503" in message, message
    assert message.count(". ") == 0 and message.endswith(".")
    assert len(permanent_failure.requests) == 5  # every attempt, then one sentence
    assert release_state(flaky_build.build.out) == permanent_failure.before


def test_a_failed_build_prints_no_stack_trace(permanent_failure: Failed) -> None:
    assert "Traceback" not in permanent_failure.result.stderr
    assert "Stack Trace" not in permanent_failure.result.stderr


@pytest.mark.parametrize(
    ("damage", "expected"),
    [
        ("truncated", ("CONCEPT.csv, line ", "cut short")),
        ("renamed column", ("CONCEPT.csv, line 1", "no column CONCEPT_NAME")),
        ("missing column", ("CONCEPT.csv, line 1", "no column DOMAIN_ID")),
    ],
)
def test_a_malformed_or_changed_file_names_the_place_and_keeps_current(
    flaky_build: FlakyBuild, tmp_path: Path, damage: str, expected: tuple[str, str]
) -> None:
    mirror = tmp_path / "mirror"
    shutil.copytree(flaky_build.mirror, mirror)
    concept = mirror / OMOP_EXPORT / "CONCEPT.csv"
    if damage == "truncated":
        truncate_mid_line(concept)
    elif damage == "renamed column":
        edit_lines(concept, lambda lines: [lines[0].replace("CONCEPT_NAME", "NAME"), *lines[1:]])
    else:
        edit_lines(concept, lambda lines: [drop_column(line, 2) for line in lines])
    out = flaky_build.build.out
    before = release_state(out)
    with serve_directory(mirror) as url:
        result = build_omop(url, out, tmp_path / "cache")
    assert result.returncode == 1
    message = last_line(result.stderr)
    assert all(part in message for part in expected), message
    assert f"{url}/{OMOP_EXPORT}/CONCEPT.csv" in message
    assert release_state(out) == before


def drop_column(line: str, index: int) -> str:
    cells = line.rstrip("\n").split("\t")
    return "\t".join(cells[:index] + cells[index + 1 :]) + "\n"
