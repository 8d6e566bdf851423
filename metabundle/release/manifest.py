"""The release manifest (``manifest.json``) and the ``datapackage.json`` descriptor.

:func:`read_manifest` checks the manifest's shape before anyone reads it (an object
of this format whose version is a release version, with a list of files and objects
of sources and tables), so every command that reads a release fails on a malformed
one with one sentence naming ``manifest.json``. It imports neither DuckDB nor PyArrow
(the schema registry loads only to write ``datapackage.json``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from metabundle.digest import sha256_file
from metabundle.errors import ReleaseError
from metabundle.release.paths import check_release_version, shown

MANIFEST_FILE = "manifest.json"
DATAPACKAGE_FILE = "datapackage.json"
FORMAT = "metabundle-release/1"
MANIFEST_SHAPE = {"files": list, "sources": dict, "tables": dict}
"""The manifest's members every reader relies on, and the JSON type each must have."""
JSON_TYPES = {
    dict: "an object",
    list: "a list",
    str: "a string",
    bool: "true or false",
    int: "a number",
    float: "a number",
}


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
    """The parsed ``manifest.json`` of a release folder, checked for its shape."""
    path = root / MANIFEST_FILE
    manifest = read_json_document(
        path, FORMAT, f"{root} is not a release: it has no {MANIFEST_FILE}"
    )
    check_release_version(manifest.get("version"), str(path))
    for member, kind in MANIFEST_SHAPE.items():
        if not isinstance(manifest.get(member), kind):
            found = _json_type(manifest.get(member))
            raise ReleaseError(f"{path} has {found} for {member!r}, not {JSON_TYPES[kind]}")
    return manifest


def read_json_document(path: Path, expected_format: str, missing: str) -> dict[str, Any]:
    """The JSON object in ``path``, whose ``format`` must be ``expected_format``; a
    :class:`ReleaseError` saying ``missing`` when there is no such file."""
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise ReleaseError(missing) from None
    except OSError as error:
        raise ReleaseError(f"{path} cannot be read ({error.strerror})") from None
    except (ValueError, RecursionError) as error:
        reason = str(error) or "nested too deeply"
        raise ReleaseError(f"{path} is not valid JSON ({reason})") from None
    if not isinstance(data, dict):
        raise ReleaseError(
            f"{path} holds {_json_type(data)} where a {expected_format} object belongs"
        )
    if data.get("format") != expected_format:
        found = shown(data.get("format"))
        raise ReleaseError(f"{path} has format {found}, expected {expected_format}")
    return data


def _json_type(value: object) -> str:
    """What kind of JSON value ``value`` is, for messages (``a list``)."""
    if value is None:
        return "nothing"
    return next(name for kind, name in JSON_TYPES.items() if isinstance(value, kind))


def write_datapackage(root: Path, version: str, table_names: list[str]) -> None:
    """A Frictionless ``datapackage.json`` describing every Parquet table."""
    from metabundle.schemas import Target, datapackage_resource, get_table

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
