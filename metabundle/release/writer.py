"""Assemble a release folder atomically.

Everything is written into ``releases/.tmp-<version>-<pid>/``, checked, and only then
renamed to ``releases/<version>/``; ``current`` moves last. A failure at any step
removes the temporary folder and leaves ``current`` where it was.

The manifest records the cache keys of the stages a release was built from
(``build``). :func:`make_release` compares them with the current release's and, when
every input is the same, reports that release as up to date instead of writing an
identical copy (the DuckDB and SQLite files are the slow part of a build).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa

from metabundle import __version__
from metabundle.config import BuildSettings
from metabundle.db import connect
from metabundle.errors import ReleaseError
from metabundle.release.checksums import SUMS_FILE, write_sums
from metabundle.release.datasette_meta import assets_dir, write_datasette_files
from metabundle.release.digest_record import record_digests
from metabundle.release.doc_rows import DOC_ROWS_FILE, write_doc_rows
from metabundle.release.duckdb_file import write_duckdb
from metabundle.release.embedding_table import write_embedding_rows
from metabundle.release.identifiers import IDENTIFIERS_FILE, write_identifiers
from metabundle.release.manifest import (
    MANIFEST_FILE,
    Manifest,
    list_files,
    read_manifest,
    write_datapackage,
)
from metabundle.release.pointer import point_current, resolve_release
from metabundle.release.readme import release_readme
from metabundle.release.sqlite_file import write_sqlite
from metabundle.release.temps import TMP_PREFIX, clean_stale_temps
from metabundle.release.verify import verify_release
from metabundle.release.version import check_version, next_version
from metabundle.schemas import Table, Target, get_table
from metabundle.sources.base import CoverageContext
from metabundle.sources.registry import get_source
from metabundle.sources.steps import StagedSource
from metabundle.staging import stage_table

DUCKDB_FILE = "metabundle.duckdb"
SQLITE_FILE = "metabundle.sqlite"
# The code and template that shape a release from staged tables are fingerprinted
# (below); bump this when the output changes through anything else, so that a rebuild
# writes a new release instead of reporting the current one up to date.
RELEASE_LAYOUT = "2"  # 2: coverage block
WRITER_CODE = ("release", "schemas")


@dataclass
class SearchArtifacts:
    """What the search step adds to a release: tables, files and facts."""

    tables: dict[str, Path] = field(default_factory=dict)
    files: dict[str, Path] = field(default_factory=dict)
    macros: list[str] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)
    keys: dict[str, str] = field(default_factory=dict)  # search step → its cache key
    coverage: dict[str, Any] = field(default_factory=dict)  # search step → coverage block


@dataclass(frozen=True)
class ReleaseOutcome:
    """The release a build ends with, and whether it was already there."""

    path: Path
    up_to_date: bool
    build: dict[str, Any] | None


def build_record(sources: list[StagedSource], search: SearchArtifacts) -> dict[str, Any] | None:
    """The cache keys of every stage a release is built from, and one key over them
    (with the writer's layout, metabundle's version, macros and search facts); None
    when search outputs come without their keys, so nothing can be matched."""
    if (search.tables or search.files) and not search.keys:
        return None
    stages = {f"core_{s.source}": s.cache_key for s in sorted(sources, key=lambda s: s.source)}
    stages.update({f"search_{step}": key for step, key in sorted(search.keys.items())})
    payload = {
        "layout": RELEASE_LAYOUT,
        "writer": writer_fingerprint(),
        "metabundle_version": __version__,
        "stages": stages,
        "macros": search.macros,
        "info": search.info,
    }
    key = hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode())
    return {"key": key.hexdigest()[:24], "stages": stages}


def writer_fingerprint() -> str:
    """A hash of the release writers', the table registry's source code and the
    Datasette template that every release carries."""
    package = Path(__file__).resolve().parents[1]
    files = [p for folder in WRITER_CODE for p in (package / folder).rglob("*.py")]
    template = assets_dir()
    digest = hashlib.sha256()
    for root, paths in ((package, files), (template, list(template.rglob("*")))):
        for path in sorted(p for p in paths if p.is_file()):
            digest.update(path.relative_to(root).as_posix().encode() + b"\0")
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def up_to_date_release(settings: BuildSettings, record: dict[str, Any] | None) -> Path | None:
    """The current release when it was built from exactly the stages of ``record``
    (and has the forced version, if one is set); else None."""
    if record is None or not settings.current_link.exists():
        return None
    try:
        current = resolve_release(settings.current_link)
        manifest = read_manifest(current)
    except ReleaseError:
        return None
    if settings.release_version and settings.release_version != manifest["version"]:
        return None
    if (manifest.get("build") or {}).get("key") != record["key"]:
        return None
    return current


def make_release(
    settings: BuildSettings,
    sources: list[StagedSource],
    search: SearchArtifacts | None = None,
    *,
    report: Callable[[str], None] = lambda _: None,
    today: date | None = None,
) -> ReleaseOutcome:
    """The current release if every input is unchanged, else a newly written one."""
    search = search or SearchArtifacts()
    record = build_record(sources, search)
    current = up_to_date_release(settings, record)
    if current is not None:
        report(f"up to date: release {current.name} was built from these inputs ({current})")
        return ReleaseOutcome(current, True, record)
    path = write_release(settings, sources, search, report=report, today=today)
    return ReleaseOutcome(path, False, record)


def _snapshot_row(staged: StagedSource) -> dict[str, Any]:
    snap = staged.snapshot
    fetched = datetime.fromisoformat(snap.fetched_at) if snap.fetched_at else None
    return {
        "source": staged.source,
        "title": get_source(staged.source).title,
        "upstream_url": snap.upstream,
        "upstream_version": snap.upstream_version,
        "fetched_at": fetched,
        "inputs_sha256": snap.inputs_sha256,
        "file_count": len(snap.files),
        "total_bytes": snap.total_bytes,
        "row_counts": json.dumps(staged.row_counts, sort_keys=True),
        "details": json.dumps(
            {**snap.details, "quarantine": staged.quarantine}, sort_keys=True, default=str
        ),
    }


def _info_rows(version: str, created_at: str, search: SearchArtifacts) -> list[dict[str, str]]:
    facts = {
        "version": version,
        "created_at": created_at,
        "metabundle_version": __version__,
        **{k: str(v) for k, v in search.info.items()},
    }
    return [{"key": k, "value": v} for k, v in sorted(facts.items())]


def write_release(
    settings: BuildSettings,
    sources: list[StagedSource],
    search: SearchArtifacts | None = None,
    *,
    report: Callable[[str], None] = lambda _: None,
    today: date | None = None,
) -> Path:
    """Write a complete, verified release and point ``current`` at it."""
    search = search or SearchArtifacts()
    releases = settings.releases_dir
    releases.mkdir(parents=True, exist_ok=True)
    clean_stale_temps(releases)
    version = (
        check_version(settings.release_version)
        if settings.release_version
        else next_version(releases, today or datetime.now(UTC).date())
    )
    final = releases / version
    if final.exists():
        raise ReleaseError(f"Release {version} already exists at {final}")
    temp = releases / f"{TMP_PREFIX}{version}-{os.getpid()}"
    temp.mkdir()
    try:
        _assemble(temp, version, sources, search, report, settings.profile)
        verified = verify_release(temp, record=False)
        temp.rename(final)
    except BaseException:
        shutil.rmtree(temp, ignore_errors=True)
        raise
    record_digests(final, verified.digests)
    point_current(settings.current_link, final)
    report(f"release {version} written to {final}")
    return final


def _assemble(
    root: Path,
    version: str,
    sources: list[StagedSource],
    search: SearchArtifacts,
    report: Callable[[str], None],
    profile: str,
) -> None:
    created_at = datetime.now(UTC).isoformat(timespec="seconds")
    staging = root / ".staging"
    tables: dict[str, Path] = {}
    for staged in sorted(sources, key=lambda s: s.source):
        tables.update({name: t.path for name, t in staged.tables.items()})
    tables.update(search.tables)
    tables["source_snapshot"] = stage_table(
        "source_snapshot",
        pa.Table.from_pylist([_snapshot_row(s) for s in sources]),
        staging / "source_snapshot.parquet",
    ).path
    tables["release_info"] = stage_table(
        "release_info",
        pa.Table.from_pylist(_info_rows(version, created_at, search)),
        staging / "release_info.parquet",
    ).path
    if "search_doc" in tables:
        embedding = write_embedding_rows(
            search.files, tables["search_doc"], search.info, staging / "embedding.parquet"
        )
        if embedding is not None:
            tables["embedding"] = embedding
    parquet = _write_parquet(root, version, tables)
    shutil.rmtree(staging)
    declared = [(get_table(name), path) for name, path in sorted(parquet.items())]
    with ThreadPoolExecutor(max_workers=1) as pool:
        # SQLite is written by Python and DuckDB by native threads: overlap them.
        sqlite_done = pool.submit(
            write_sqlite,
            root / SQLITE_FILE,
            [(t, p) for t, p in declared if Target.SQLITE in t.targets],
            report=report,
        )
        write_duckdb(
            root / DUCKDB_FILE,
            [(t, p) for t, p in declared if Target.DUCKDB in t.targets],
            macros=search.macros,
            report=report,
        )
        sqlite_done.result()
    for relative, source in sorted(search.files.items()):
        destination = root / relative
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, destination)
    manifest = _manifest(version, created_at, sources, declared, search)
    manifest.coverage = release_coverage(sources, profile) | search.coverage
    manifest.build = build_record(sources, search)
    write_datasette_files(root, manifest.to_json())
    if "search_doc" in parquet:
        report(
            f"{DOC_ROWS_FILE}: {write_doc_rows(parquet['search_doc'], root / DOC_ROWS_FILE):,} rows"
        )
    if "search_identifier" in parquet:
        rows = write_identifiers(parquet["search_identifier"], root / IDENTIFIERS_FILE)
        report(f"{IDENTIFIERS_FILE}: {rows:,} rows")
    _drop_non_parquet_targets(parquet, declared)
    write_datapackage(root, version, sorted(parquet))
    (root / "README.md").write_text(release_readme(manifest))
    manifest.files = list_files(root, exclude={MANIFEST_FILE, SUMS_FILE})
    manifest.write(root)
    write_sums(root, {entry["path"]: entry["sha256"] for entry in manifest.files}, MANIFEST_FILE)


def _write_parquet(root: Path, version: str, tables: Mapping[str, Path]) -> dict[str, Path]:
    """Copy every table into ``parquet/`` with the release version in its metadata."""
    folder = root / "parquet"
    folder.mkdir()
    written: dict[str, Path] = {}
    with connect() as con:
        for name, source in sorted(tables.items()):
            table = get_table(name)
            destination = folder / f"{name}.parquet"
            stage_table(
                name,
                con.read_parquet(str(source)),
                destination,
                con=con,
                presorted=True,
                kv_metadata={
                    "metabundle.release": version,
                    "metabundle.table": name,
                    "metabundle.description": table.description,
                },
            )
            written[name] = destination
    return written


def _drop_non_parquet_targets(parquet: dict[str, Path], declared: list[tuple[Table, Path]]) -> None:
    for table, path in declared:
        if Target.PARQUET not in table.targets:
            path.unlink()
            del parquet[table.name]


def source_coverage(staged: StagedSource, profile: str) -> dict[str, Any]:
    """The coverage block of one source, computed over its staged tables."""
    tables = {name: table.path for name, table in staged.tables.items()}
    with connect() as con:
        context = CoverageContext(tables, con, staged.snapshot, profile)
        return get_source(staged.source).coverage(context)


def release_coverage(sources: list[StagedSource], profile: str) -> dict[str, Any]:
    """The release's coverage: the profile, each source's block, and whether every
    source holds everything its upstream offered."""
    blocks = {
        s.source: source_coverage(s, profile) for s in sorted(sources, key=lambda s: s.source)
    }
    return {
        "profile": profile,
        "complete": all(block["complete"] for block in blocks.values()),
        "sources": blocks,
    }


def _manifest(
    version: str,
    created_at: str,
    sources: list[StagedSource],
    declared: list[tuple[Table, Path]],
    search: SearchArtifacts,
) -> Manifest:
    rows = {s.source: s.row_counts for s in sources}
    source_entries = {
        s.source: {
            **{k: v for k, v in _snapshot_row(s).items() if k not in ("row_counts", "details")},
            "fetched_at": s.snapshot.fetched_at,
            "details": dict(s.snapshot.details),
            "quarantine": s.quarantine,
            "tables": rows[s.source],
        }
        for s in sorted(sources, key=lambda s: s.source)
    }
    table_entries: dict[str, dict[str, Any]] = {}
    with connect() as con:
        for table, path in declared:
            count = con.sql(f"SELECT count(*) FROM read_parquet('{path}')").fetchall()[0][0]
            table_entries[table.name] = {
                "source": table.source,
                "rows": count,
                "description": table.description,
                "targets": sorted(str(t) for t in table.targets),
            }
    return Manifest(
        version=version,
        created_at=created_at,
        metabundle_version=__version__,
        sources=source_entries,
        tables=table_entries,
        search=search.info or None,
    )
