"""Publish releases as a static site: a folder any web server or object store serves.

Layout of a site (``TARGET``)::

    latest                          the newest published version, one line
    releases/index.json             every published version with its manifest summary
    releases/<version>/files.json   what to download: each file's stored name, size and
                                    sha256 (stored and uncompressed)
    releases/<version>/<path>[.zst] the release's files, zstd-compressed where that pays

``latest`` is a small file rather than a symlink because symlinks do not survive
object stores. A published version is immutable: publishing it again with identical
files is a no-op, with different files an error. A version appears atomically (it is
written to ``releases/.tmp-<version>-<pid>/`` and renamed); ``index.json`` and
``latest`` are rewritten after it, so a reader never sees a listed but partial version.
To serve the site from an object store, upload ``releases/<version>/`` first and
``releases/index.json`` and ``latest`` last.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import zstandard

from metabundle.digest import sha256_file
from metabundle.errors import ConfigError, ReleaseError
from metabundle.release.checksums import SUMS_FILE, read_sums
from metabundle.release.manifest import MANIFEST_FILE, read_json_document, read_manifest
from metabundle.release.paths import check_member
from metabundle.release.temps import TMP_PREFIX, clean_stale_temps
from metabundle.release.verify import verify_release
from metabundle.release.version import is_version, version_key
from metabundle.settings import RuntimeSettings

SITE_FORMAT = "metabundle-site/1"
RELEASES_DIR = "releases"
INDEX_FILE = "index.json"
LATEST_FILE = "latest"
FILES_FILE = "files.json"
ZSTD_SUFFIX = ".zst"
DEFAULT_LEVEL = 3
COMPRESS_MIN_BYTES = 64 * 1024
COMPRESS_MAX_RATIO = 0.9
ALREADY_COMPRESSED = (".parquet", ".zst", ".gz", ".zip", ".bz2", ".xz")
CHUNK_BYTES = 1 << 20
MAX_FILE_BYTES = 1 << 40
"""The largest size a file list may give a file (1 TiB; a whole release is a few GB)."""

Reporter = Callable[[str], None]


def configured_target() -> Path | None:
    """The site folder named by ``METABUNDLE_PUBLISH_TO``, if any."""
    target = RuntimeSettings.load().publish_to
    return target.expanduser() if target is not None else None


def require_target(target: Path | None = None) -> Path:
    """``target``, else ``METABUNDLE_PUBLISH_TO``; a :class:`ConfigError` without either."""
    chosen = target or configured_target()
    if chosen is None:
        raise ConfigError("Give the site folder to publish into with --to or METABUNDLE_PUBLISH_TO")
    return chosen


@dataclass(frozen=True)
class PublishResult:
    """What publishing did: ``published`` a new version or found it ``unchanged``."""

    version: str
    path: Path
    status: str
    files: int
    size: int
    stored_size: int


def publish_release(
    release: Path,
    target: Path,
    *,
    level: int = DEFAULT_LEVEL,
    report: Reporter = lambda _: None,
) -> PublishResult:
    """Verify ``release`` and publish it under ``target``; refresh the index and latest."""
    release = release.resolve()
    verified = verify_release(release)
    version = verified.version
    sums = {**read_sums(release), SUMS_FILE: sha256_file(release / SUMS_FILE)}
    releases = target / RELEASES_DIR
    releases.mkdir(parents=True, exist_ok=True)
    final = releases / version
    status = "unchanged"
    if not final.exists():
        status = _publish_new(release, final, sums, level, report)
    if status == "unchanged":
        _check_same(final, version, sums)
        report(f"release {version} is already published with identical files")
    write_index(target)
    listing = read_files_list(final)
    return PublishResult(
        version=version,
        path=final,
        status=status,
        files=len(listing["files"]),
        size=sum(f["size"] for f in listing["files"]),
        stored_size=sum(f["stored_size"] for f in listing["files"]),
    )


def _publish_new(
    release: Path, final: Path, sums: dict[str, str], level: int, report: Reporter
) -> str:
    """Write the version into a temporary folder and rename it to ``final``;
    ``unchanged`` when another publisher renamed the same version in first."""
    clean_stale_temps(final.parent)
    temp = final.with_name(f"{TMP_PREFIX}{final.name}-{os.getpid()}")
    shutil.rmtree(temp, ignore_errors=True)
    temp.mkdir()
    try:
        _write_version(release, temp, final.name, sums, level, report)
        temp.rename(final)
    except OSError:
        shutil.rmtree(temp, ignore_errors=True)
        if final.exists():
            return "unchanged"
        raise
    except BaseException:
        shutil.rmtree(temp, ignore_errors=True)
        raise
    return "published"


def _write_version(
    release: Path, folder: Path, version: str, sums: dict[str, str], level: int, report: Reporter
) -> None:
    """Copy or compress every file of the release into ``folder`` and list them."""
    entries = []
    for name in sorted(sums):
        entry = _store(release / name, folder, name, sums[name], level)
        entries.append(entry)
        how = "zstd" if entry["compression"] == "zstd" else "as is"
        report(f"{name}: {entry['size']:,} → {entry['stored_size']:,} bytes ({how})")
    listing = {
        "format": SITE_FORMAT,
        "version": version,
        "published_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "files": entries,
    }
    (folder / FILES_FILE).write_text(json.dumps(listing, indent=1, sort_keys=True))


def _worth_compressing(path: Path) -> bool:
    return path.stat().st_size >= COMPRESS_MIN_BYTES and not path.name.endswith(ALREADY_COMPRESSED)


def _store(source: Path, folder: Path, name: str, sha256: str, level: int) -> dict[str, Any]:
    """Write one file (compressed when that saves at least a tenth) and describe it."""
    size = source.stat().st_size
    destination = folder / name
    destination.parent.mkdir(parents=True, exist_ok=True)
    if _worth_compressing(source):
        packed = destination.with_name(destination.name + ZSTD_SUFFIX)
        stored_sha = _compress(source, packed, level)
        stored_size = packed.stat().st_size
        if stored_size <= size * COMPRESS_MAX_RATIO:
            return _entry(name, size, sha256, f"{name}{ZSTD_SUFFIX}", stored_size, stored_sha)
        packed.unlink()
    shutil.copyfile(source, destination)
    return _entry(name, size, sha256, name, size, sha256)


def _entry(
    name: str, size: int, sha256: str, stored: str, stored_size: int, stored_sha: str
) -> dict[str, Any]:
    return {
        "path": name,
        "size": size,
        "sha256": sha256,
        "stored": stored,
        "stored_size": stored_size,
        "stored_sha256": stored_sha,
        "compression": "zstd" if stored != name else "none",
    }


def _compress(source: Path, destination: Path, level: int) -> str:
    """zstd-compress ``source`` into ``destination``; the sha256 of what was written."""
    digest = hashlib.sha256()
    compressor = zstandard.ZstdCompressor(level=level, threads=-1, write_checksum=True)

    class _Hashing:
        def __init__(self, handle: Any) -> None:
            self.handle = handle

        def write(self, data: bytes) -> int:
            digest.update(data)
            return self.handle.write(data)

    with source.open("rb") as reader, destination.open("wb") as handle:
        compressor.copy_stream(reader, _Hashing(handle), read_size=CHUNK_BYTES)
    return digest.hexdigest()


def _check_same(folder: Path, version: str, sums: dict[str, str]) -> None:
    """A published version must hold exactly these files; name the first that differs."""
    published = {f["path"]: f["sha256"] for f in read_files_list(folder)["files"]}
    for name in sorted(set(published) | set(sums)):
        if published.get(name) != sums.get(name):
            raise ReleaseError(
                f"Release {version} is already published at {folder} with a different "
                f"{name}; published versions are immutable, so build a new version"
            )


def read_files_list(folder: Path) -> dict[str, Any]:
    """The ``files.json`` of a published version folder, checked."""
    missing = f"{folder} is not a published release (no {FILES_FILE})"
    listing = read_json_document(folder / FILES_FILE, SITE_FORMAT, missing)
    return check_files_list(listing, str(folder / FILES_FILE), folder.name)


def check_files_list(listing: Any, where: str, version: str) -> dict[str, Any]:
    """``listing`` if it is a well-formed file list of ``version`` whose every path
    stays inside the release, else a :class:`ReleaseError` naming ``where``."""
    if not isinstance(listing, dict) or listing.get("format") != SITE_FORMAT:
        raise ReleaseError(f"{where} is not a {SITE_FORMAT} file list")
    if listing.get("version") != version or not isinstance(listing.get("published_at"), str):
        raise ReleaseError(f"{where} is not the file list of release {version}")
    files = listing.get("files")
    if not isinstance(files, list):
        raise ReleaseError(f"{where} has no list of files")
    names: set[str] = set()
    for entry in files:
        name = _check_entry(entry, where)
        if name in names:
            raise ReleaseError(f"{where} lists {name} twice")
        names.add(name)
    stored = sorted({*names, *(entry["stored"] for entry in files)})
    for first, second in itertools.pairwise(stored):
        if second.startswith(first + "/"):
            raise ReleaseError(f"{where} lists {first} both as a file and as a folder")
    for required in (MANIFEST_FILE, SUMS_FILE):
        if required not in names:
            raise ReleaseError(f"{where} does not list {required}")
    return listing


def _check_entry(entry: Any, where: str) -> str:
    """The path of one well-formed ``files.json`` entry."""
    if not isinstance(entry, dict):
        raise ReleaseError(f"{where} lists a file entry that is not an object")
    name = check_member(entry.get("path"), where)
    stored = check_member(entry.get("stored"), where)
    compression = {name: "none", f"{name}{ZSTD_SUFFIX}": "zstd"}.get(stored)
    if compression is None or entry.get("compression") != compression:
        raise ReleaseError(f"{where} gives {name} an unknown stored form or compression")
    for key in ("size", "stored_size"):
        if type(entry.get(key)) is not int or entry[key] < 0:
            raise ReleaseError(f"{where} gives {name} no valid {key}")
        if entry[key] > MAX_FILE_BYTES:
            raise ReleaseError(
                f"{where} gives {name} a {key} of {entry[key]:,} bytes, more than the "
                f"{MAX_FILE_BYTES:,} a release file may have"
            )
    for key in ("sha256", "stored_sha256"):
        value = entry.get(key)
        if not isinstance(value, str) or len(value) != 64:
            raise ReleaseError(f"{where} gives {name} no valid {key}")
    return name


# -- index.json and latest ----------------------------------------------------------------


def _manifest_summary(folder: Path) -> dict[str, Any]:
    """The manifest of a published version without its file list (that is files.json)."""
    manifest_file = folder / MANIFEST_FILE
    if manifest_file.exists():
        manifest = read_manifest(folder)
    else:  # stored compressed: read it through zstd
        with (folder / f"{MANIFEST_FILE}{ZSTD_SUFFIX}").open("rb") as handle:
            manifest = json.loads(zstandard.ZstdDecompressor().stream_reader(handle).read())
    return {key: value for key, value in manifest.items() if key != "files"}


def published_versions(target: Path) -> list[str]:
    """Versions published under ``target``, oldest first."""
    releases = target / RELEASES_DIR
    if not releases.is_dir():
        return []
    found = [p.name for p in releases.iterdir() if is_version(p.name) and (p / FILES_FILE).exists()]
    return sorted(found, key=version_key)


def write_index(target: Path) -> dict[str, Any]:
    """Rewrite ``releases/index.json`` and ``latest`` from the published version folders."""
    versions = []
    for version in published_versions(target):
        folder = target / RELEASES_DIR / version
        listing = read_files_list(folder)
        manifest_entry = next(f for f in listing["files"] if f["path"] == MANIFEST_FILE)
        versions.append(
            {
                "version": version,
                "published_at": listing["published_at"],
                "files": f"{version}/{FILES_FILE}",
                "manifest": f"{version}/{manifest_entry['stored']}",
                "manifest_sha256": manifest_entry["sha256"],
                "size": sum(f["size"] for f in listing["files"]),
                "stored_size": sum(f["stored_size"] for f in listing["files"]),
                "summary": _manifest_summary(folder),
            }
        )
    latest = versions[-1]["version"] if versions else None
    index = {"format": SITE_FORMAT, "latest": latest, "versions": versions[::-1]}
    _write_atomic(target / RELEASES_DIR / INDEX_FILE, json.dumps(index, indent=1, sort_keys=True))
    if latest is not None:
        _write_atomic(target / LATEST_FILE, latest + "\n")
    return index


def _write_atomic(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` in one step (left alone when already equal)."""
    if path.exists() and path.read_text() == text:
        return
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temp.write_text(text)
    temp.replace(path)
