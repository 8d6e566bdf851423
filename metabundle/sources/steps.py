"""Run a source's fetch and parse steps with caching; no Dagster here.

Parsed tables are cached under ``<cache>/tables/<source>/<key>/`` where the key hashes
the parser version and every input's content hash, so a rebuild with unchanged inputs
reuses them. The latest staged tables of each source are recorded in
``<out>/work/sources/<source>.json`` for the search and release steps.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from metabundle.config import BuildSettings
from metabundle.errors import MetabundleError
from metabundle.http_client import Fetcher, RetryPolicy
from metabundle.sources.base import (
    FetchContext,
    ParseContext,
    RawFile,
    RawSnapshot,
    Reporter,
    Tokens,
)
from metabundle.sources.registry import get_source
from metabundle.staging import StagedTable

COMPLETE_MARKER = "_complete.json"


@dataclass(frozen=True)
class StagedSource:
    """A source's parsed tables and the snapshot they came from."""

    source: str
    cache_key: str
    reused: bool
    snapshot: RawSnapshot
    tables: dict[str, StagedTable]
    quarantine: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def row_counts(self) -> dict[str, int]:
        return {name: staged.rows for name, staged in sorted(self.tables.items())}

    def to_json(self) -> dict[str, Any]:
        snapshot = asdict(self.snapshot)
        snapshot["files"] = [{**asdict(f), "path": str(f.path)} for f in self.snapshot.files]
        return {
            "source": self.source,
            "cache_key": self.cache_key,
            "reused": self.reused,
            "snapshot": snapshot,
            "tables": {n: {"path": str(t.path), "rows": t.rows} for n, t in self.tables.items()},
            "quarantine": self.quarantine,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> StagedSource:
        snap = data["snapshot"]
        snapshot = RawSnapshot(
            source=snap["source"],
            upstream=snap["upstream"],
            files=tuple(RawFile(**{**f, "path": Path(f["path"])}) for f in snap["files"]),
            upstream_version=snap["upstream_version"],
            details=snap["details"],
        )
        tables = {
            name: StagedTable(name=name, path=Path(t["path"]), rows=t["rows"])
            for name, t in data["tables"].items()
        }
        return cls(
            data["source"],
            data["cache_key"],
            data["reused"],
            snapshot,
            tables,
            data.get("quarantine", {}),
        )


def make_fetcher(settings: BuildSettings, report: Reporter) -> Fetcher:
    """The build's downloader, reporting each retry."""

    def on_retry(url: str, attempt: int, reason: str) -> None:
        report(f"retrying {url} (attempt {attempt + 1}) after {reason}")

    return Fetcher(
        settings.cache_dir,
        retry=RetryPolicy(attempts=settings.http_attempts, base_delay_s=settings.http_backoff_s),
        on_retry=on_retry,
    )


def fetch_source(name: str, settings: BuildSettings, report: Reporter) -> RawSnapshot:
    """Download (or revalidate) every upstream file of source ``name``."""
    spec = get_source(name)
    with make_fetcher(settings, report) as fetcher:
        ctx = FetchContext(name, fetcher, settings.upstream, settings, report)
        snapshot = spec.fetch(ctx)
    unchanged = unchanged_files(settings, snapshot)
    report(
        f"{len(snapshot.files)} files, {snapshot.total_bytes:,} bytes "
        f"({unchanged} unchanged since the last build)"
    )
    return snapshot


def probe_source(name: str, settings: BuildSettings) -> Tokens:
    """The version tokens of source ``name``'s upstream (its :class:`UpstreamProbe`),
    fetched through the build's download cache."""
    probe = get_source(name).probe
    if probe is None:
        raise ValueError(f"source {name!r} has no upstream probe")
    with make_fetcher(settings, lambda _: None) as fetcher:
        return probe.tokens(
            FetchContext(name, fetcher, settings.upstream, settings, lambda _: None)
        )


def unchanged_files(settings: BuildSettings, snapshot: RawSnapshot) -> int:
    """How many of ``snapshot``'s files the source's last build in this output folder
    read with the same content (0 on a first build, whatever the upstream kind)."""
    path = pointer_path(settings, snapshot.source)
    if not path.exists():
        return 0
    previous = json.loads(path.read_text())["snapshot"]["files"]
    seen = {(f["key"], f["sha256"]) for f in previous}
    return sum(1 for f in snapshot.files if (f.key, f.sha256) in seen)


def _cache_key(name: str, snapshot: RawSnapshot, dependencies: dict[str, StagedSource]) -> str:
    digest = hashlib.sha256()
    digest.update(f"{name}\0{get_source(name).version}\0{snapshot.inputs_sha256}".encode())
    for dep in sorted(dependencies):
        digest.update(f"\0{dep}:{dependencies[dep].cache_key}".encode())
    return digest.hexdigest()[:24]


def parse_source(
    name: str,
    snapshot: RawSnapshot,
    settings: BuildSettings,
    report: Reporter,
    dependencies: dict[str, StagedSource] | None = None,
) -> StagedSource:
    """Parse a snapshot into staged tables, reusing a cached parse of identical inputs."""
    spec = get_source(name)
    deps = dependencies or {}
    key = _cache_key(name, snapshot, deps)
    folder = settings.cache_dir / "tables" / name / key
    marker = folder / COMPLETE_MARKER
    if marker.exists():
        cached = StagedSource.from_json(json.loads(marker.read_text()))
        staged = StagedSource(name, key, True, snapshot, cached.tables, cached.quarantine)
        report(f"parsed tables reused: the inputs are unchanged (cache key {key[:12]})")
        return staged
    temp = folder.with_name(f".{key}.tmp")
    shutil.rmtree(temp, ignore_errors=True)
    temp.mkdir(parents=True)
    dependency_tables = {t: s.path for dep in deps.values() for t, s in dep.tables.items()}
    ctx = ParseContext(snapshot, settings, temp, report, dependency_tables)
    try:
        spec.parse(ctx)
    except MetabundleError:
        shutil.rmtree(temp, ignore_errors=True)
        raise
    finally:
        ctx.close()
    missing = [t for t in spec.tables if t not in ctx.staged]
    if missing:
        shutil.rmtree(temp, ignore_errors=True)
        raise AssertionError(f"source {name} did not write table {missing[0]}")
    shutil.rmtree(temp / ".duckdb_tmp", ignore_errors=True)
    shutil.rmtree(folder, ignore_errors=True)
    temp.rename(folder)
    tables = {
        t: StagedTable(t, folder / s.path.name, s.rows) for t, s in sorted(ctx.staged.items())
    }
    staged = StagedSource(name, key, False, snapshot, tables, ctx.quarantined)
    marker.write_text(json.dumps(staged.to_json(), sort_keys=True))
    return staged


def pointer_path(settings: BuildSettings, name: str) -> Path:
    return settings.work_dir / "sources" / f"{name}.json"


def record_staged(settings: BuildSettings, staged: StagedSource) -> None:
    """Make ``staged`` the latest parse of its source for later steps."""
    path = pointer_path(settings, staged.source)
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_suffix(".tmp")
    temp.write_text(json.dumps(staged.to_json(), sort_keys=True, indent=1))
    temp.replace(path)


def load_staged(settings: BuildSettings, name: str) -> StagedSource:
    """The latest staged tables of source ``name``; an error if it was never parsed."""
    path = pointer_path(settings, name)
    if not path.exists():
        raise MetabundleError(
            f"Source {name} has not been parsed into {settings.out_dir} yet; build it first"
        )
    return StagedSource.from_json(json.loads(path.read_text()))
