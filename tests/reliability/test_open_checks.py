"""Serving verifies what it serves: a release damaged in any of the ways that once gave
wrong answers with exit status 0 is refused when it is opened (or, for the large
memory-mapped files, when they are first mapped) with one sentence naming the file."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from metabundle.datasette_plugin.serve import make_datasette
from metabundle.errors import ReleaseError
from metabundle.release.checksums import read_sums
from metabundle.release.digest_record import digest_record_path, read_record
from metabundle.release.integrity import forget_digests
from metabundle.search.errors import RELEASE_DAMAGED
from metabundle.search.release import Release
from metabundle.search.tools import call_tool
from tests.reliability.conftest import FlakyBuild
from tests.support.cli import run_cli


def linked_copy(release: Path, destination: Path) -> Path:
    """A copy of ``release`` made of hard links (cheap); :func:`rewrite` replaces a file
    instead of editing it, so the original stays intact."""
    shutil.copytree(release, destination, copy_function=os.link)
    return destination


def rewrite(path: Path, change: Callable[[bytearray], None]) -> None:
    data = bytearray(path.read_bytes())
    change(data)
    path.unlink()
    path.write_bytes(bytes(data))


def zero_weights(root: Path) -> None:
    rewrite(
        root / "fts" / "weight.npy", lambda d: d.__setitem__(slice(200, None), bytes(len(d) - 200))
    )


def overwrite_vectors(root: Path) -> None:
    path = root / "ann" / "vectors.npy"
    vectors = np.load(path)
    path.unlink()
    np.save(path, vectors[::-1].copy())


def edit_version(root: Path) -> None:
    path = root / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest["version"] = "2099.01.01"
    path.unlink()
    path.write_text(json.dumps(manifest, indent=2, sort_keys=True))


def corrupt_duckdb(root: Path) -> None:
    rewrite(root / "metabundle.duckdb", lambda d: d.__setitem__(slice(0, 8192), bytes(8192)))


AT_OPEN: dict[str, tuple[Callable[[Path], None], str]] = {
    "zeros in fts/weight.npy": (zero_weights, "fts/weight.npy does not match its sha256"),
    "fts/meta.json deleted": (
        lambda root: (root / "fts" / "meta.json").unlink(),
        "fts/meta.json is listed in manifest.json but missing",
    ),
    "ann/omop.usearch deleted": (
        lambda root: (root / "ann" / "omop.usearch").unlink(),
        "ann/omop.usearch is listed in manifest.json but missing",
    ),
    "manifest version edited": (edit_version, "manifest.json does not match its sha256"),
    "corrupt duckdb": (corrupt_duckdb, "metabundle.duckdb does not match its sha256"),
    "a file cut short": (
        lambda root: rewrite(
            root / "parquet" / "omop_concept.parquet", lambda d: d.__delitem__(slice(-100, None))
        ),
        "parquet/omop_concept.parquet is",
    ),
}


@pytest.mark.parametrize("case", sorted(AT_OPEN))
def test_a_damaged_release_is_refused_when_opened(
    flaky_build: FlakyBuild, tmp_path: Path, case: str
) -> None:
    damage, expected = AT_OPEN[case]
    root = linked_copy(flaky_build.build.release, tmp_path / flaky_build.build.release.name)
    damage(root)
    with pytest.raises(ReleaseError) as caught:
        Release.open(root)
    message = str(caught.value)
    assert expected in message and "metabundle verify" in message
    assert "\n" not in message and "bug" not in message


def test_the_cli_names_the_damaged_file_in_one_sentence(
    flaky_build: FlakyBuild, tmp_path: Path
) -> None:
    root = linked_copy(flaky_build.build.release, tmp_path / flaky_build.build.release.name)
    zero_weights(root)
    result = run_cli("search", "hemorrhage", "--release", str(root), "--json")
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "fts/weight.npy" in lines[0] and "Traceback" not in result.stderr
    quick = run_cli("verify", "--quick", str(root))
    assert quick.returncode == 1 and "fts/weight.npy" in quick.stderr
    assert run_cli("verify", "--quick", str(flaky_build.build.release)).returncode == 0


def test_overwritten_vectors_are_refused_before_they_are_mapped(
    flaky_build: FlakyBuild, tmp_path: Path
) -> None:
    root = linked_copy(flaky_build.build.release, tmp_path / flaky_build.build.release.name)
    overwrite_vectors(root)
    with Release.open(root) as release:
        keyword = call_tool(release, "search_all", {"query": "hemorrhage", "method": "keyword"})
        semantic = call_tool(release, "search_all", {"query": "hemorrhage", "method": "semantic"})
    assert keyword["results"]
    assert semantic["error"]["code"] == RELEASE_DAMAGED
    assert "ann/vectors.npy does not match its sha256" in semantic["error"]["message"]


def damage_in_place(path: Path, offset: int, data: bytes) -> None:
    """Write ``data`` into ``path`` at ``offset`` in place, keeping its inode, size and
    modification time (what no writer of a release does, and only a deep check sees)."""
    stat = path.stat()
    with path.open("r+b") as handle:
        handle.seek(offset)
        handle.write(data)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))


def test_the_build_records_every_digest_it_verified(flaky_build: FlakyBuild) -> None:
    release = flaky_build.build.release
    record = read_record(release)
    assert digest_record_path(release).parent == release.parent
    assert set(record) == set(read_sums(release))
    for name, (inode, size, mtime_ns, digest) in record.items():
        stat = (release / name).stat()
        assert (inode, size, mtime_ns) == (stat.st_ino, stat.st_size, stat.st_mtime_ns)
        assert digest == read_sums(release)[name]


def test_a_recorded_file_is_not_hashed_again_and_verify_stays_the_deep_check(
    flaky_build: FlakyBuild, tmp_path: Path
) -> None:
    root = tmp_path / flaky_build.build.release.name
    shutil.copytree(flaky_build.build.release, root)  # new inodes: nothing recorded yet
    weights = root / "fts" / "weight.npy"
    original = weights.read_bytes()[200:4296]
    damage_in_place(weights, 200, bytes(4096))
    forget_digests()
    with pytest.raises(ReleaseError, match=r"fts/weight\.npy does not match its sha256"):
        Release.open(root)  # unrecorded: hashed at open
    damage_in_place(weights, 200, original)
    assert run_cli("verify", str(root)).returncode == 0  # records what it verified
    assert set(read_record(root)) == set(read_sums(root))
    damage_in_place(weights, 200, bytes(4096))
    forget_digests()
    with Release.open(root):
        pass  # trusted by the record: the same inode, size and time
    deep = run_cli("verify", str(root))
    assert deep.returncode == 1 and "fts/weight.npy" in deep.stderr
    zero_weights(root)  # a file replaced, as every writer replaces one, is hashed again
    forget_digests()
    with pytest.raises(ReleaseError, match=r"fts/weight\.npy does not match its sha256"):
        Release.open(root)


@pytest.mark.anyio
async def test_datasette_refuses_an_overwritten_sqlite_file(
    flaky_build: FlakyBuild, tmp_path: Path
) -> None:
    root = linked_copy(flaky_build.build.release, tmp_path / flaky_build.build.release.name)
    middle = (root / "metabundle.sqlite").stat().st_size // 2
    rewrite(
        root / "metabundle.sqlite",
        lambda d: d.__setitem__(slice(middle, middle + 1_000_000), bytes(1_000_000)),
    )
    instance = make_datasette(root)
    with pytest.raises(ReleaseError, match=r"metabundle\.sqlite does not match its sha256"):
        await instance.invoke_startup()
    for database in instance.databases.values():
        database.close()
