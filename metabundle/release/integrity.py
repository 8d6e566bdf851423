"""The check a serving process runs when it opens a release: cheap, and enough to
refuse a damaged release instead of serving wrong answers.

:func:`check_release_files` reads ``manifest.json`` (its shape checked by
:func:`~metabundle.release.manifest.read_manifest`) and ``SHA256SUMS`` and checks: the
manifest's own sha256 against ``SHA256SUMS``; that every file the manifest lists is a
regular file inside the release (no ``..``, no symbolic link) with exactly its listed
size; and the sha256 of the files read at open (:data:`HASHED_AT_OPEN`: the keyword
arrays, the ANN metadata and the DuckDB database, whose damaged blocks DuckDB would
otherwise find only when a query reads them). The large memory-mapped files (vectors,
ANN indexes) are hashed by :func:`check_digest` the first time a process maps them.
``metabundle verify`` stays the deep check (every byte of every file).

A file hashed once is not hashed again while it keeps its inode, size and
modification time: within a process (a set), and across processes through the
release's digest record (``release/digest_record.py``, beside the release folder,
written by the build, by ``metabundle verify`` and ``download`` and by the first
process that hashes a file). Hashing grows with the corpus (about 12 GB of vectors
and indexes at ten million documents) and a serving process must answer its first
query in a second, so an installed release is hashed once, not per process. What
this cannot see: bytes changed in place after the record was written, with the
file's inode, size and modification time kept (no writer of a release does that; a
failing disk or a deliberate edit can). ``metabundle verify`` finds those.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from metabundle.digest import sha256_file
from metabundle.errors import ReleaseError
from metabundle.release.checksums import SUMS_FILE, read_sums
from metabundle.release.digest_record import read_record, record_digests
from metabundle.release.manifest import MANIFEST_FILE, read_manifest
from metabundle.release.paths import check_member
from metabundle.release.verify import manifest_entries

HASHED_AT_OPEN = ("fts/", "ann/*.json", "metabundle.duckdb")
_MATCHED: set[tuple[str, int, int, int, str]] = set()
"""Files whose sha256 matched, by path, inode, size and modification time."""
DAMAGED = "the release is damaged; run `metabundle verify` on it, then rebuild or download it"


def check_release_files(root: Path) -> dict[str, Any]:
    """The manifest of the release at ``root`` once its files pass the open-time check;
    a :class:`ReleaseError` naming the first file that does not."""
    manifest = read_manifest(root)
    try:
        sums = read_sums(root)
    except FileNotFoundError:
        raise ReleaseError(f"{root} has no {SUMS_FILE}; {DAMAGED}") from None
    except ValueError as error:
        raise ReleaseError(f"{SUMS_FILE}: {error}; {DAMAGED}") from None
    for name in sums:
        check_member(name, SUMS_FILE)
    if sums.get(MANIFEST_FILE) != sha256_file(root / MANIFEST_FILE):
        raise ReleaseError(f"{MANIFEST_FILE} does not match its sha256 in {SUMS_FILE}; {DAMAGED}")
    entries = manifest_entries(root, manifest)
    for name, entry in sorted(entries.items()):
        path = _listed_file(root, name)
        if path.stat().st_size != entry["size"]:
            raise ReleaseError(
                f"{name} is {path.stat().st_size:,} bytes, not the {entry['size']:,} bytes "
                f"{MANIFEST_FILE} gives; {DAMAGED}"
            )
        if hashed_at_open(name):
            check_digest(root, entry)
    return manifest


def check_digest(root: Path, entry: dict[str, Any]) -> None:
    """The file of a manifest ``entry`` must have its listed sha256 (hashed once for the
    same file, size and modification time: see the module's docstring)."""
    path = _listed_file(root, entry["path"])
    stat = path.stat()
    key = (str(path.resolve()), stat.st_ino, stat.st_size, stat.st_mtime_ns, entry["sha256"])
    if key in _MATCHED:
        return
    if read_record(root).get(entry["path"]) != [*key[1:]]:
        if sha256_file(path) != entry["sha256"]:
            raise ReleaseError(
                f"{entry['path']} does not match its sha256 in {MANIFEST_FILE}; {DAMAGED}"
            )
        record_digests(root, {entry["path"]: entry["sha256"]})
    _MATCHED.add(key)


def forget_digests() -> None:
    """Forget which files matched, so the next check hashes them again (benchmarks)."""
    _MATCHED.clear()


def _listed_file(root: Path, name: str) -> Path:
    path = root / name
    if path.is_symlink() or not path.resolve().is_relative_to(root.resolve()):
        raise ReleaseError(f"{name} is a symbolic link; a release holds plain files only")
    if not path.is_file():
        raise ReleaseError(f"{name} is listed in {MANIFEST_FILE} but missing; {DAMAGED}")
    return path


def hashed_at_open(name: str) -> bool:
    """Whether the open-time check hashes the release file ``name``."""
    return any(
        name.startswith(pattern) if pattern.endswith("/") else Path(name).match(pattern)
        for pattern in HASHED_AT_OPEN
    )
