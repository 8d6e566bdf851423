"""Which release a Datasette instance serves, opened once for the search core.

The plugin's release is the ``release`` of its plugin configuration
(``plugins: {metabundle: {release: DIR}}`` in the metadata), or else the folder of
the first database file that sits in a release (next to a ``manifest.json``). A
release is opened once per process and path and shared by every instance serving it.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from metabundle.errors import MetabundleError
from metabundle.release.manifest import MANIFEST_FILE
from metabundle.search.release import Release

PLUGIN_NAME = "metabundle"

_OPEN: dict[Path, Release] = {}
_LOCK = threading.Lock()


class NoRelease(MetabundleError):
    """The instance serves no metabundle release (e.g. a SQLite file published alone)."""


def release_database(datasette: Any) -> tuple[str, Path] | None:
    """The name and folder of the first database whose file sits in a release."""
    for name, database in datasette.databases.items():
        if database.path and (Path(database.path).parent / MANIFEST_FILE).is_file():
            return name, Path(database.path).parent.resolve()
    return None


def release_path(datasette: Any) -> Path:
    """The folder of the release this instance serves; :class:`NoRelease` if none."""
    configured = (datasette.plugin_config(PLUGIN_NAME) or {}).get("release")
    if configured:
        return Path(configured).expanduser().resolve()
    found = release_database(datasette)
    if found is None:
        raise NoRelease(
            "This Datasette serves no metabundle release, so the search core is not "
            "available here; serve a release with `metabundle datasette`."
        )
    return found[1]


def release_for(datasette: Any) -> Release:
    """The opened release of this instance (opened on first use, then shared)."""
    path = release_path(datasette)
    with _LOCK:
        if path not in _OPEN:
            _OPEN[path] = Release.open(path)
        return _OPEN[path]
