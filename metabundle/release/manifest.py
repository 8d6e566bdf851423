"""The release manifest (``manifest.json``) and the ``datapackage.json`` descriptor."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from metabundle.digest import sha256_file
from metabundle.errors import ReleaseError
from metabundle.schemas import Target, datapackage_resource, get_table

MANIFEST_FILE = "manifest.json"
DATAPACKAGE_FILE = "datapackage.json"
FORMAT = "metabundle-release/1"


@dataclass
class Manifest:
    """What a release holds: version, sources, tables, search setup and every file."""

    version: str
    created_at: str
    metabundle_version: str
    sources: dict[str, dict[str, Any]]
    tables: dict[str, dict[str, Any]]
    search: dict[str, Any] | None = None
    files: list[dict[str, Any]] = field(default_factory=list)
    build: dict[str, Any] | None = None  # stage keys the release was built from
    coverage: dict[str, Any] | None = None  # what each source holds of its upstream

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "version": self.version,
            "created_at": self.created_at,
            "metabundle_version": self.metabundle_version,
            "sources": self.sources,
            "tables": self.tables,
            "search": self.search,
            "files": self.files,
            "build": self.build,
            "coverage": self.coverage,
        }

    def write(self, root: Path) -> None:
        (root / MANIFEST_FILE).write_text(json.dumps(self.to_json(), indent=2, sort_keys=True))


def list_files(root: Path, exclude: set[str]) -> list[dict[str, Any]]:
    """Every file under ``root`` (relative path, size, sha256), sorted by path."""
    entries = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        relative = path.relative_to(root).as_posix()
        if relative in exclude:
            continue
        entries.append({"path": relative, "size": path.stat().st_size, "sha256": sha256_file(path)})
    return entries


def read_manifest(root: Path) -> dict[str, Any]:
    """The parsed ``manifest.json`` of a release folder."""
    missing = f"{root} is not a release: it has no {MANIFEST_FILE}"
    return read_json_document(root / MANIFEST_FILE, FORMAT, missing)


def read_json_document(path: Path, expected_format: str, missing: str) -> dict[str, Any]:
    """The JSON object in ``path``, whose ``format`` must be ``expected_format``; a
    :class:`ReleaseError` saying ``missing`` when there is no such file."""
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise ReleaseError(missing) from None
    except ValueError as error:
        raise ReleaseError(f"{path} is not valid JSON ({error})") from None
    if data.get("format") != expected_format:
        raise ReleaseError(f"{path} has format {data.get('format')!r}, expected {expected_format}")
    return data


def write_datapackage(root: Path, version: str, table_names: list[str]) -> None:
    """A Frictionless ``datapackage.json`` describing every Parquet table."""
    resources = [
        datapackage_resource(get_table(name), f"parquet/{name}.parquet")
        for name in sorted(table_names)
        if Target.PARQUET in get_table(name).targets
    ]
    package = {
        "name": "metabundle",
        "title": "metabundle: public biomedical metadata search release",
        "version": version,
        "resources": resources,
    }
    (root / DATAPACKAGE_FILE).write_text(json.dumps(package, indent=2, sort_keys=True))
