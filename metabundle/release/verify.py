"""Check an installed release: every file against ``SHA256SUMS`` and the manifest."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from metabundle.digest import sha256_file
from metabundle.errors import ReleaseError
from metabundle.release.checksums import SUMS_FILE, read_sums
from metabundle.release.digest_record import record_digests
from metabundle.release.manifest import MANIFEST_FILE, read_manifest
from metabundle.release.paths import check_member, plain_files


@dataclass(frozen=True)
class VerifyReport:
    """The outcome of a successful verification."""

    path: Path
    version: str
    files: int
    bytes: int
    digests: dict[str, str]
    """Relative path → the sha256 every file was just found to have."""


def verify_release(root: Path, record: bool = True) -> VerifyReport:
    """Re-hash every file; raise :class:`ReleaseError` naming the first that differs.
    With ``record``, the digests found are kept in the release's digest record for the
    processes that open it (a folder about to be renamed records under its final name)."""
    root = root.resolve()
    if not root.is_dir():
        raise ReleaseError(f"{root} is not a release folder")
    present = plain_files(root) - {SUMS_FILE}
    manifest = read_manifest(root)
    version = manifest["version"]
    if not (root / SUMS_FILE).exists():
        raise ReleaseError(f"{root} has no {SUMS_FILE}")
    try:
        sums = read_sums(root)
    except ValueError as error:
        raise ReleaseError(f"{root / SUMS_FILE}: {error}") from None
    for name in sums:
        check_member(name, f"{root / SUMS_FILE}")
    listed = manifest_entries(root, manifest)
    for name in sorted(set(listed) | {MANIFEST_FILE}):
        if name not in sums:
            raise ReleaseError(f"{name} is in the manifest but not in {SUMS_FILE}")
    unexpected = sorted(present - set(sums))
    if unexpected:
        raise ReleaseError(f"{unexpected[0]} is in the release but not in {SUMS_FILE}")
    total = 0
    for name, digest in sorted(sums.items()):
        path = root / name
        if name not in present:
            raise ReleaseError(f"{name} is listed in {SUMS_FILE} but missing")
        if sha256_file(path) != digest:
            raise ReleaseError(f"{name} does not match its sha256 in {SUMS_FILE}")
        entry = listed.get(name)
        if entry is not None and entry["sha256"] != digest:
            raise ReleaseError(f"{name} has a different sha256 in {MANIFEST_FILE}")
        if entry is not None and entry["size"] != path.stat().st_size:
            raise ReleaseError(f"{name} has a different size in {MANIFEST_FILE}")
        total += path.stat().st_size
    if record:
        record_digests(root, sums)
    return VerifyReport(root, version, len(sums), total, dict(sums))


def manifest_entries(root: Path, manifest: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The file entries of a manifest :func:`read_manifest` returned, by path, each a
    safe path with a size and a sha256."""
    where = f"{root / MANIFEST_FILE}"
    entries: dict[str, dict[str, Any]] = {}
    for entry in manifest["files"]:
        if not isinstance(entry, dict):
            raise ReleaseError(f"{where} lists a file entry that is not an object")
        name = check_member(entry.get("path"), where)
        size, digest = entry.get("size"), entry.get("sha256")
        if type(size) is not int or size < 0 or not isinstance(digest, str) or len(digest) != 64:
            raise ReleaseError(f"{where} gives {name} no valid size and sha256")
        entries[name] = entry
    return entries
