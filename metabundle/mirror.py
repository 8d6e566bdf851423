"""``metabundle mirror``: download the real upstream into the mirror layout.

Every fetched file is keyed by its mirror path, so mirroring is fetching each
source with the public URLs and copying each file to ``DIR/<mirror path>``. The
result can be served by any static web server and passed to ``--upstream``.
Files an installed package ships (most Imaging Data Commons indices) are not copied.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from metabundle.config import BuildSettings
from metabundle.errors import ConfigError
from metabundle.sources.steps import fetch_source


def mirror_sources(
    settings: BuildSettings, destination: Path, report: Callable[[str], None]
) -> dict[str, int]:
    """Copy every upstream file of ``settings.sources`` under ``destination``."""
    try:
        destination.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ConfigError(f"Cannot create --to folder {destination}: {error.strerror}") from None
    copied: dict[str, int] = {}
    for name in settings.sources:
        snapshot = fetch_source(name, settings, lambda text, n=name: report(f"{n}: {text}"))
        fetched = [raw for raw in snapshot.files if not raw.packaged]
        for raw in fetched:
            target = destination / raw.key
            target.parent.mkdir(parents=True, exist_ok=True)
            temp = target.with_name(target.name + ".part")
            shutil.copyfile(raw.path, temp)
            temp.replace(target)
        copied[name] = len(fetched)
        report(f"{name}: {len(fetched)} files mirrored")
    return copied
