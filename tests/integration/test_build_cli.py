"""``metabundle build`` end to end over the loopback mirror, and its error handling."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import idc_index_data
import numpy as np
import pyarrow.parquet as pq
import pytest

from metabundle.release.checksums import table_fingerprint
from metabundle.search.release import Release
from tests.support.build import Build, build_release, share_embedding_cache, step_lines
from tests.support.cli import run_cli
from tests.support.mirrors import OMITTED_IDC_INDEX
from tests.support.servers import serve_directory

VOLATILE_TABLES = {"release_info", "source_snapshot"}


@pytest.fixture(scope="module")
def idc_build(tmp_path_factory: pytest.TempPathFactory, mirror_url: str) -> Build:
    """Imaging Data Commons alone, built here for its output (the session build may be
    an earlier one, reused without it: ``METABUNDLE_TEST_BUILD``)."""
    root = tmp_path_factory.mktemp("idc-output")
    return build_release(root / "out", root / "cache", mirror_url, "idc")


def test_build_prints_the_release_and_points_current_at_it(mirror_build: Build) -> None:
    assert mirror_build.release.parent == mirror_build.out / "releases"
    assert (mirror_build.out / "current").resolve() == mirror_build.release.resolve()
    assert "raw_idc" in mirror_build.stderr and "release" in mirror_build.stderr
    assert not list((mirror_build.out / "releases").glob(".tmp-*"))


def test_the_summary_shows_the_embedding_shards_with_their_rate(idc_build: Build) -> None:
    report = json.loads((idc_build.out / "work" / "build_report.json").read_text())
    embedded = report["steps"]["embed idc_0"]["reused"]["embedded"]
    assert embedded > 0
    summary = step_lines(idc_build, "summary")
    [shards] = [line for line in summary if line.startswith("embed (1 shard)")]
    assert re.search(
        rf"\d+\.\ds .*  {embedded:,} texts embedded, 0 from the embedding cache, [\d,.]+ texts/s$",
        shards,
    )
    assert summary == report["summary"]


def test_the_summary_accounts_for_the_build_time(idc_build: Build) -> None:
    total, *steps = step_lines(idc_build, "summary")
    wall = float(total.split("s in all", 1)[0])
    took = {line.split()[0]: float(re.findall(r" (\d+\.\d)s ", line)[0]) for line in steps}
    assert abs(sum(took.values()) - wall) <= 0.05 * len(took) + 0.1
    assert took.get("between", 0.0) < wall / 4  # Dagster's own work: a small part of it


def test_an_index_the_upstream_lacks_is_reported_as_information(idc_build: Build) -> None:
    absent = [line for line in step_lines(idc_build, "raw_idc") if OMITTED_IDC_INDEX in line]
    assert absent == [
        f"not in the upstream: {OMITTED_IDC_INDEX} (optional; the release lists it as missing)"
    ]
    assert "404" not in idc_build.stderr and "no such file" not in idc_build.stderr


def test_verify_passes_on_the_built_release(mirror_build: Build) -> None:
    result = run_cli("verify", str(mirror_build.release))
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"OK {mirror_build.release.name}")


def test_idc_series_has_every_series_of_the_package(mirror_build: Build, release: Release) -> None:
    expected = pq.ParquetFile(idc_index_data.IDC_INDEX_PARQUET_FILEPATH).metadata.num_rows
    rows = release.query("SELECT count(*) FROM idc_series")[0][0]
    collections = release.query("SELECT count(*) FROM idc_collection")[0][0]
    assert rows == expected
    assert collections == 179
    manifest = json.loads((mirror_build.release / "manifest.json").read_text())
    assert manifest["tables"]["idc_series"]["rows"] == expected
    assert manifest["sources"]["idc"]["upstream_version"] == "v25"


def test_release_has_the_documented_layout(mirror_build: Build) -> None:
    names = {p.name for p in mirror_build.release.iterdir()}
    assert {"metabundle.duckdb", "metabundle.sqlite", "parquet", "manifest.json"} <= names
    assert {"SHA256SUMS", "datapackage.json", "README.md"} <= names
    metadata = pq.read_metadata(mirror_build.release / "parquet" / "idc_collection.parquet")
    assert metadata.metadata[b"metabundle.release"] == mirror_build.release.name.encode()


def test_the_embedding_table_is_the_served_vectors_in_parquet_only(release: Release) -> None:
    """``parquet/embedding.parquet`` holds every search document's vector as serving
    scores it (``ann/vectors.npy``), row for row with ``search_doc``; the DuckDB file
    holds no second copy."""
    table = pq.read_table(release.path / "parquet" / "embedding.parquet")
    served = np.load(release.path / "ann" / "vectors.npy")
    assert table.column("docno").to_pylist() == list(range(len(served)))
    ids = [doc_id for (doc_id,) in release.query("SELECT doc_id FROM search_doc ORDER BY docno")]
    assert table.column("doc_id").to_pylist() == ids
    assert set(table.column("model").to_pylist()) == {release.search_info["embedding_model"]}
    vectors = table.column("vector").combine_chunks().flatten().to_numpy()
    np.testing.assert_array_equal(vectors.reshape(served.shape), served.astype(np.float32))
    assert not release.query(
        "SELECT 1 FROM information_schema.tables WHERE table_name = 'embedding'"
    )


def test_info_summarizes_the_release(mirror_build: Build) -> None:
    result = run_cli("info", "--release", str(mirror_build.release), "--json")
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["version"] == mirror_build.release.name
    assert summary["tables"]["idc_collection"] == 179


def test_verify_catches_a_changed_byte(mirror_build: Build, tmp_path: Path) -> None:
    copy = tmp_path / "release"
    shutil.copytree(mirror_build.release, copy)
    target = copy / "parquet" / "idc_version.parquet"
    data = bytearray(target.read_bytes())
    data[len(data) // 2] ^= 0xFF
    target.write_bytes(bytes(data))
    result = run_cli("verify", str(copy))
    assert result.returncode == 1
    assert "parquet/idc_version.parquet does not match its sha256" in result.stderr
    assert "Traceback" not in result.stderr


def test_two_builds_of_the_same_inputs_have_identical_tables(
    mirror_build: Build, mirror_url: str, tmp_path: Path
) -> None:
    share_embedding_cache(mirror_build, tmp_path / "cache")
    second = build_release(tmp_path / "out", tmp_path / "cache", mirror_url)
    first_tables = sorted(p.stem for p in (mirror_build.release / "parquet").glob("*.parquet"))
    second_tables = sorted(p.stem for p in (second.release / "parquet").glob("*.parquet"))
    assert first_tables == second_tables
    for name in first_tables:
        if name in VOLATILE_TABLES:
            continue
        assert table_fingerprint(
            name, mirror_build.release / "parquet" / f"{name}.parquet"
        ) == table_fingerprint(name, second.release / "parquet" / f"{name}.parquet"), name


def test_a_failed_asset_leaves_current_untouched(
    mirror_build: Build, upstream_dir: Path, tmp_path: Path
) -> None:
    broken = tmp_path / "broken-mirror"
    shutil.copytree(upstream_dir / "ukb", broken / "ukb")
    (broken / "ukb" / "scdown" / "1.txt").unlink()
    before = (mirror_build.out / "current").resolve()
    with serve_directory(broken) as base:
        result = run_cli(
            "build",
            "--upstream",
            base,
            "--out",
            str(mirror_build.out),
            "--cache",
            str(tmp_path / "cache"),
            "--sources",
            "ukb",
        )
    assert result.returncode == 1
    assert "ukb/scdown/1.txt" in result.stderr and "404" in result.stderr
    assert (mirror_build.out / "current").resolve() == before
    assert not list((mirror_build.out / "releases").glob(".tmp-*"))


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["build", "--sources", "nosuch"], "Unknown source 'nosuch'"),
        (["build", "--sources", "idc", "--upstream", "http://127.0.0.1:9"], "Cannot reach"),
        (["build", "--sources", "idc", "--out", "/proc/metabundle"], "Cannot write to --out"),
        (["build", "--upstream", "/no/such/folder"], "neither an http(s) URL nor"),
        (["verify", "/no/such/release"], "No release at /no/such/release"),
    ],
)
def test_bad_input_gives_one_clear_sentence(args: list[str], expected: str) -> None:
    result = run_cli(*args, timeout=120)
    assert result.returncode == 1
    assert expected in result.stderr
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
