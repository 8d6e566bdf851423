"""The release an MCP server answers from, opened on the first tool call.

Listing tools and writing the instructions need only the release's manifest (a small
JSON file); opening the release imports DuckDB, NumPy and PyArrow, so it waits for
the first call that needs it. A release that cannot be opened then answers each call
with the typed ``release_damaged`` error.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from metabundle.release.manifest import read_manifest
from metabundle.release.pointer import resolve_release

if TYPE_CHECKING:
    from metabundle.search.release import Release


class ReleaseHandle:
    """A release by path, with its manifest read now and the release opened on first
    use; or an already opened release (tests, in-process servers)."""

    def __init__(self, path: Path | None = None, opened: Release | None = None) -> None:
        if opened is not None:
            self._release: Release | None = opened
            self.manifest: dict[str, Any] = opened.manifest
            self._owned = False
        elif path is not None:
            self.path = resolve_release(Path(path))
            self.manifest = read_manifest(self.path)
            self._release = None
            self._owned = True
        else:
            raise ValueError("a release handle needs a path or an opened release")
        self.version: str = self.manifest["version"]
        self._lock = threading.Lock()

    def get(self) -> Release:
        """The opened release (opening it on the first call)."""
        with self._lock:
            if self._release is None:
                from metabundle.search.release import Release

                self._release = Release.open(self.path)
            return self._release

    def close(self) -> None:
        """Close the release if this handle opened it."""
        if self._owned and self._release is not None:
            self._release.close()
            self._release = None
