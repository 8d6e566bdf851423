"""What every source provides, and the contexts it runs in.

A source is a :class:`SourceSpec`: a ``fetch`` step that downloads its upstream
files into a :class:`RawSnapshot`, a ``parse`` step that turns the snapshot into the
registry's tables, a ``search_docs`` step that yields its ``search_doc`` rows, and a
``coverage`` step that says what the release holds of what the upstream offers
(:func:`coverage_block`).
The pipeline runs these steps; a source module never imports Dagster.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb

from metabundle.config import BuildSettings
from metabundle.db import connect
from metabundle.errors import ParseError
from metabundle.schemas.sources import SourceDescriptor
from metabundle.staging import StagedTable, TableData, stage_table
from metabundle.upstream import Upstream

if TYPE_CHECKING:  # the fetcher (httpx) is not imported where a release is only read
    from metabundle.http_client import Fetcher

Reporter = Callable[[str], None]
QUARANTINE_LIMIT = 100
"""More malformed records than this in one file means the file is bad, not a record."""
QUARANTINE_EXAMPLES = 5


@dataclass(frozen=True)
class RawFile:
    """One upstream input: its key (the mirror path), URL, local copy and hash."""

    key: str
    url: str
    path: Path
    sha256: str
    size: int
    fetched_at: str
    reused: bool = False
    packaged: bool = False
    """An installed package's file (not fetched, so not mirrored)."""


@dataclass(frozen=True)
class RawSnapshot:
    """Everything a source fetched for one build, in a stable order."""

    source: str
    upstream: str
    files: tuple[RawFile, ...]
    upstream_version: str | None = None
    details: Mapping[str, Any] = field(default_factory=dict)

    def file(self, key: str) -> RawFile:
        for raw in self.files:
            if raw.key == key:
                return raw
        raise KeyError(f"{self.source} snapshot has no file {key}")

    def matching(self, predicate: Callable[[str], bool]) -> list[RawFile]:
        return [raw for raw in self.files if predicate(raw.key)]

    @property
    def inputs_sha256(self) -> str:
        """One hash over every input's key and content hash (and the details)."""
        digest = hashlib.sha256()
        for raw in sorted(self.files, key=lambda r: r.key):
            digest.update(f"{raw.key}\0{raw.sha256}\n".encode())
        digest.update(json.dumps(self.details, sort_keys=True, default=str).encode())
        return digest.hexdigest()

    @property
    def total_bytes(self) -> int:
        return sum(raw.size for raw in self.files)

    @property
    def fetched_at(self) -> str | None:
        return max((raw.fetched_at for raw in self.files), default=None)


@dataclass
class FetchContext:
    """What a fetch step may use: the downloader, the upstream base and the settings."""

    source: str
    fetcher: Fetcher
    upstream: Upstream
    settings: BuildSettings
    report: Reporter
    files: list[RawFile] = field(default_factory=list)

    def get(self, mirror_path: str, public_url: str) -> RawFile:
        """Fetch one file, by its mirror path and its public URL, and record it."""
        url = self.upstream.url(mirror_path, public_url)
        fetched = self.fetcher.fetch(url)
        raw = RawFile(
            key=mirror_path,
            url=url,
            path=fetched.path,
            sha256=fetched.sha256,
            size=fetched.size,
            fetched_at=fetched.fetched_at,
            reused=fetched.reused,
        )
        self.files.append(raw)
        return raw

    def add_local(self, key: str, path: Path, sha256: str, fetched_at: str) -> RawFile:
        """Record an input that is already on disk (an installed package's file)."""
        raw = RawFile(key, path.as_uri(), path, sha256, path.stat().st_size, fetched_at, True, True)
        self.files.append(raw)
        return raw

    def snapshot(
        self,
        upstream_version: str | None = None,
        details: Mapping[str, Any] | None = None,
        upstream: str | None = None,
    ) -> RawSnapshot:
        """The fetched files; ``upstream`` names where they came from when that is not
        the build's upstream base (an installed package, say)."""
        return RawSnapshot(
            source=self.source,
            upstream=upstream or self.upstream.describe(),
            files=tuple(sorted(self.files, key=lambda r: r.key)),
            upstream_version=upstream_version,
            details=dict(details or {}),
        )


@dataclass
class ParseContext:
    """What a parse step may use: its snapshot, a table writer and other sources' tables."""

    snapshot: RawSnapshot
    settings: BuildSettings
    out_dir: Path
    report: Reporter
    dependency_tables: Mapping[str, Path] = field(default_factory=dict)
    staged: dict[str, StagedTable] = field(default_factory=dict)
    quarantined: dict[str, dict[str, Any]] = field(default_factory=dict)
    _con: duckdb.DuckDBPyConnection | None = None

    @property
    def con(self) -> duckdb.DuckDBPyConnection:
        """A private DuckDB connection for parsers that stream files through SQL."""
        if self._con is None:
            self._con = connect()
            self._con.execute(f"SET temp_directory = '{self.out_dir / '.duckdb_tmp'}'")
        return self._con

    def write(self, name: str, data: TableData) -> StagedTable:
        """Stage ``data`` as registry table ``name``."""
        connection = self._con if isinstance(data, duckdb.DuckDBPyRelation) else None
        staged = stage_table(name, data, self.out_dir / f"{name}.parquet", con=connection)
        self.staged[name] = staged
        self.report(f"{name}: {staged.rows:,} rows")
        return staged

    def quarantine(self, file: str, reason: str, *, line: int | None = None) -> None:
        """Set aside one malformed record of an otherwise good ``file`` (its mirror path):
        it is counted, a few examples are kept for the manifest, and parsing goes on.
        Past :data:`QUARANTINE_LIMIT` records the file itself is judged malformed."""
        entry = self.quarantined.setdefault(file, {"count": 0, "examples": []})
        entry["count"] += 1
        if len(entry["examples"]) < QUARANTINE_EXAMPLES:
            entry["examples"].append({"line": line, "reason": reason})
        if entry["count"] > QUARANTINE_LIMIT:
            raise ParseError(
                self.snapshot.source,
                file,
                f"more than {QUARANTINE_LIMIT} malformed records (the last: {reason})",
                line=line,
            )
        where = f"{file}, line {line}" if line is not None else file
        self.report(
            f"set aside a malformed record of {where} ({reason}); the rest of the file is "
            "read, and the release's manifest counts it"
        )

    def table_path(self, name: str) -> Path:
        """The staged Parquet file of a table of a source this one depends on."""
        try:
            return self.dependency_tables[name]
        except KeyError:
            raise KeyError(f"{self.snapshot.source} needs table {name}, not staged") from None

    def close(self) -> None:
        if self._con is not None:
            self._con.close()
            self._con = None


@dataclass(frozen=True)
class SearchDocContext:
    """What a search-doc step reads: the staged tables of its source (and dependencies)."""

    tables: Mapping[str, Path]
    con: duckdb.DuckDBPyConnection

    def relation(self, name: str) -> duckdb.DuckDBPyRelation:
        return self.con.read_parquet(str(self.tables[name]))

    def sql(self, query: str) -> duckdb.DuckDBPyRelation:
        """Run ``query`` with every staged table available as a view of its name."""
        for name, path in self.tables.items():
            self.con.execute(
                f"CREATE OR REPLACE VIEW {name} AS SELECT * FROM read_parquet('{path}')"
            )
        return self.con.sql(query)


@dataclass(frozen=True)
class CoverageContext(SearchDocContext):
    """What a coverage step reads: the source's staged tables, its snapshot and the
    build's profile."""

    snapshot: RawSnapshot
    profile: str

    def count(self, query: str) -> int:
        """The single number ``query`` (over the staged tables) returns."""
        return int(self.row(query)[0] or 0)

    def row(self, query: str) -> tuple[Any, ...]:
        """The first row ``query`` (over the staged tables) returns."""
        return self.sql(query).fetchall()[0]

    def counts_by(self, query: str) -> dict[str, int]:
        """``query``'s (label, count) rows as an ordered mapping."""
        return {str(label): int(count) for label, count in self.sql(query).fetchall()}


def coverage_block(
    *,
    selection: str | list[str],
    summary: str,
    counts: Mapping[str, Any],
    left_out: list[dict[str, Any]] | None = None,
    notes: list[str] | None = None,
) -> dict[str, Any]:
    """A source's coverage: what was selected, what the release holds, and what the
    upstream offered that it lacks (each with the flag or step that would add it).

    ``complete`` is true exactly when nothing is left out."""
    return {
        "selection": selection,
        "complete": not left_out,
        "summary": summary,
        "counts": dict(counts),
        "left_out": list(left_out or []),
        "notes": list(notes or []),
    }


def left_out(what: str, remedy: str, count: int | None = None) -> dict[str, Any]:
    """One thing the upstream offers that the release lacks, and how to add it."""
    return {"what": what, "count": count, "remedy": remedy}


Tokens = dict[str, str]
HOUR_S = 3600


@dataclass(frozen=True)
class UpstreamProbe:
    """A cheap check of a source's upstream for its sensor: ``tokens`` returns a few
    version tokens (a digest, a version stamp) that change when the upstream does;
    the sensor runs it every ``interval_s`` and rebuilds the source when they change.
    ``what`` names what it watches, for the sensor's description."""

    tokens: Callable[[FetchContext], Tokens]
    interval_s: int
    what: str


@dataclass(frozen=True)
class SourceSpec:
    """A source: its descriptor (name, title, homepage, folded kinds; declared in
    :mod:`metabundle.schemas.sources`), what it produces, and its three steps.

    ``version`` names the parser's output format; bump it when parsing or the search
    documents change so that staged tables and documents cached under the old version
    are not reused. ``public_urls`` are the
    public addresses a build without a mirror reads first (probed before the build
    starts). ``probe``, when set, gives the source a sensor that rebuilds it when its
    upstream changes.
    """

    descriptor: SourceDescriptor
    tables: tuple[str, ...]
    fetch: Callable[[FetchContext], RawSnapshot]
    parse: Callable[[ParseContext], None]
    search_docs: Callable[[SearchDocContext], duckdb.DuckDBPyRelation]
    coverage: Callable[[CoverageContext], dict[str, Any]]
    public_urls: Callable[[BuildSettings], tuple[str, ...]] = lambda settings: ()
    probe: UpstreamProbe | None = None
    depends_on: tuple[str, ...] = ()
    version: str = "1"

    @property
    def name(self) -> str:
        return self.descriptor.name

    @property
    def title(self) -> str:
        return self.descriptor.title

    @property
    def homepage(self) -> str:
        return self.descriptor.homepage

    @property
    def folded_kinds(self) -> Mapping[str, str]:
        return self.descriptor.folded_kinds
