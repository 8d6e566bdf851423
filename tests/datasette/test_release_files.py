"""The release's SQLite file and Datasette files: primary keys, foreign keys, facet
and lookup indexes, FTS5 tables Datasette detects, and metadata rendered from the
registry."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from datasette.utils import detect_fts

from metabundle.datasette_plugin.serve import datasette_files
from metabundle.release.checksums import read_sums
from metabundle.release.datasette_meta import (
    METADATA_FILE,
    RELEASE_FOLDER,
    SETTINGS_FILE,
    SQLITE_FILE,
    assets_dir,
    load_template,
    render_metadata,
    sqlite_tables,
)
from metabundle.release.manifest import read_manifest
from metabundle.release.sqlite_file import fts_table_name, table_indexes
from metabundle.release.verify import verify_release
from metabundle.schemas import Target, all_tables, get_table

SQLITE_TABLES = [t for t in all_tables() if Target.SQLITE in t.targets]
FTS_TABLES = [t for t in SQLITE_TABLES if t.text_columns]


def test_the_sqlite_file_holds_every_sqlite_table(release_path: Path) -> None:
    names, fts = sqlite_tables(release_path / SQLITE_FILE)
    assert set(names) == {t.name for t in SQLITE_TABLES}
    assert fts == {fts_table_name(t.name) for t in FTS_TABLES}


@pytest.mark.parametrize("table", SQLITE_TABLES, ids=lambda t: t.name)
def test_primary_keys_and_indexes_are_declared(sqlite_db: sqlite3.Connection, table) -> None:
    info = sqlite_db.execute(f'PRAGMA table_info("{table.name}")').fetchall()
    keys = [row["name"] for row in sorted(info, key=lambda r: r["pk"]) if row["pk"]]
    assert keys == list(table.primary_key)
    indexed = {
        tuple(c["name"] for c in sqlite_db.execute(f'PRAGMA index_info("{index["name"]}")'))
        for index in sqlite_db.execute(f'PRAGMA index_list("{table.name}")')
    }
    for columns in table_indexes(table):
        assert columns in indexed, f"{table.name} has no index on {columns}"
    for facet in table.facets:  # every scalar facet leads some index (or the key)
        if table.column(facet).type.value in ("string_list", "json"):
            continue
        leading = {cols[0] for cols in indexed} | set(table.primary_key[:1])
        assert facet in leading, f"{table.name}.{facet} is a facet without an index"


FOREIGN_KEY_TABLES = [t for t in SQLITE_TABLES if t.foreign_keys]
# The mirror's OMOP sample holds ten drug strengths of drugs outside its concepts.
UNLINKED_IN_THE_MIRROR = {"omop_drug_strength"}


@pytest.mark.parametrize("table", FOREIGN_KEY_TABLES, ids=lambda t: t.name)
def test_foreign_keys_are_declared_so_datasette_links_rows(
    sqlite_db: sqlite3.Connection, table
) -> None:
    declared = {
        (row["from"], row["table"], row["to"])
        for row in sqlite_db.execute(f'PRAGMA foreign_key_list("{table.name}")')
    }
    expected = {
        (key.column, key.table, get_table(key.table).primary_key[0]) for key in table.foreign_keys
    }
    assert declared == expected
    for column, other, other_column in declared:
        assert table.column(column).type == get_table(other).column(other_column).type
        if table.name in UNLINKED_IN_THE_MIRROR:
            continue
        linked, total = sqlite_db.execute(
            f'SELECT count(o."{other_column}"), count(t."{column}") FROM "{table.name}" t '
            f'LEFT JOIN "{other}" o ON o."{other_column}" = t."{column}"'
        ).fetchone()
        assert total == 0 or linked > 0, f"{table.name}.{column} names rows of {other}"


@pytest.mark.parametrize("table", FTS_TABLES, ids=lambda t: t.name)
def test_fts_tables_are_declared_so_datasette_detects_them(
    sqlite_db: sqlite3.Connection, metadata: dict[str, Any], table
) -> None:
    fts = fts_table_name(table.name)
    (sql,) = sqlite_db.execute("SELECT sql FROM sqlite_master WHERE name = ?", [fts]).fetchone()
    assert f'content="{table.name}"' in sql, "single quotes would hide it from Datasette"
    assert detect_fts(sqlite_db, table.name) == fts
    columns = [r["name"] for r in sqlite_db.execute(f'PRAGMA table_info("{fts}")')]
    assert columns == list(table.text_columns)
    entry = metadata["databases"]["metabundle"]["tables"][table.name]
    assert (entry["fts_table"], entry["fts_pk"]) == (fts, "rowid")
    indexed = sqlite_db.execute(f'SELECT count(*) FROM "{fts}_docsize"').fetchone()[0]
    rows = sqlite_db.execute(f'SELECT count(*) FROM "{table.name}"').fetchone()[0]
    assert indexed == rows, "every row is in the full-text index"


@pytest.mark.parametrize("table", SQLITE_TABLES, ids=lambda t: t.name)
def test_table_metadata_comes_from_the_registry(metadata: dict[str, Any], table) -> None:
    entry = metadata["databases"]["metabundle"]["tables"][table.name]
    assert entry["description"] == get_table(table.name).description
    assert entry["columns"] == {c.name: c.description for c in table.columns}
    assert entry["source"] and entry["license"]
    assert entry.get("label_column") == table.label_column
    assert entry.get("url_column") == table.url_column
    facets = [f if isinstance(f, str) else f["array"] for f in entry.get("facets", [])]
    assert facets == list(table.facets)
    assert entry.get("hidden", False) == table.hidden


def test_source_tables_name_their_source_and_its_version(
    metadata: dict[str, Any], release_path: Path
) -> None:
    manifest = read_manifest(release_path)
    tables = metadata["databases"]["metabundle"]["tables"]
    for table in SQLITE_TABLES:
        if table.source not in manifest["sources"]:
            continue
        entry = tables[table.name]
        upstream = manifest["sources"][table.source]["upstream_version"]
        assert entry["source"].endswith(f"({upstream})")
        assert entry["source_url"].startswith("https://")
        assert entry["license_url"].startswith("https://")


def test_metadata_has_the_release_title_and_canned_queries(
    metadata: dict[str, Any], release_path: Path
) -> None:
    version = read_manifest(release_path)["version"]
    assert metadata["title"] == f"metabundle {version}"
    assert "$" not in json.dumps(metadata), "every placeholder is substituted"
    assert "sources" not in metadata and "tables" not in metadata
    queries = metadata["databases"]["metabundle"]["queries"]
    assert set(queries) >= {
        "ukb_field_by_id_or_alias",
        "omop_concept_to_standard",
        "dbgap_study_variables",
        "idc_cohort_counts",
    }


def test_rendering_is_reproducible(metadata: dict[str, Any], release_path: Path) -> None:
    again = render_metadata(
        load_template(assets_dir()), read_manifest(release_path), release_path / SQLITE_FILE
    )
    assert again == metadata


def test_datasette_files_are_in_the_manifest_and_checksums(release_path: Path) -> None:
    listed = {entry["path"] for entry in read_manifest(release_path)["files"]}
    sums = read_sums(release_path)
    folder = release_path / RELEASE_FOLDER
    files = {p.relative_to(release_path).as_posix() for p in folder.rglob("*") if p.is_file()}
    assert {f"{RELEASE_FOLDER}/{METADATA_FILE}", f"{RELEASE_FOLDER}/{SETTINGS_FILE}"} <= files
    assert any(name.endswith("_table.html") for name in files)
    assert files <= listed
    assert files <= set(sums)
    assert verify_release(release_path).files == len(sums)


def test_a_release_without_datasette_files_gets_them_rendered(
    release_path: Path, metadata: dict[str, Any], tmp_path: Path
) -> None:
    older = tmp_path / "older"
    shutil.copytree(
        release_path, older, ignore=shutil.ignore_patterns(RELEASE_FOLDER), copy_function=os.link
    )
    files = datasette_files(older, fallback=tmp_path / "rendered")
    assert files.metadata == tmp_path / "rendered" / METADATA_FILE
    assert json.loads(files.metadata.read_text()) == metadata
    assert files.settings.is_file() and (files.templates / "_table.html").is_file()
    assert files.database == older / SQLITE_FILE
