"""Serve a release with Datasette, or write a folder to deploy it from.

:func:`make_datasette` builds the instance ``metabundle datasette`` serves (and the
tests exercise): the release's ``metabundle.sqlite`` opened immutable (read-only, no
locking), with the release's rendered metadata, settings and templates
(``<release>/datasette/``), and table counts and file hash taken from the manifest so
that start-up neither counts nor hashes the large file. A release built before it
carried ``datasette/`` gets those files rendered on the fly.

:func:`write_publish_dir` writes what a deployment needs: a copy of the release
(hard links where possible), a Dockerfile serving it with ``metabundle datasette``,
the plugin's install line and Datasette with every installed Datasette plugin pinned
to the version served here (``requirements.txt``), a ``publish.sh`` for ``datasette
publish`` and a README.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import platformdirs
from datasette.app import Datasette

from metabundle import __version__
from metabundle.errors import ConfigError
from metabundle.release.datasette_meta import (
    DATABASE,
    METADATA_FILE,
    RELEASE_FOLDER,
    SETTINGS_FILE,
    SQLITE_FILE,
    TEMPLATES_FOLDER,
    write_datasette_files,
)
from metabundle.release.manifest import MANIFEST_FILE, read_manifest
from metabundle.release.pointer import resolve_release

PUBLISHED_RELEASE = "release"


@dataclass(frozen=True)
class DatasetteFiles:
    """The files Datasette is started with for one release."""

    database: Path
    metadata: Path
    settings: Path
    templates: Path

    @classmethod
    def in_folder(cls, database: Path, folder: Path) -> DatasetteFiles:
        return cls(
            database, folder / METADATA_FILE, folder / SETTINGS_FILE, folder / TEMPLATES_FOLDER
        )


def datasette_files(release: Path, fallback: Path | None = None) -> DatasetteFiles:
    """The release's own Datasette files, or (for an older release without them) files
    rendered into ``fallback`` (by default a user cache folder named after the release's
    manifest hash, reused by later runs)."""
    database = release / SQLITE_FILE
    if not database.is_file():
        raise ConfigError(f"{release} has no {SQLITE_FILE}")
    own = release / RELEASE_FOLDER
    if (own / METADATA_FILE).is_file():
        return DatasetteFiles.in_folder(database, own)
    folder = fallback or _cache_folder(release)
    write_datasette_files(release, read_manifest(release), folder=folder)
    return DatasetteFiles.in_folder(database, folder)


def _cache_folder(release: Path) -> Path:
    digest = hashlib.sha256((release / MANIFEST_FILE).read_bytes()).hexdigest()[:16]
    cache = Path(platformdirs.user_cache_dir("metabundle", appauthor=False))
    return cache / "datasette" / f"{release.name}-{digest}"


def inspect_data(release: Path) -> dict[str, Any]:
    """Datasette's inspect data (file hash, size, table counts) from the manifest."""
    manifest = read_manifest(release)
    files = {entry["path"]: entry for entry in manifest["files"]}
    if SQLITE_FILE not in files:
        raise ConfigError(f"{release} does not list {SQLITE_FILE} in its manifest")
    entry = files[SQLITE_FILE]
    counts = {
        name: {"count": table["rows"]}
        for name, table in manifest["tables"].items()
        if "sqlite" in table["targets"]
    }
    return {
        DATABASE: {
            "hash": entry["sha256"],
            "size": entry["size"],
            "file": SQLITE_FILE,
            "tables": counts,
        }
    }


def make_datasette(release: Path, files: DatasetteFiles | None = None) -> Datasette:
    """A Datasette serving ``release`` immutable, with its metadata and settings."""
    release = resolve_release(release)
    files = files or datasette_files(release)
    return Datasette(
        immutables=[str(files.database)],
        metadata=json.loads(files.metadata.read_text()),
        settings=json.loads(files.settings.read_text()),
        template_dir=str(files.templates),
        inspect_data=inspect_data(release),
        version_note=f"metabundle {__version__}",
    )


def serve(release: Path, host: str, port: int, announce: Callable[[str], None]) -> None:
    """Serve ``release`` on ``host:port`` until interrupted."""
    import asyncio

    import uvicorn

    from metabundle.search import freed_memory

    freed_memory.limit_arenas()  # before the threads that answer requests start
    datasette = make_datasette(release)
    asyncio.run(datasette.invoke_startup())
    shown = f"[{host}]" if ":" in host else host
    announce(f"serving {release} read-only at http://{shown}:{port}/")
    uvicorn.run(datasette.app(), host=host, port=port, log_level="warning")


# -- publishing ---------------------------------------------------------------------------

_DOCKERFILE = """\
# Serves a metabundle release read-only with Datasette and the metabundle plugin
# (/-/search, /-/api). Build and run:
#   docker build -t metabundle-datasette . && docker run -p 8001:8001 metabundle-datasette
FROM python:3.11-slim
ENV PIP_NO_CACHE_DIR=1 PYTHONUNBUFFERED=1
WORKDIR /app
COPY requirements.txt ./
{copy_package}RUN pip install -r requirements.txt
COPY {release}/ /app/{release}/
EXPOSE 8001
CMD ["sh", "-c", \
     "metabundle datasette --release /app/{release} --host 0.0.0.0 --port ${{PORT:-8001}}"]
"""

_PUBLISH_SH = """\
#!/bin/sh
# Publish the release's SQLite file with `datasette publish PUBLISHER [OPTIONS]`, e.g.
#   sh publish.sh cloudrun --service metabundle
# This serves the tables, full-text search, facets and canned queries. The plugin's
# /-/search and /-/api need the whole release (DuckDB, keyword arrays, vectors), which
# `datasette publish` does not ship: deploy the Dockerfile here for those.
set -e
cd "$(dirname "$0")"
publisher="$1"; shift
exec datasette publish "$publisher" "$@" {release}/{sqlite} \\
  --metadata {release}/{folder}/{metadata} \\
  --template-dir {release}/{folder}/{templates} \\
  --install '{install}'{settings}
"""

_README = """\
# Deploying metabundle release {version} with Datasette

- `{release}/`: the release itself (verify with `metabundle verify {release}`).
  Datasette serves `{release}/{sqlite}` immutable with the rendered metadata,
  settings and templates in `{release}/{folder}/`.
- `Dockerfile`: an image for any container host; it installs `requirements.txt` (the
  metabundle package, which carries the Datasette plugin) and runs
  `metabundle datasette --release /app/{release} --host 0.0.0.0 --port $PORT`.
- `requirements.txt`: the plugin's install line, `{install}`, then Datasette and
  every Datasette plugin pinned to the versions this release was served with.
- `publish.sh`: `datasette publish` of the SQLite file alone (no /-/search or /-/api).

Everything is read-only; the server has no authentication, and serves only public
metadata.
"""


def plugin_pins() -> list[str]:
    """``name==version`` of Datasette and of every installed Datasette plugin (a
    distribution with a ``datasette`` entry point) but metabundle, sorted."""
    pins = {"datasette": importlib.metadata.version("datasette")}
    for dist in importlib.metadata.distributions():
        name = dist.metadata["Name"]
        if name != "metabundle" and any(ep.group == "datasette" for ep in dist.entry_points):
            pins[name] = dist.version
    return [f"{name}=={version}" for name, version in sorted(pins.items())]


def _link_or_copy(source: Path, destination: Path) -> None:
    try:
        os.link(source, destination)
    except OSError:
        shutil.copy2(source, destination)


def _copy_release(release: Path, destination: Path) -> None:
    shutil.copytree(release, destination, copy_function=_link_or_copy)


def _install_line(install: str | None, out: Path) -> tuple[str, str]:
    """The pip requirement, and the Dockerfile line copying a local package file."""
    spec = install or f"metabundle=={__version__}"
    local = Path(spec).expanduser()
    if local.is_file():
        shutil.copy2(local, out / local.name)
        return f"./{local.name}", f"COPY {local.name} ./\n"
    return spec, ""


def write_publish_dir(release: Path, out: Path, install: str | None = None) -> Path:
    """Write a deployment folder for ``release`` into ``out`` (new or empty)."""
    release = resolve_release(release)
    if out.exists() and any(out.iterdir()):
        raise ConfigError(f"--publish-dir {out} is not empty")
    out.mkdir(parents=True, exist_ok=True)
    _copy_release(release, out / PUBLISHED_RELEASE)
    files = datasette_files(out / PUBLISHED_RELEASE, fallback=out / RELEASE_FOLDER)
    folder = os.path.relpath(files.metadata.parent, out / PUBLISHED_RELEASE)
    requirement, copy_package = _install_line(install, out)
    settings = json.loads(files.settings.read_text())
    names = {
        "release": PUBLISHED_RELEASE,
        "sqlite": SQLITE_FILE,
        "folder": folder,
        "metadata": METADATA_FILE,
        "templates": TEMPLATES_FOLDER,
        "install": requirement,
        "version": read_manifest(release)["version"],
    }
    setting_flags = "".join(f" \\\n  --setting {k} {json.dumps(v)}" for k, v in settings.items())
    pins = plugin_pins()
    install_flags = "".join(f" \\\n  --install '{pin}'" for pin in pins)
    (out / "Dockerfile").write_text(_DOCKERFILE.format(copy_package=copy_package, **names))
    (out / "requirements.txt").write_text("\n".join([requirement, *pins]) + "\n")
    (out / "publish.sh").write_text(
        _PUBLISH_SH.format(settings=install_flags + setting_flags, **names)
    )
    (out / "README.md").write_text(_README.format(**names))
    (out / ".dockerignore").write_text("publish.sh\nREADME.md\n")
    return out
