"""A release is never published half-built or wrong: a build killed (SIGKILL) while it
writes the release leaves ``current`` on the previous, intact release and the next build
removes the stale temporary folder; ``verify`` catches a changed byte in every kind of
file a release holds."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from metabundle.errors import ReleaseError
from metabundle.release.digest_record import digest_record_path
from metabundle.release.verify import verify_release
from metabundle.release.writer import TMP_PREFIX
from tests.reliability.conftest import FAST_BACKOFF, FlakyBuild
from tests.support.build import TEST_EMBEDDINGS
from tests.support.cli import clean_env, metabundle_command, run_cli
from tests.support.servers import serve_directory

KILL_TIMEOUT_S = 300


def copy_build(flaky_build: FlakyBuild, target: Path) -> Path:
    """A copy of the small build's output folder (releases, ``current``, work pointers)."""
    out = target / "out"
    shutil.copytree(
        flaky_build.build.out, out, symlinks=True, ignore=shutil.ignore_patterns("cache")
    )
    return out


def build_args(url: str, out: Path, cache: Path, version: str) -> list[str]:
    return [
        "build",
        *("--upstream", url, "--out", str(out), "--cache", str(cache)),
        *("--sources", "omop", "--embeddings", TEST_EMBEDDINGS, "--release-version", version),
    ]


def kill_while_writing(args: list[str], releases: Path) -> Path:
    """Start ``metabundle ARGS``; SIGKILL it (and its process group) once its temporary
    release folder has files in it; the temporary folder it left."""
    process = subprocess.Popen(
        [*metabundle_command(), *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=clean_env(**FAST_BACKOFF),
        start_new_session=True,
    )
    deadline = time.monotonic() + KILL_TIMEOUT_S
    try:
        while time.monotonic() < deadline:
            if process.poll() is not None:
                pytest.fail(f"the build ended before it was killed: {process.stderr.read()}")
            temps = [t for t in releases.glob(f"{TMP_PREFIX}*") if any(t.rglob("*.parquet"))]
            if temps:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=30)
                return temps[0]
            time.sleep(0.05)
        pytest.fail("the build never started writing a release")
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)
        process.stderr.close()
    raise AssertionError("unreachable")


def test_a_killed_build_leaves_current_intact_and_the_next_build_cleans_up(
    flaky_build: FlakyBuild, tmp_path: Path
) -> None:
    out = copy_build(flaky_build, tmp_path)
    cache = flaky_build.build.cache
    before = (out / "current").resolve()
    assert before.name == flaky_build.build.release.name
    with serve_directory(flaky_build.mirror) as url:
        stale = kill_while_writing(build_args(url, out, cache, "2099.01.01"), out / "releases")
        assert stale.exists(), "the killed build's temporary folder should still be there"
        assert (out / "current").resolve() == before
        assert not (out / "releases" / "2099.01.01").exists()
        verify_release(out / "current")  # the previous release is whole
        result = run_cli(*build_args(url, out, cache, "2099.01.02"), **FAST_BACKOFF)
    assert result.returncode == 0, result.stderr[-3000:]
    assert not stale.exists(), "the next build did not remove the stale temporary folder"
    assert not list((out / "releases").glob(f"{TMP_PREFIX}*"))
    assert (out / "current").resolve() == out / "releases" / "2099.01.02"
    assert sorted(p.name for p in (out / "releases").iterdir() if p.is_dir()) == sorted(
        [before.name, "2099.01.02"]
    )
    assert digest_record_path(out / "current").name == ".2099.01.02.digests.json"
    assert digest_record_path(out / "current").exists()  # written with the release
    verify_release(out / "current")


# -- verify catches a changed byte -------------------------------------------------------

KINDS = {
    "parquet": "parquet/omop_concept.parquet",
    "duckdb": "metabundle.duckdb",
    "sqlite": "metabundle.sqlite",
    "ann": "ann/omop.usearch",
    "vectors": "ann/vectors.npy",
    "fts": "fts/weight.npy",
    "doc_rows": "search/doc_rows.arrow",
    "manifest": "manifest.json",
    "sums": "SHA256SUMS",
    "readme": "README.md",
}


@pytest.fixture(scope="module")
def release_copy(flaky_build: FlakyBuild, tmp_path_factory: pytest.TempPathFactory) -> Path:
    copy = tmp_path_factory.mktemp("verify") / flaky_build.build.release.name
    shutil.copytree(flaky_build.build.release, copy)
    verify_release(copy)
    return copy


def flip_byte(path: Path, offset: int) -> int:
    """Invert one byte of ``path`` in place; the original byte."""
    with path.open("r+b") as handle:
        handle.seek(offset)
        original = handle.read(1)[0]
        handle.seek(offset)
        handle.write(bytes([original ^ 0xFF]))
    return original


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_verify_catches_a_changed_byte_in_every_kind_of_file(release_copy: Path, kind: str) -> None:
    relative = KINDS[kind]
    path = release_copy / relative
    assert path.is_file(), f"the release has no {relative}"
    offset = path.stat().st_size // 2
    original = flip_byte(path, offset)
    try:
        with pytest.raises(ReleaseError) as caught:
            verify_release(release_copy)
        message = str(caught.value)
        assert Path(relative).name in message or "SHA256SUMS" in message, message
        result = run_cli("verify", str(release_copy), timeout=300)
        assert result.returncode == 1
        assert result.stderr.strip().count("\n") == 0 and "Traceback" not in result.stderr
    finally:
        with path.open("r+b") as handle:
            handle.seek(offset)
            handle.write(bytes([original]))
    verify_release(release_copy)


def test_verify_catches_an_added_or_removed_file(release_copy: Path) -> None:
    extra = release_copy / "parquet" / "extra.parquet"
    extra.write_bytes(b"PAR1")
    try:
        with pytest.raises(ReleaseError, match=r"extra\.parquet is in the release but not in"):
            verify_release(release_copy)
    finally:
        extra.unlink()
    moved = release_copy / "fts" / "docno.npy"
    hidden = release_copy.parent / "docno.npy"
    moved.rename(hidden)
    try:
        with pytest.raises(
            ReleaseError, match=r"fts/docno\.npy is listed in SHA256SUMS but missing"
        ):
            verify_release(release_copy)
    finally:
        hidden.rename(moved)
