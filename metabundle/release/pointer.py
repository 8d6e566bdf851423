"""The ``current`` pointer: a relative symlink to the newest good release."""

from __future__ import annotations

import os
from pathlib import Path

from metabundle.errors import ReleaseError


def point_current(link: Path, release: Path) -> None:
    """Atomically make ``link`` point at ``release`` (a folder next to or below it)."""
    target = os.path.relpath(release, link.parent)
    temp = link.with_name(f".{link.name}.{os.getpid()}.tmp")
    temp.unlink(missing_ok=True)
    temp.symlink_to(target, target_is_directory=True)
    temp.replace(link)


def resolve_release(path: Path) -> Path:
    """A release folder from a path that is one, or a ``current`` link, or a build
    folder holding ``current``."""
    candidate = path.expanduser()
    if (candidate / "current").exists() and not (candidate / "manifest.json").exists():
        candidate = candidate / "current"
    if not candidate.exists():
        raise ReleaseError(f"No release at {path}; build one with `metabundle build`")
    resolved = candidate.resolve()
    if not (resolved / "manifest.json").is_file():
        raise ReleaseError(f"{path} is not a release folder (no manifest.json)")
    return resolved
