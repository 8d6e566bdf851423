"""Paths named by a release's own files stay inside the release.

``manifest.json``, ``SHA256SUMS`` and a published ``files.json`` name files by
relative path, and the manifest names the version that becomes a folder name when the
release is published or installed. Every such name must be a plain relative POSIX
path inside the release (no ``..``, nothing absolute, no backslash, no empty part),
every file on disk a regular file reached through no symbolic link, and the version
must match :data:`~metabundle.release.version.VERSION_RE`; anything else is a
:class:`~metabundle.errors.ReleaseError` naming the file and the entry.
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

from metabundle.errors import ReleaseError
from metabundle.release.version import VERSION_RE


def check_member(name: object, listed_in: str) -> str:
    """``name`` if it is a safe relative path of a release file, else a ReleaseError."""
    if not isinstance(name, str) or not name or "\\" in name or "\x00" in name:
        raise ReleaseError(f"{listed_in} names an unsafe path {name!r}")
    path = PurePosixPath(name)
    if path.is_absolute() or any(part in ("", ".", "..") for part in name.split("/")):
        raise ReleaseError(f"{listed_in} names an unsafe path {name!r}")
    return name


def check_release_version(version: object, listed_in: str) -> str:
    """``version`` if it has the release form ``YYYY.MM.DD[.N]``, else a ReleaseError."""
    if not isinstance(version, str) or not VERSION_RE.match(version):
        raise ReleaseError(
            f"{listed_in} gives the version {version!r}, which is not of the form YYYY.MM.DD[.N]"
        )
    return version


def plain_files(root: Path) -> set[str]:
    """Every file under ``root`` by relative path; a ReleaseError for a symbolic link or
    anything that is neither a folder nor a regular file."""
    found: set[str] = set()
    for folder, dirs, files in os.walk(root):
        here = Path(folder)
        for name in [*dirs, *files]:
            path = here / name
            relative = path.relative_to(root).as_posix()
            if path.is_symlink():
                raise ReleaseError(
                    f"{relative} in {root} is a symbolic link; a release holds plain files only"
                )
            if name in files:
                if not path.is_file():
                    raise ReleaseError(f"{relative} in {root} is not a regular file")
                found.add(relative)
    return found
