"""Compare two releases: sources, tables, row counts, and the entities each source
added, removed or changed.

Entities are compared by primary key over the two releases' Parquet files, streamed
through DuckDB: a key only in the new release is *added*, only in the old one
*removed*, and in both with a different row (over the columns both files have) is
*changed*. Search and release tables (``search_doc``, ``fts_*``, ``embedding``, ...)
follow from the source tables, so they are compared by row count only.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from metabundle.db import connect
from metabundle.release.manifest import read_manifest
from metabundle.schemas import get_table, quote_identifier

DERIVED_SOURCE = "metabundle"
EXAMPLES = 5
CHANGES = ("added", "removed", "changed")


@dataclass
class TableDiff:
    """One table in either release."""

    name: str
    source: str
    status: str  # "added", "removed" or "both"
    old_rows: int | None
    new_rows: int | None
    compared: bool = False
    added: int = 0
    removed: int = 0
    changed: int = 0
    examples: dict[str, list[Any]] = field(default_factory=dict)
    note: str | None = None

    @property
    def differs(self) -> bool:
        return (
            self.status != "both"
            or self.old_rows != self.new_rows
            or bool(self.added or self.removed or self.changed)
        )


def diff_releases(old: Path, new: Path, *, examples: int = EXAMPLES) -> dict[str, Any]:
    """Everything that differs between release folders ``old`` and ``new``."""
    old_manifest, new_manifest = read_manifest(old), read_manifest(new)
    tables = []
    with connect() as con:
        names = sorted(set(old_manifest["tables"]) | set(new_manifest["tables"]))
        for name in names:
            tables.append(
                _table_diff(
                    con, name, old, new, old_manifest["tables"], new_manifest["tables"], examples
                )
            )
    sources = _source_diffs(old_manifest["sources"], new_manifest["sources"])
    for name, entry in sources.items():
        compared = [t for t in tables if t.source == name and t.compared]
        entry["entities"] = {c: sum(getattr(t, c) for t in compared) for c in CHANGES}
    return {
        "old": {"version": old_manifest["version"], "path": str(old)},
        "new": {"version": new_manifest["version"], "path": str(new)},
        "sources": sources,
        "tables": [asdict(t) | {"differs": t.differs} for t in tables],
        "identical": not any(t.differs for t in tables),
    }


def _source_diffs(old: dict[str, Any], new: dict[str, Any]) -> dict[str, dict[str, Any]]:
    result = {}
    for name in sorted(set(old) | set(new)):
        before, after = old.get(name), new.get(name)
        status = "added" if before is None else "removed" if after is None else "both"
        result[name] = {
            "status": status,
            "old_upstream_version": (before or {}).get("upstream_version"),
            "new_upstream_version": (after or {}).get("upstream_version"),
            "inputs_changed": status != "both"
            or before.get("inputs_sha256") != after.get("inputs_sha256"),  # type: ignore[union-attr]
        }
    return result


def _table_source(name: str, entry: dict[str, Any] | None) -> str:
    if entry and entry.get("source"):
        return str(entry["source"])
    try:
        return get_table(name).source
    except KeyError:
        return DERIVED_SOURCE


def _table_diff(
    con: duckdb.DuckDBPyConnection,
    name: str,
    old: Path,
    new: Path,
    old_tables: dict[str, Any],
    new_tables: dict[str, Any],
    examples: int,
) -> TableDiff:
    before, after = old_tables.get(name), new_tables.get(name)
    status = "added" if before is None else "removed" if after is None else "both"
    diff = TableDiff(
        name=name,
        source=_table_source(name, after or before),
        status=status,
        old_rows=before["rows"] if before else None,
        new_rows=after["rows"] if after else None,
    )
    if status != "both" or diff.source == DERIVED_SOURCE:
        return diff
    old_file, new_file = old / "parquet" / f"{name}.parquet", new / "parquet" / f"{name}.parquet"
    if not old_file.exists() or not new_file.exists():
        diff.note = "no Parquet file in both releases; row counts only"
        return diff
    try:
        key = get_table(name).primary_key
    except KeyError:
        diff.note = "not in this metabundle's table registry; row counts only"
        return diff
    common = _common_columns(con, old_file, new_file)
    if not key or not set(key) <= set(common):
        diff.note = "primary key columns differ between the releases; row counts only"
        return diff
    _compare_rows(con, diff, old_file, new_file, key, common, examples)
    return diff


def _common_columns(con: duckdb.DuckDBPyConnection, old: Path, new: Path) -> list[str]:
    def columns(path: Path) -> list[str]:
        return [
            row[0]
            for row in con.execute("DESCRIBE SELECT * FROM read_parquet(?)", [str(path)]).fetchall()
        ]

    new_columns = set(columns(new))
    return [c for c in columns(old) if c in new_columns]


def _compare_rows(
    con: duckdb.DuckDBPyConnection,
    diff: TableDiff,
    old: Path,
    new: Path,
    key: tuple[str, ...],
    common: list[str],
    examples: int,
) -> None:
    """Count and sample added, removed and changed keys of one table."""
    keys = ", ".join(quote_identifier(k) for k in key)
    row_hash = f"md5(CAST(row({', '.join(quote_identifier(c) for c in common)}) AS VARCHAR))"

    def side(path: Path) -> str:
        return f"SELECT {keys}, {row_hash} AS h FROM read_parquet('{_literal(path)}')"

    con.execute(
        f"""
        CREATE OR REPLACE TEMP TABLE delta AS
        SELECT {keys},
               CASE WHEN o.h IS NULL THEN 'added'
                    WHEN n.h IS NULL THEN 'removed'
                    ELSE 'changed' END AS change
        FROM ({side(old)}) AS o FULL OUTER JOIN ({side(new)}) AS n USING ({keys})
        WHERE o.h IS DISTINCT FROM n.h
        """
    )
    counts = dict(con.execute("SELECT change, count(*) FROM delta GROUP BY change").fetchall())
    diff.compared = True
    diff.added, diff.removed, diff.changed = (counts.get(c, 0) for c in CHANGES)
    for change in CHANGES:
        if counts.get(change):
            rows = con.execute(
                f"SELECT {keys} FROM delta WHERE change = ? ORDER BY {keys} LIMIT ?",
                [change, examples],
            ).fetchall()
            diff.examples[change] = [row[0] if len(row) == 1 else list(row) for row in rows]
    con.execute("DROP TABLE delta")


def _literal(path: Path) -> str:
    return str(path).replace("'", "''")


# -- text ---------------------------------------------------------------------------------


def diff_text(result: dict[str, Any]) -> str:
    """The diff as readable lines: sources, then each table that differs."""
    old, new = result["old"]["version"], result["new"]["version"]
    lines = [f"metabundle diff {old} → {new}", "", "sources:"]
    for name, source in result["sources"].items():
        if source["status"] != "both":
            lines.append(f"  {name:<6} {source['status']}")
            continue
        version = _arrow(source["old_upstream_version"], source["new_upstream_version"])
        inputs = "inputs changed" if source["inputs_changed"] else "inputs unchanged"
        counts = ", ".join(f"{n:,} {c}" for c, n in source["entities"].items())
        lines.append(f"  {name:<6} upstream {version}; {inputs}; rows by key: {counts}")
    differing = [t for t in result["tables"] if t["differs"]]
    lines += ["", f"tables: {len(differing)} of {len(result['tables'])} differ"]
    for table in differing:
        lines += _table_lines(table)
    if result["identical"]:
        lines.append("  none: every table has the same rows")
    return "\n".join(lines)


def _arrow(before: Any, after: Any) -> str:
    return f"{before or '-'}" if before == after else f"{before or '-'} → {after or '-'}"


def _table_lines(table: dict[str, Any]) -> list[str]:
    name = f"[{table['source']}] {table['name']}"
    if table["status"] != "both":
        rows = table["new_rows"] if table["status"] == "added" else table["old_rows"]
        return [f"  {name:<38} {table['status']} ({rows:,} rows)"]
    rows = f"{table['old_rows']:,} → {table['new_rows']:,} rows"
    if not table["compared"]:
        suffix = f" ({table['note']})" if table["note"] else ""
        return [f"  {name:<38} {rows}{suffix}"]
    counts = f"+{table['added']:,} -{table['removed']:,} ~{table['changed']:,}"
    lines = [f"  {name:<38} {rows}; {counts} by key"]
    for change, keys in table["examples"].items():
        shown = ", ".join(str(k) for k in keys)
        more = table[change] - len(keys)
        lines.append(f"      {change}: {shown}{f' (+{more:,} more)' if more > 0 else ''}")
    return lines
