"""File digests, shared by the fetcher (downloads, local inputs) and the release files
(manifest, ``SHA256SUMS``, verification), so reading a release never imports HTTP."""

from __future__ import annotations

import hashlib
from pathlib import Path

CHUNK_BYTES = 1 << 20


def sha256_file(path: Path) -> str:
    """Hex SHA-256 of a file, read in chunks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(CHUNK_BYTES), b""):
            digest.update(chunk)
    return digest.hexdigest()


def digest_of(items: list[str]) -> str:
    """A short (16 hex digits) SHA-256 of ``items``, one per line: a change token."""
    return hashlib.sha256("\n".join(items).encode()).hexdigest()[:16]
