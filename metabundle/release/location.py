"""Where releases live on this machine, and which one a command opens by default.

``metabundle download`` installs into the *data dir*: ``METABUNDLE_DATA_DIR`` when
set, else the platform's user data folder (``platformdirs.user_data_dir("metabundle")``:
``~/.local/share/metabundle`` on Linux, ``~/Library/Application Support/metabundle``
on macOS, ``%LOCALAPPDATA%\\metabundle`` on Windows), as ``releases/<version>/`` plus
a ``current`` link.

Commands that read a release (``search``, ``mcp``, ``info``, ``verify``,
``datasette``) take the first of:

1. ``--release PATH`` (a release folder, a ``current`` link or a build folder);
2. ``METABUNDLE_RELEASE``;
3. ``./build/current`` (what ``metabundle build`` writes by default), if it exists;
4. ``<data dir>/current`` (what ``metabundle download`` installs), if it exists.
"""

from __future__ import annotations

from pathlib import Path

import platformdirs

from metabundle.errors import ReleaseError
from metabundle.release.pointer import resolve_release
from metabundle.settings import RuntimeSettings

APP_NAME = "metabundle"
BUILD_CURRENT = Path("build") / "current"


def data_dir() -> Path:
    """The folder downloads install into (``METABUNDLE_DATA_DIR`` or the platform's)."""
    configured = RuntimeSettings.load().data_dir
    folder = configured or platformdirs.user_data_dir(APP_NAME, appauthor=False)
    return Path(folder).expanduser()


def default_release_candidates() -> list[Path]:
    """The places looked at, in order, when no ``--release`` is given."""
    configured = RuntimeSettings.load().release
    if configured:
        return [configured]
    return [BUILD_CURRENT, data_dir() / "current"]


def find_release(explicit: Path | None = None) -> Path:
    """The release a reading command opens: ``explicit``, else the first default that
    exists; a :class:`ReleaseError` saying where it looked when there is none."""
    if explicit is not None:
        return resolve_release(explicit)
    candidates = default_release_candidates()
    for candidate in candidates:
        if candidate.expanduser().exists():
            return resolve_release(candidate)
    if len(candidates) == 1:
        return resolve_release(candidates[0])
    looked = " and ".join(str(c) for c in candidates)
    raise ReleaseError(
        f"No release found in {looked}; pass --release, build one with `metabundle build` "
        "or install one with `metabundle download --from URL`"
    )
