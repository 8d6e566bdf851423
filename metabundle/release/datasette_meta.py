"""Datasette files of a release: metadata rendered from the schema registry, settings
and templates, written to ``<release>/datasette/``.

The metadata template (``datasette/metadata.yaml`` of the checkout) holds the instance
texts, each source's terms, per-table overrides and the canned queries
(``$coverage_html`` is the release's coverage block); every table of the release's
SQLite file gets its entry from its registry declaration:
description, column descriptions, source and license, label column, facets, sort,
full-text search table and ``hidden``. The rendered files travel inside the release
(and so in its manifest and checksums), so a release can be served by plain
Datasette without this package: ``datasette -i metabundle.sqlite -m
datasette/metadata.json --template-dir datasette/templates`` plus the settings.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Mapping
from pathlib import Path
from string import Template
from typing import Any

import yaml

from metabundle.errors import ReleaseError
from metabundle.release.coverage import coverage_html
from metabundle.release.sqlite_file import fts_table_name
from metabundle.schemas import ColumnType, Table, all_tables, get_table
from metabundle.schemas.sources import DESCRIPTORS
from metabundle.settings import RuntimeSettings

RELEASE_FOLDER = "datasette"
METADATA_FILE = "metadata.json"
SETTINGS_FILE = "settings.json"
TEMPLATES_FOLDER = "templates"
SQLITE_FILE = "metabundle.sqlite"
DATABASE = "metabundle"  # Datasette names a database after its file's stem
TEMPLATE_FILE = "metadata.yaml"
ASSETS_ENV = "METABUNDLE_DATASETTE_DIR"
PLUGIN = "metabundle"  # the plugin's key under the metadata's ``plugins``
DASHBOARDS = "datasette-dashboards"  # its dashboards are named after the sources
# Keys of the template the renderer consumes; they are not Datasette metadata.
_RENDERER_KEYS = ("sources", "tables")
# A source's terms, shown on each of its tables; its other keys feed its entry page.
_TERMS = ("source", "source_url", "license", "license_url")
_ARRAY_FACET_TYPES = (ColumnType.STRING_LIST,)


def assets_dir() -> Path:
    """The checkout's ``datasette/`` folder (``METABUNDLE_DATASETTE_DIR`` overrides)."""
    override = RuntimeSettings.load().datasette_dir
    folder = override or Path(__file__).resolve().parents[2] / "datasette"
    if not (folder / TEMPLATE_FILE).is_file():
        raise ReleaseError(
            f"The Datasette metadata template is missing at {folder / TEMPLATE_FILE}; "
            f"run from a metabundle checkout or set {ASSETS_ENV}"
        )
    return folder


def _substitute(value: Any, facts: Mapping[str, str]) -> Any:
    """``value`` with ``$name`` placeholders in every string replaced by ``facts``."""
    if isinstance(value, str):
        return Template(value).safe_substitute(facts)
    if isinstance(value, list):
        return [_substitute(v, facts) for v in value]
    if isinstance(value, dict):
        return {k: _substitute(v, facts) for k, v in value.items()}
    return value


def sqlite_tables(path: Path) -> tuple[list[str], set[str]]:
    """The ordinary tables of a SQLite file and the names of its FTS5 tables."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rows = db.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table'").fetchall()
    finally:
        db.close()
    fts = {name for name, sql in rows if sql and "USING fts5" in sql}
    shadow = {name for name, _ in rows if any(name.startswith(f + "_") for f in fts)}
    internal = {name for name, _ in rows if name.startswith("sqlite_")}
    plain = sorted(name for name, _ in rows if name not in fts | shadow | internal)
    return plain, fts


def _facets(table: Table) -> list[Any]:
    return [
        {"array": name} if table.column(name).type in _ARRAY_FACET_TYPES else name
        for name in table.facets
    ]


WIDE_TABLE_COLUMNS = 20  # a table page shows a selection of a wider table's columns


def columns_shown(table: Table) -> list[str]:
    """The columns a page of a wide table shows by default, in declared order: the key,
    label, text, facet, foreign key and URL columns (the others are one click away)."""
    wanted = {
        *table.primary_key,
        *table.text_columns,
        *table.facets,
        *(key.column for key in table.foreign_keys),
        *(c for c in (table.label_column, table.url_column) if c),
    }
    return [name for name in table.column_names if name in wanted]


def table_metadata(table: Table, source: Mapping[str, Any], fts_tables: set[str]) -> dict[str, Any]:
    """The Datasette metadata of one table, from its declaration and source terms."""
    entry: dict[str, Any] = {
        "description": table.description,
        "columns": {c.name: c.description for c in table.columns},
        **{k: source[k] for k in _TERMS if source.get(k)},
    }
    if table.label_column:
        entry["label_column"] = table.label_column
    if table.url_column:
        entry["url_column"] = table.url_column  # read by the templates
    if len(table.columns) > WIDE_TABLE_COLUMNS:
        entry["columns_shown"] = columns_shown(table)  # read by the templates
    if table.facets:
        entry["facets"] = _facets(table)
    fts = fts_table_name(table.name)
    if table.text_columns and fts in fts_tables:
        entry.update(fts_table=fts, fts_pk="rowid", searchmode="escaped")
    if table.hidden:
        entry["hidden"] = True
    return entry


def _source_terms(
    name: str, manifest: Mapping[str, Any], terms: Mapping[str, Any]
) -> dict[str, Any]:
    """Source ``name``'s terms and entry-page texts: its descriptor's (with its title,
    upstream version and home page), or the template's for the release's own tables."""
    entry = dict(terms.get(name) or {})
    spec = DESCRIPTORS.get(name)
    if spec is not None:
        upstream = (manifest.get("sources") or {}).get(name, {}).get("upstream_version")
        entry = {
            **spec.entry_texts(),
            "source": f"{spec.title} ({upstream})" if upstream else spec.title,
            "source_url": spec.homepage,
            **entry,
        }
    return entry


def render_metadata(
    template: Mapping[str, Any], manifest: Mapping[str, Any], sqlite_path: Path
) -> dict[str, Any]:
    """Datasette metadata for the release of ``manifest`` whose SQLite file is at
    ``sqlite_path``: the template's texts and queries, one entry per table, each
    source's entry-page texts (``plugins.metabundle.sources``) and the chart
    dashboards of the sources the release holds."""
    facts = {
        "version": manifest["version"],
        "created_at": manifest["created_at"],
        "coverage_html": coverage_html(manifest.get("coverage")),
        "sources": ", ".join(
            spec.title for name, spec in DESCRIPTORS.items() if name in manifest.get("sources", {})
        ),
    }
    template = _substitute(dict(template), facts)
    terms = template.get("sources") or {}
    overrides = template.get("tables") or {}
    names, fts_tables = sqlite_tables(sqlite_path)
    declared = {table.name for table in all_tables()}
    unknown = sorted(set(overrides) - declared)
    if unknown:  # a typo in the template; tables of sources not built are fine
        raise ReleaseError(f"{TEMPLATE_FILE} overrides table {unknown[0]}, which is not declared")
    tables: dict[str, Any] = {}
    for name in names:
        table = get_table(name)
        entry = table_metadata(table, _source_terms(table.source, manifest, terms), fts_tables)
        override = overrides.get(name) or {}
        tables[name] = {**entry, **override}
        if "columns_shown" in entry and "columns_shown" not in override:
            sorted_by = {override.get("sort"), override.get("sort_desc")} - {None}
            tables[name]["columns_shown"] = [
                c for c in table.column_names if c in {*entry["columns_shown"], *sorted_by}
            ]
    metadata = {k: v for k, v in template.items() if k not in _RENDERER_KEYS}
    database = dict((metadata.get("databases") or {}).get(DATABASE) or {})
    database["tables"] = tables
    metadata["databases"] = {**(metadata.get("databases") or {}), DATABASE: database}
    plugins = dict(metadata.get("plugins") or {})
    plugins[PLUGIN] = {
        **(plugins.get(PLUGIN) or {}),
        "sources": {
            name: _source_terms(name, manifest, terms)
            for name in sorted(manifest.get("sources") or {})
        },
    }
    dashboards = plugins.get(DASHBOARDS) or {}
    plugins[DASHBOARDS] = {k: v for k, v in dashboards.items() if k in plugins[PLUGIN]["sources"]}
    metadata["plugins"] = plugins
    return metadata


def load_template(folder: Path) -> dict[str, Any]:
    with (folder / TEMPLATE_FILE).open() as handle:
        return yaml.safe_load(handle)


def write_datasette_files(
    root: Path, manifest: Mapping[str, Any], folder: Path | None = None
) -> Path:
    """Write the Datasette files (metadata, settings, templates) of the release at
    ``root`` into ``folder`` (by default the release's own ``datasette/``)."""
    assets = assets_dir()
    folder = folder or root / RELEASE_FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    metadata = render_metadata(load_template(assets), manifest, root / SQLITE_FILE)
    (folder / METADATA_FILE).write_text(json.dumps(metadata, indent=2, ensure_ascii=False))
    shutil.copy2(assets / SETTINGS_FILE, folder / SETTINGS_FILE)
    shutil.copytree(assets / TEMPLATES_FOLDER, folder / TEMPLATES_FOLDER, dirs_exist_ok=True)
    return folder
