"""DuckDB connections opened the project's way (quiet, bounded, optionally read-only)."""

from __future__ import annotations

from pathlib import Path

import duckdb


def connect(
    path: Path | str | None = None,
    *,
    read_only: bool = False,
    config: dict[str, str | bool | int] | None = None,
) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection (in memory when ``path`` is None) with no progress bar."""
    target = ":memory:" if path is None else str(path)
    con = duckdb.connect(target, read_only=read_only, config=dict(config or {}))
    con.execute("SET enable_progress_bar = false")
    return con
