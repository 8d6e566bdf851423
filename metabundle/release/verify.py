"""Check an installed release: every file against ``SHA256SUMS`` and the manifest."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from metabundle.digest import sha256_file
from metabundle.errors import ReleaseError
from metabundle.release.checksums import SUMS_FILE, read_sums
from metabundle.release.manifest import MANIFEST_FILE, read_manifest


@dataclass(frozen=True)
class VerifyReport:
    """The outcome of a successful verification."""

    path: Path
    version: str
    files: int
    bytes: int


def verify_release(root: Path) -> VerifyReport:
    """Re-hash every file; raise :class:`ReleaseError` naming the first that differs."""
    root = root.resolve()
    if not root.is_dir():
        raise ReleaseError(f"{root} is not a release folder")
    manifest = read_manifest(root)
    if not (root / SUMS_FILE).exists():
        raise ReleaseError(f"{root} has no {SUMS_FILE}")
    try:
        sums = read_sums(root)
    except ValueError as error:
        raise ReleaseError(f"{root / SUMS_FILE}: {error}") from None
    listed = {entry["path"]: entry for entry in manifest["files"]}
    for name in sorted(set(listed) | {MANIFEST_FILE}):
        if name not in sums:
            raise ReleaseError(f"{name} is in the manifest but not in {SUMS_FILE}")
    present = {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()} - {SUMS_FILE}
    unexpected = sorted(present - set(sums))
    if unexpected:
        raise ReleaseError(f"{unexpected[0]} is in the release but not in {SUMS_FILE}")
    total = 0
    for name, digest in sorted(sums.items()):
        path = root / name
        if not path.is_file():
            raise ReleaseError(f"{name} is listed in {SUMS_FILE} but missing")
        if sha256_file(path) != digest:
            raise ReleaseError(f"{name} does not match its sha256 in {SUMS_FILE}")
        entry = listed.get(name)
        if entry is not None and entry["sha256"] != digest:
            raise ReleaseError(f"{name} has a different sha256 in {MANIFEST_FILE}")
        total += path.stat().st_size
    return VerifyReport(root, manifest["version"], len(sums), total)
