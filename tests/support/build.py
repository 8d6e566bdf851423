"""Real ``metabundle build`` runs over the loopback mirror, shared by the test suite."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from tests.support.cli import run_cli

ALL_SOURCES = "dbgap,ukb,aou,omop,idc"
SESSION_STUDIES = ("phs000001", "phs000160", "phs000286", "phs000424", "phs001252", "phs001985")
"""The dbGaP studies of the shared build: the ``dev`` profile's five real studies plus
the synthetic Harmonization Test Study 1, whose variable reports hold the numeric
statistics. The evaluation sets' figures are measured on this corpus; the complete
mirror has its own session build (:data:`COMPLETE`)."""
# The default provider (minilm) is compute-bound on CI's two cores (about 100 short
# texts/s); the shared build embeds with wordllama, whose weights also ship in its
# wheel. minilm is tested on its own and by an Imaging Data Commons-only build.
TEST_EMBEDDINGS = "wordllama"


@dataclass(frozen=True)
class Build:
    """A finished build: its output folder, cache and the release it wrote."""

    out: Path
    cache: Path
    release: Path
    stdout: str
    stderr: str


def build_release(
    out: Path,
    cache: Path,
    mirror_url: str,
    sources: str = ALL_SOURCES,
    *,
    embeddings: str | None = TEST_EMBEDDINGS,
    dbgap_studies: tuple[str, ...] | None = SESSION_STUDIES,
) -> Build:
    """Run the real console script; fail the test with its stderr when it fails.
    ``embeddings=None`` keeps the default provider; ``dbgap_studies=None`` builds every
    study (the default profile)."""
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
        *(("--embeddings", embeddings) if embeddings else ()),
        *(("--dbgap-studies", ",".join(dbgap_studies)) if dbgap_studies else ()),
    )
    assert result.returncode == 0, f"build failed:\n{result.stderr[-4000:]}"
    release = Path(result.stdout.strip().splitlines()[-1])
    return Build(out, cache, release, result.stdout, result.stderr)


def step_lines(build: Build, step: str) -> list[str]:
    """The text of each progress line ``build`` printed under ``step`` (the line's time
    and step column left off)."""
    marker = f"] {step:<16} "
    return [line.split(marker, 1)[1] for line in build.stderr.splitlines() if marker in line]


def share_embedding_cache(source: Build, cache: Path) -> None:
    """Seed a new cache with an earlier build's content-addressed embeddings."""
    shutil.copytree(source.cache / "embeddings", cache / "embeddings", dirs_exist_ok=True)
