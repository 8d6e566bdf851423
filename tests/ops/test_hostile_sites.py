"""Release sites that misbehave on the wire: a body dripped a byte at a time,
redirect loops and redirects to another site, endless small files, absurd listed
sizes, malformed listings and paths, versions that are not plain versions.

The real ``metabundle download`` runs against loopback servers and must give each up
in one sentence naming the file or URL, within bounds of time and memory, writing
nothing outside its destination and installing nothing partial."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from metabundle.digest import sha256_file
from metabundle.release.checksums import SUMS_FILE
from metabundle.release.manifest import MANIFEST_FILE
from metabundle.release.publish import FILES_FILE, MAX_FILE_BYTES, publish_release
from metabundle.release.site_client import FILES_LIST_MAX_BYTES, LATEST_MAX_BYTES
from tests.ops.conftest import error_line
from tests.ops.test_hostile_releases import VERSION, write_release
from tests.support.cli import run_cli
from tests.support.hostile_http import Flood, drip, redirect
from tests.support.servers import faulty_handler, serve_directory

README = f"/releases/{VERSION}/README.md"
LISTING = f"/releases/{VERSION}/{FILES_FILE}"


@pytest.fixture
def site(tmp_path: Path) -> Path:
    """A site with one good minimal release (a README, the manifest, SHA256SUMS)."""
    target = tmp_path / "site"
    publish_release(write_release(tmp_path / "good" / VERSION), target)
    return target


def download(url: str, dest: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """``metabundle download`` from ``url`` into ``dest`` with two quick attempts."""
    return run_cli(
        "download",
        "--from",
        url,
        "--dest",
        str(dest),
        timeout=300,
        METABUNDLE_HTTP_ATTEMPTS="2",
        METABUNDLE_HTTP_BACKOFF_S="0.01",
        **env,
    )


def assert_nothing_installed(dest: Path) -> None:
    assert not (dest / "current").exists()
    assert not (dest / "releases" / VERSION).exists()


def written_files(dest: Path) -> list[Path]:
    return [path for path in dest.rglob("*") if path.is_file()] if dest.exists() else []


def edit_listing(site: Path, change: Callable[[dict], object]) -> None:
    path = site / LISTING.lstrip("/")
    listing = json.loads(path.read_text())
    change(listing)
    path.write_text(json.dumps(listing))


def readme_entry(listing: dict) -> dict:
    return next(entry for entry in listing["files"] if entry["path"] == "README.md")


# -- (a) a total deadline per file ---------------------------------------------------------


def test_a_dripping_server_is_given_up_at_the_file_s_deadline(site: Path, tmp_path: Path) -> None:
    """One byte a second of an 11-byte file: no read ever times out, but the file's
    deadline (a 1 s grace here) passes, and the command says so within seconds."""
    dest = tmp_path / "data"
    with serve_directory(site, faulty_handler(drip(README, 1.0))) as url:
        started = time.monotonic()
        result = download(url, dest, METABUNDLE_DOWNLOAD_GRACE_S="1")
        elapsed = time.monotonic() - started
    assert result.returncode == 1
    error = error_line(result.stderr)
    assert "README.md did not arrive within its deadline of 1.0 s" in error
    assert elapsed < 8, f"the drip was followed for {elapsed:.1f} s"
    assert_nothing_installed(dest)
    assert all(path.stat().st_size <= 11 for path in written_files(dest))


# -- (b, c) redirects stay on the site ------------------------------------------------------


def test_a_redirect_loop_is_one_sentence_naming_the_url(site: Path, tmp_path: Path) -> None:
    loop = redirect(lambda path: path if path == "/latest" else None)
    with serve_directory(site, faulty_handler(loop)) as url:
        result = download(url, tmp_path / "data")
    assert result.returncode == 1
    error = error_line(result.stderr)
    assert f"{url}/latest redirects more than 10 times in a row" in error
    assert "bug" not in error
    assert_nothing_installed(tmp_path / "data")


def test_a_redirect_to_another_site_is_refused_naming_both_urls(site: Path, tmp_path: Path) -> None:
    dest = tmp_path / "data"
    with (
        serve_directory(site) as other,
        serve_directory(site, faulty_handler(redirect(lambda path: other + path))) as url,
    ):
        result = download(url, dest)
    assert result.returncode == 1
    error = error_line(result.stderr)
    assert f"{url}/latest redirects to {other}/latest, outside the site {url}" in error
    assert_nothing_installed(dest)
    assert not written_files(dest)


def test_a_redirect_within_the_site_is_followed(site: Path, tmp_path: Path) -> None:
    root = tmp_path / "root"
    shutil.copytree(site, root / "moved")
    moved = redirect(lambda path: None if path.startswith("/moved/") else f"/moved{path}")
    dest = tmp_path / "data"
    with serve_directory(root, faulty_handler(moved)) as url:
        result = download(url, dest)
    assert result.returncode == 0, result.stderr
    assert (dest / "current").resolve() == dest / "releases" / VERSION


# -- (d) small files are read within a cap ------------------------------------------------


@pytest.mark.parametrize(
    ("path", "total", "limit"),
    [("/latest", 16 << 20, LATEST_MAX_BYTES), (LISTING, 128 << 20, FILES_LIST_MAX_BYTES)],
    ids=["latest", "files.json"],
)
def test_an_endless_small_file_is_refused_after_a_bounded_read(
    site: Path, tmp_path: Path, path: str, total: int, limit: int
) -> None:
    flood = Flood(path, total)
    with serve_directory(site, faulty_handler(flood)) as url:
        result = download(url, tmp_path / "data")
    assert result.returncode == 1
    error = error_line(result.stderr)
    assert f"{url}{path} holds more than the {limit:,} bytes such a file may have" in error
    assert flood.sent < limit + (32 << 20), f"{flood.sent:,} bytes were read"
    assert_nothing_installed(tmp_path / "data")


# -- (e) absurd listed sizes are refused before anything is written -------------------------


def _free_space_plus_one_gib(dest: Path) -> int:
    free = shutil.disk_usage(dest.parent).free + (1 << 30)
    if free > MAX_FILE_BYTES:
        pytest.skip("this disk has more free space than a listed size may have")
    return free


SIZES: dict[str, tuple[Callable[[Path], object], str]] = {
    "10**18 bytes": (lambda dest: 10**18, "a size of 1,000,000,000,000,000,000 bytes, more than"),
    "negative": (lambda dest: -1, "gives README.md no valid size"),
    "not an integer": (lambda dest: 11.5, "gives README.md no valid size"),
    "more than the free space": (_free_space_plus_one_gib, "more bytes but"),
}


@pytest.mark.parametrize("case", sorted(SIZES))
def test_an_absurd_listed_size_is_refused_before_anything_is_written(
    site: Path, tmp_path: Path, case: str
) -> None:
    """The server would send bytes without end; nothing may reach the disk."""
    dest = tmp_path / "data"
    size, expected = SIZES[case]
    listed = size(dest)
    edit_listing(
        site, lambda listing: readme_entry(listing).update(size=listed, stored_size=listed)
    )
    with serve_directory(site, faulty_handler(Flood(README, 64 << 20))) as url:
        result = download(url, dest)
    assert result.returncode == 1
    error = error_line(result.stderr)
    assert expected in error and "bug" not in error
    assert not written_files(dest)


# -- (f) the listing's and the manifest's shape, and every path -----------------------------


def _publish_manifest(site: Path, text: str) -> None:
    """Replace the published manifest, with SHA256SUMS and files.json made to agree."""
    folder = site / "releases" / VERSION
    (folder / MANIFEST_FILE).write_text(text)
    sums = folder / SUMS_FILE
    lines = [line for line in sums.read_text().splitlines() if not line.endswith(MANIFEST_FILE)]
    sums.write_text("".join(f"{line}\n" for line in sorted([*lines, _sum_line(folder)])))

    def agree(listing: dict) -> None:
        for entry in listing["files"]:
            path = folder / entry["path"]
            digest = sha256_file(path)
            size = path.stat().st_size
            entry.update(size=size, stored_size=size, sha256=digest, stored_sha256=digest)

    edit_listing(site, agree)


def _sum_line(folder: Path) -> str:
    return f"{sha256_file(folder / MANIFEST_FILE)}  {MANIFEST_FILE}"


def _add_entry(path: str) -> Callable[[Path], None]:
    def change(site: Path) -> None:
        edit_listing(
            site,
            lambda listing: listing["files"].append(
                {**readme_entry(listing), "path": path, "stored": path}
            ),
        )

    return change


MALFORMED: dict[str, tuple[Callable[[Path], None], str]] = {
    "files.json is a list": (
        lambda site: (site / LISTING.lstrip("/")).write_text("[1, 2, 3]"),
        f"{FILES_FILE} is not a metabundle-site/1 file list",
    ),
    "manifest.json is a list": (
        lambda site: _publish_manifest(site, "[1, 2, 3]"),
        "manifest.json holds a list where a metabundle-release/1 object belongs",
    ),
    "a 300-character name": (_add_entry("a" * 300), "is longer than 255 bytes"),
    "3,000 nested folders": (_add_entry("a/" * 3000 + "x"), "3,001 parts deep, more than 16"),
    "a control character": (_add_entry("READ\nME.txt"), "control character"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_a_malformed_listing_manifest_or_path_is_one_short_sentence(
    site: Path, tmp_path: Path, case: str
) -> None:
    damage, expected = MALFORMED[case]
    damage(site)
    dest = tmp_path / "data"
    with serve_directory(site) as url:
        result = download(url, dest)
    assert result.returncode == 1
    error = error_line(result.stderr)
    assert expected in error and "bug" not in error
    assert len(error) < 400, error
    assert_nothing_installed(dest)
    assert {p.name for p in tmp_path.iterdir()} <= {"good", "site", "data"}


# -- versions: ``latest`` must name exactly a version ---------------------------------------


@pytest.mark.parametrize(
    "version", ["２０２６.０１.０２", "2026.02.30"], ids=["fullwidth", "no date"]
)
def test_a_latest_that_is_not_a_plain_version_is_refused(
    site: Path, tmp_path: Path, version: str
) -> None:
    """The site publishes the folder ``latest`` names, so only the version's form
    stands between it and a folder of that name in the destination."""
    shutil.copytree(site / "releases" / VERSION, site / "releases" / version)
    listing_file = site / "releases" / version / FILES_FILE
    listing = json.loads(listing_file.read_text())
    listing_file.write_text(json.dumps({**listing, "version": version}))
    (site / "latest").write_text(f"{version}\n")
    dest = tmp_path / "data"
    with serve_directory(site) as url:
        result = download(url, dest)
    assert result.returncode == 1
    error = error_line(result.stderr)
    assert f"{url}/latest gives the version {version!r}, which is not of the form" in error
    assert not written_files(dest) and not (dest / "releases" / version).exists()
