"""Paths named by a release's own files stay inside the release.

``manifest.json``, ``SHA256SUMS`` and a published ``files.json`` name files by
relative path, and the manifest names the version that becomes a folder name when the
release is published or installed. Every such name must be a plain relative POSIX
path inside the release (no ``..``, nothing absolute, no backslash, no empty part, no
control character), short enough for every file system (each part at most
:data:`MAX_PART_BYTES` bytes of UTF-8, at most :data:`MAX_DEPTH` parts and
:data:`MAX_PATH_BYTES` bytes in all), every file on disk a regular file reached
through no symbolic link, and the version must pass
:func:`~metabundle.release.version.is_version`; anything else is a
:class:`~metabundle.errors.ReleaseError` naming the file and the entry (a long entry
shortened).
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

from metabundle.errors import ReleaseError
from metabundle.release.version import VERSION_FORM, is_version

MAX_PART_BYTES = 255
"""The longest file or folder name most file systems accept (ext4, APFS, NTFS)."""
MAX_DEPTH = 16
"""Folders a release path may pass through (a release nests three deep)."""
MAX_PATH_BYTES = 1024
"""The longest relative path, leaving room for the install folder under ``PATH_MAX``."""
SHOWN_CHARACTERS = 60


def shown(value: object) -> str:
    """``repr(value)``, its middle cut out when it is long (for one-line messages)."""
    text = repr(value)
    if len(text) <= SHOWN_CHARACTERS:
        return text
    length = f", {len(value):,} characters" if isinstance(value, str) else ""
    return f"{text[:40]}…{text[-15:]} (shortened{length})"


def check_member(name: object, listed_in: str) -> str:
    """``name`` if it is a safe relative path of a release file, else a ReleaseError."""
    problem = _path_problem(name)
    if problem is not None:
        raise ReleaseError(f"{listed_in} names an unsafe path {shown(name)}: {problem}")
    return str(name)


def _path_problem(name: object) -> str | None:
    """What makes ``name`` unsafe as a release path, or None when it is safe."""
    if not isinstance(name, str) or not name:
        return "it is empty or not a string"
    if any(ord(character) < 32 or character in "\x7f\\" for character in name):
        return "it holds a backslash or a control character"
    parts = name.split("/")
    if PurePosixPath(name).is_absolute() or any(part in ("", ".", "..") for part in parts):
        return "it is absolute or has an empty, '.' or '..' part"
    if len(parts) > MAX_DEPTH:
        return f"it is {len(parts):,} parts deep, more than {MAX_DEPTH}"
    try:
        lengths = [len(part.encode("utf-8")) for part in parts]
    except UnicodeEncodeError:
        return "it is not valid Unicode"
    if sum(lengths) + len(parts) - 1 > MAX_PATH_BYTES:
        return f"it is longer than {MAX_PATH_BYTES:,} bytes"
    longest = max(range(len(parts)), key=lengths.__getitem__)
    if lengths[longest] > MAX_PART_BYTES:
        return f"its part {shown(parts[longest])} is longer than {MAX_PART_BYTES} bytes"
    return None


def check_release_version(version: object, listed_in: str) -> str:
    """``version`` if it is a release version (``YYYY.MM.DD[.N]``), else a ReleaseError."""
    if not is_version(version):
        raise ReleaseError(
            f"{listed_in} gives the version {shown(version)}, which is not of the form "
            f"{VERSION_FORM}"
        )
    return str(version)


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
