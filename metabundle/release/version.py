"""Release version numbers: ``YYYY.MM.DD`` with ``.N`` for later builds of a day."""

from __future__ import annotations

import re
from datetime import date
from pathlib import Path

from metabundle.errors import ConfigError

VERSION_RE = re.compile(r"^\d{4}\.\d{2}\.\d{2}(\.\d+)?$")


def check_version(version: str) -> str:
    """``version`` if it has the release form, else a :class:`ConfigError`."""
    if not VERSION_RE.match(version):
        raise ConfigError(f"Release version {version!r} is not of the form YYYY.MM.DD[.N]")
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
