"""Publish releases to a static site, serve it on loopback, download, resume and verify."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from metabundle.release.checksums import SUMS_FILE, read_sums, write_sums
from metabundle.release.digest_record import read_record
from metabundle.release.manifest import MANIFEST_FILE, list_files, read_manifest
from tests.ops.conftest import OmopBuilds, error_line, run_in
from tests.support.cli import run_cli
from tests.support.servers import serve_directory
from tests.support.static_server import StaticServer, serve_static


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory, omop_builds: OmopBuilds) -> Path:
    """Both OMOP releases (the older first) published into one site folder."""
    target = tmp_path_factory.mktemp("site")
    for release in (omop_builds.cold.build.release, omop_builds.changed.build.release):
        result = run_cli("publish", "--release", str(release), "--to", str(target))
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip() == str(target / "releases" / release.name)
    return target


@pytest.fixture
def served(site: Path) -> Iterator[StaticServer]:
    with serve_static(site) as server:
        yield server


def _snapshot(folder: Path) -> dict[str, int]:
    return {str(p.relative_to(folder)): p.stat().st_mtime_ns for p in folder.rglob("*")}


def test_the_site_lists_versions_and_names_the_latest(site: Path, omop_builds: OmopBuilds) -> None:
    old, new = omop_builds.cold.build.release.name, omop_builds.changed.build.release.name
    assert (site / "latest").read_text() == f"{new}\n"
    index = json.loads((site / "releases" / "index.json").read_text())
    assert index["latest"] == new
    assert [v["version"] for v in index["versions"]] == [new, old]
    entry = index["versions"][0]
    assert entry["summary"]["tables"]["omop_concept"]["rows"] > 0
    assert entry["summary"]["build"]["key"]
    assert (site / "releases" / entry["manifest"]).is_file()


def test_database_files_are_compressed_with_both_hashes(
    site: Path, omop_builds: OmopBuilds
) -> None:
    release = omop_builds.changed.build.release
    folder = site / "releases" / release.name
    files = {f["path"]: f for f in json.loads((folder / "files.json").read_text())["files"]}
    assert set(files) == {
        p.relative_to(release).as_posix() for p in release.rglob("*") if p.is_file()
    }
    for name in ("metabundle.duckdb", "metabundle.sqlite"):
        entry = files[name]
        assert entry["compression"] == "zstd" and entry["stored"] == f"{name}.zst"
        assert entry["stored_size"] < entry["size"]
        assert entry["sha256"] != entry["stored_sha256"]
        assert not (folder / name).exists() and (folder / entry["stored"]).is_file()
    parquet = files["parquet/omop_concept.parquet"]  # already compressed: stored as is
    assert parquet["compression"] == "none" and parquet["stored_sha256"] == parquet["sha256"]


def test_publishing_the_same_release_again_changes_nothing(
    site: Path, omop_builds: OmopBuilds
) -> None:
    release = omop_builds.cold.build.release
    before = _snapshot(site)
    result = run_cli("publish", "--release", str(release), "--to", str(site))
    assert result.returncode == 0, result.stderr
    assert "already published, unchanged" in result.stderr
    assert _snapshot(site) == before  # not even index.json or latest were rewritten


def test_a_published_version_cannot_change(
    site: Path, omop_builds: OmopBuilds, tmp_path: Path
) -> None:
    """A valid release of an already published version, with one different file."""
    altered = tmp_path / omop_builds.cold.build.release.name
    shutil.copytree(omop_builds.cold.build.release, altered)
    readme = altered / "README.md"
    readme.write_text(readme.read_text() + "\nEdited after publishing.\n")
    manifest = read_manifest(altered)
    manifest["files"] = list_files(altered, exclude={MANIFEST_FILE, SUMS_FILE})
    (altered / MANIFEST_FILE).write_text(json.dumps(manifest, indent=2, sort_keys=True))
    write_sums(altered, {f["path"]: f["sha256"] for f in manifest["files"]}, MANIFEST_FILE)
    assert run_cli("verify", str(altered)).returncode == 0
    before = _snapshot(site)
    result = run_cli("publish", "--release", str(altered), "--to", str(site))
    assert result.returncode == 1
    error = error_line(result.stderr)
    assert "already published" in error and "README.md" in error and "immutable" in error
    assert _snapshot(site) == before


def test_download_installs_verifies_and_becomes_the_default_release(
    served: StaticServer, omop_builds: OmopBuilds, tmp_path: Path
) -> None:
    dest, elsewhere = tmp_path / "data", tmp_path / "cwd"
    elsewhere.mkdir()
    latest = omop_builds.changed.build.release.name
    result = run_cli("download", "--from", served.url, "--dest", str(dest))
    assert result.returncode == 0, result.stderr
    installed = dest / "releases" / latest
    assert result.stdout.strip() == str(installed)
    assert (dest / "current").resolve() == installed
    assert not list((dest / "releases").glob(".download-*"))
    # the digests verified at install are recorded under the installed name
    assert set(read_record(installed)) == set(read_sums(installed))
    # verify, info and search find it with no --release when ./build/current is absent
    env = {"METABUNDLE_DATA_DIR": str(dest)}
    verify = run_in(elsewhere, "verify", **env)
    assert verify.returncode == 0, verify.stderr
    assert verify.stdout.startswith(f"OK {latest}")
    info = run_in(elsewhere, "info", "--json", **env)
    assert json.loads(info.stdout)["path"] == str(installed)
    search = run_in(elsewhere, "search", "gastrointestinal bleeding", "--json", **env)
    assert search.returncode == 0, search.stderr
    assert json.loads(search.stdout)["results"]
    # downloading it again only moves current
    again = run_cli("download", latest, "--from", served.url, "--dest", str(dest))
    assert again.returncode == 0 and "already installed" in again.stderr


def test_the_default_destination_is_the_platform_user_data_folder(
    served: StaticServer, omop_builds: OmopBuilds, tmp_path: Path
) -> None:
    old = omop_builds.cold.build.release.name
    xdg = tmp_path / "xdg"
    result = run_in(tmp_path, "download", old, "--from", served.url, XDG_DATA_HOME=str(xdg))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(xdg / "metabundle" / "releases" / old)
    info = run_in(tmp_path, "info", "--json", XDG_DATA_HOME=str(xdg))
    assert json.loads(info.stdout)["version"] == old


def test_an_interrupted_download_resumes_with_a_range_request(
    served: StaticServer, omop_builds: OmopBuilds, tmp_path: Path
) -> None:
    version = omop_builds.changed.build.release.name
    big = f"/releases/{version}/metabundle.sqlite.zst"
    dest = tmp_path / "data"
    served.cut_after(big, 100_000)
    first = run_cli(
        "download", "--from", served.url, "--dest", str(dest), METABUNDLE_HTTP_ATTEMPTS="1"
    )
    assert first.returncode == 1
    error = error_line(first.stderr)
    assert "metabundle.sqlite.zst" in error and "interrupted" in error
    assert not (dest / "current").exists()
    part = dest / "releases" / f".download-{version}" / "parts" / "metabundle.sqlite.zst.part"
    kept = part.stat().st_size
    assert kept == 100_000  # every byte that arrived before the cut was kept
    second = run_cli("download", "--from", served.url, "--dest", str(dest))
    assert second.returncode == 0, second.stderr
    assert "1 resumed" in second.stderr
    assert served.requests_for(big)[-1].range == f"bytes={kept}-"
    assert served.requests_for(big)[-1].status == 206
    assert run_cli("verify", str(dest / "current")).returncode == 0


def test_a_cut_connection_is_resumed_within_one_run(
    served: StaticServer, omop_builds: OmopBuilds, tmp_path: Path
) -> None:
    version = omop_builds.changed.build.release.name
    big = f"/releases/{version}/metabundle.duckdb.zst"
    served.cut_after(big, 50_000)
    result = run_cli(
        "download",
        "--from",
        served.url,
        "--dest",
        str(tmp_path / "data"),
        METABUNDLE_HTTP_BACKOFF_S="0",
    )
    assert result.returncode == 0, result.stderr
    ranges = [r.range for r in served.requests_for(big)]
    assert ranges[-2:] == [None, "bytes=50000-"]


@pytest.mark.parametrize("stored", ["metabundle.duckdb.zst", "parquet/omop_concept.parquet"])
def test_a_tampered_file_is_refused_and_current_stays(
    site: Path, omop_builds: OmopBuilds, tmp_path: Path, stored: str
) -> None:
    old, new = omop_builds.cold.build.release.name, omop_builds.changed.build.release.name
    copy = tmp_path / "site"
    shutil.copytree(site, copy)
    target = copy / "releases" / new / stored
    data = bytearray(target.read_bytes())
    data[len(data) // 2] ^= 0xFF
    target.write_bytes(bytes(data))
    dest = tmp_path / "data"
    with serve_static(copy) as server:
        assert run_cli("download", old, "--from", server.url, "--dest", str(dest)).returncode == 0
        result = run_cli("download", "--from", server.url, "--dest", str(dest))
    assert result.returncode == 1
    error = error_line(result.stderr)
    assert f"{stored} of release {new} does not match its published sha256" in error
    assert (dest / "current").resolve() == dest / "releases" / old
    assert not (dest / "releases" / new).exists()


def test_a_server_without_range_support_restarts_the_file(
    site: Path, served: StaticServer, omop_builds: OmopBuilds, tmp_path: Path
) -> None:
    version = omop_builds.changed.build.release.name
    dest = tmp_path / "data"
    served.cut_after(f"/releases/{version}/metabundle.sqlite.zst", 100_000)
    args = ("download", "--from", served.url, "--dest", str(dest))
    assert run_cli(*args, METABUNDLE_HTTP_ATTEMPTS="1").returncode == 1
    with serve_directory(site) as plain:  # http.server: ignores Range, answers 200
        result = run_cli("download", "--from", plain, "--dest", str(dest))
    assert result.returncode == 0, result.stderr
    assert "resumed" not in result.stderr
    assert run_cli("verify", str(dest / "current")).returncode == 0


def test_a_file_list_that_leaves_the_release_folder_is_refused(
    site: Path, omop_builds: OmopBuilds, tmp_path: Path
) -> None:
    version = omop_builds.changed.build.release.name
    copy = tmp_path / "site"
    shutil.copytree(site, copy)
    listing_file = copy / "releases" / version / "files.json"
    listing = json.loads(listing_file.read_text())
    listing["files"][0]["path"] = "../../escaped.txt"
    listing_file.write_text(json.dumps(listing))
    with serve_static(copy) as server:
        result = run_cli("download", "--from", server.url, "--dest", str(tmp_path / "data"))
    assert result.returncode == 1
    assert "unsafe path '../../escaped.txt'" in error_line(result.stderr)
    assert not (tmp_path / "escaped.txt").exists()
