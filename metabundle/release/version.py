"""Release version numbers: ``YYYY.MM.DD`` with ``.N`` for later builds of a day.

A version becomes a folder name when a release is written, published or installed,
so it is checked strictly wherever it is read (a flag, a manifest, a site's
``latest``): ASCII digits only, a real date, at most six digits of build number, and
nothing before or after it (no trailing newline, no space).
"""

from __future__ import annotations

import re
from datetime import date
from pathlib import Path

from metabundle.errors import ConfigError

VERSION_FORM = "YYYY.MM.DD[.N]"
_VERSION = re.compile(r"([0-9]{4})\.([0-9]{2})\.([0-9]{2})(?:\.[0-9]{1,6})?")


def is_version(text: object) -> bool:
    """Whether ``text`` is exactly a release version: :data:`VERSION_FORM` in ASCII
    digits, of a real date, with nothing around it."""
    match = _VERSION.fullmatch(text) if isinstance(text, str) else None
    if match is None:
        return False
    try:
        date(*(int(part) for part in match.groups()))
    except ValueError:
        return False
    return True


def check_version(version: str) -> str:
    """``version`` if it has the release form, else a :class:`ConfigError`."""
    if not is_version(version):
        raise ConfigError(f"Release version {version!r} is not of the form {VERSION_FORM}")
    return version


def version_key(version: str) -> tuple[int, ...]:
    """Sort key that orders versions by date, then build number."""
    return tuple(int(part) for part in version.split("."))


def next_version(releases_dir: Path, today: date) -> str:
    """The first free version for ``today`` among the folders in ``releases_dir``."""
    base = today.strftime("%Y.%m.%d")
    taken = {p.name for p in releases_dir.iterdir()} if releases_dir.is_dir() else set()
    if base not in taken:
        return base
    suffix = 1
    while f"{base}.{suffix}" in taken:
        suffix += 1
    return f"{base}.{suffix}"
