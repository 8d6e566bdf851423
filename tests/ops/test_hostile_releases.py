"""Releases and sites made hostile on purpose: names that leave their folder, symbolic
links, over-long downloads, malformed file lists. ``verify``, ``publish`` and
``download`` refuse each with one sentence and write nothing outside their folder."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import zstandard

from metabundle.digest import sha256_file
from metabundle.errors import ReleaseError
from metabundle.http_client import RetryPolicy
from metabundle.release.checksums import SUMS_FILE, write_sums
from metabundle.release.download import download_release
from metabundle.release.manifest import FORMAT, MANIFEST_FILE, list_files
from metabundle.release.publish import FILES_FILE, publish_release
from tests.ops.conftest import error_line
from tests.support.cli import run_cli
from tests.support.static_server import serve_static

VERSION = "2026.01.02"
NO_RETRY = RetryPolicy(attempts=1)


def write_release(folder: Path, version: str = VERSION, extra_sums: str = "") -> Path:
    """A minimal release in ``folder``: a README, the manifest and SHA256SUMS (plus
    ``extra_sums`` lines appended to it)."""
    folder.mkdir(parents=True, exist_ok=True)
    if not (folder / "README.md").exists():
        (folder / "README.md").write_text("A release.\n")
    files = list_files(folder, exclude={MANIFEST_FILE, SUMS_FILE})
    manifest = {"format": FORMAT, "version": version, "sources": {}, "tables": {}, "files": files}
    (folder / MANIFEST_FILE).write_text(json.dumps(manifest))
    write_sums(folder, {f["path"]: f["sha256"] for f in files}, MANIFEST_FILE)
    with (folder / SUMS_FILE).open("a") as handle:
        handle.write(extra_sums)
    return folder


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A file outside every release, at ``tmp/x/payload.txt``."""
    payload = tmp_path / "x" / "payload.txt"
    payload.parent.mkdir()
    payload.write_text("not part of any release\n")
    return payload


def escaping_release(tmp_path: Path, outside: Path) -> Path:
    folder = tmp_path / "build" / "releases" / VERSION
    folder.mkdir(parents=True)
    line = f"{sha256_file(outside)}  ../../../x/payload.txt\n"
    return write_release(folder, extra_sums=line)


def test_a_sums_entry_leaving_the_release_fails_verify_and_publish(
    tmp_path: Path, outside: Path
) -> None:
    release = escaping_release(tmp_path, outside)
    assert (release / "../../../x/payload.txt").resolve() == outside
    result = run_cli("verify", str(release))
    assert result.returncode == 1
    assert "unsafe path '../../../x/payload.txt'" in error_line(result.stderr)
    site = tmp_path / "public" / "site"
    with pytest.raises(ReleaseError, match="unsafe path"):
        publish_release(release, site)
    assert not (tmp_path / "public" / "x").exists()  # where the escape used to write


def test_a_version_that_is_a_path_fails_verify_and_publish(tmp_path: Path) -> None:
    release = write_release(tmp_path / "release", version="../../escaped")
    result = run_cli("verify", str(release))
    assert result.returncode == 1
    assert "'../../escaped', which is not of the form YYYY.MM.DD[.N]" in error_line(result.stderr)
    site = tmp_path / "site" / "public"
    with pytest.raises(ReleaseError, match=r"YYYY\.MM\.DD"):
        publish_release(release, site)
    assert not (tmp_path / "escaped").exists() and not (tmp_path / "site" / "escaped").exists()


@pytest.mark.parametrize(
    "version",
    ["2025.01.01\n", "2025.01.01 ", "２０２５.０１.０１", "2025.02.30", "2025.01.01.1234567"],
    ids=["newline", "space", "fullwidth", "no date", "long build number"],
)
def test_a_version_that_is_not_exactly_a_version_fails_verify_and_publish(
    tmp_path: Path, version: str
) -> None:
    """Each once passed ``verify``, and ``publish`` made a folder of that name."""
    release = write_release(tmp_path / "release", version=version)
    manifest = release / MANIFEST_FILE
    for args in (("verify", str(release)), ("publish", "--release", str(release), "--to", "site")):
        result = run_cli(*args, cwd=tmp_path)
        assert result.returncode == 1, args
        error = error_line(result.stderr)
        assert f"{manifest} gives the version {version!r}, which is not of the form" in error
    assert not (tmp_path / "site").exists()


def test_a_symbolic_link_in_a_release_fails_verify_and_is_not_published(tmp_path: Path) -> None:
    folder = tmp_path / "release"
    folder.mkdir()
    (folder / "notes.txt").symlink_to("/etc/hostname")
    release = write_release(folder)
    result = run_cli("verify", str(release))
    assert result.returncode == 1
    assert "notes.txt" in error_line(result.stderr) and "symbolic link" in result.stderr
    site = tmp_path / "site"
    with pytest.raises(ReleaseError, match="symbolic link"):
        publish_release(release, site)
    assert not list(site.rglob("notes.txt*"))


@pytest.fixture
def site(tmp_path: Path) -> Path:
    """A site with one good minimal release published into it."""
    target = tmp_path / "site"
    publish_release(write_release(tmp_path / "good" / VERSION), target)
    return target


def _listing(site: Path) -> tuple[Path, dict]:
    path = site / "releases" / VERSION / FILES_FILE
    return path, json.loads(path.read_text())


def test_a_downloaded_release_whose_sums_leave_it_is_not_installed(
    site: Path, tmp_path: Path, outside: Path
) -> None:
    """The published SHA256SUMS gains a ``../`` entry and files.json its new hash: the
    download passes every published sha256, so verification must catch it."""
    published = site / "releases" / VERSION / SUMS_FILE
    published.write_text(published.read_text() + f"{sha256_file(outside)}  ../../x/payload.txt\n")
    path, listing = _listing(site)
    for entry in listing["files"]:
        if entry["path"] == SUMS_FILE:
            size, digest = published.stat().st_size, sha256_file(published)
            entry.update(size=size, stored_size=size, sha256=digest, stored_sha256=digest)
    path.write_text(json.dumps(listing))
    dest = tmp_path / "data"
    unsafe = re.escape("unsafe path '../../x/payload.txt'")
    with serve_static(site) as server, pytest.raises(ReleaseError, match=unsafe):
        download_release(server.url, dest=dest, retry=NO_RETRY)
    assert not (dest / "current").exists() and not (dest / "releases" / VERSION).exists()


def test_download_stops_at_the_listed_size(site: Path, tmp_path: Path) -> None:
    readme = site / "releases" / VERSION / "README.md"
    readme.write_bytes(readme.read_bytes() + b"x" * 3_000_000)  # the server sends far more
    dest = tmp_path / "data"
    too_much = "sent more than the 11 bytes"
    with serve_static(site) as server, pytest.raises(ReleaseError, match=too_much):
        download_release(server.url, dest=dest, retry=NO_RETRY)
    parts = dest / "releases" / f".download-{VERSION}" / "parts"
    assert not any(p.stat().st_size > 11 for p in parts.rglob("*") if p.is_file())
    assert not (dest / "current").exists()


MALFORMED = {
    "no files": lambda listing: listing.pop("files"),
    "an entry without stored": lambda listing: listing["files"][0].pop("stored"),
    "no SHA256SUMS": lambda listing: listing.update(
        files=[f for f in listing["files"] if f["path"] != SUMS_FILE]
    ),
    "a file that is also a folder": lambda listing: listing["files"].append(
        {**listing["files"][0], "path": "README.md/inner", "stored": "README.md/inner"}
    ),
    "a duplicate": lambda listing: listing["files"].append(listing["files"][0]),
    "a size that is text": lambda listing: listing["files"][0].update(size="12"),
    "an entry that is a list": lambda listing: listing["files"].append([1, 2]),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_a_malformed_file_list_is_one_sentence(site: Path, tmp_path: Path, case: str) -> None:
    path, listing = _listing(site)
    MALFORMED[case](listing)
    path.write_text(json.dumps(listing))
    with serve_static(site) as server:
        result = run_cli("download", "--from", server.url, "--dest", str(tmp_path / "data"))
    assert result.returncode == 1
    error = error_line(result.stderr)
    assert FILES_FILE in error and "bug" not in error


def test_publish_refuses_a_site_whose_file_list_is_malformed(site: Path, tmp_path: Path) -> None:
    path, listing = _listing(site)
    listing["files"] = "everything"
    path.write_text(json.dumps(listing))
    release = write_release(tmp_path / "other" / VERSION)
    with pytest.raises(ReleaseError, match=r"files\.json has no list of files"):
        publish_release(release, site)


def test_a_compressed_file_that_unpacks_past_its_size_is_refused(
    site: Path, tmp_path: Path
) -> None:
    """The stored file is valid zstd of the right published sha256, but it unpacks to
    a megabyte where files.json gives 11 bytes."""
    folder = site / "releases" / VERSION
    (folder / "README.md").unlink()
    packed = folder / "README.md.zst"
    packed.write_bytes(zstandard.ZstdCompressor().compress(b"\0" * 1_000_000))
    path, listing = _listing(site)
    for entry in listing["files"]:
        if entry["path"] == "README.md":
            entry.update(
                stored="README.md.zst",
                compression="zstd",
                stored_size=packed.stat().st_size,
                stored_sha256=sha256_file(packed),
            )
    path.write_text(json.dumps(listing))
    dest = tmp_path / "data"
    bomb = "unpacks to more than the 11 bytes"
    with serve_static(site) as server, pytest.raises(ReleaseError, match=bomb):
        download_release(server.url, dest=dest, retry=NO_RETRY)
    assert not list(dest.rglob("README.md")) and not list(dest.rglob("*.unpacking"))
    assert not (dest / "current").exists()
