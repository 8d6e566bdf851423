"""DuckDB connections opened the project's way (quiet, bounded, optionally read-only)."""

from __future__ import annotations

from pathlib import Path

import duckdb

from metabundle.settings import RuntimeSettings


def connect(
    path: Path | str | None = None,
    *,
    read_only: bool = False,
    config: dict[str, str | bool | int] | None = None,
) -> duckdb.DuckDBPyConnection:
    """A DuckDB working connection (in memory when ``path`` is None) with no progress
    bar, whose memory is bounded at ``duckdb_work_memory_mb`` unless ``config`` names
    a ``memory_limit``. DuckDB's own default is 80 % of the machine's memory, and it
    keeps what it reads up to that limit: a build's steps then held memory in
    proportion to the corpus (the release step 8.4 GB at 3M documents)."""
    settings = RuntimeSettings.current()
    bounded: dict[str, str | bool | int] = {
        "memory_limit": f"{settings.duckdb_work_memory_mb}MB",
        **({"temp_directory": str(settings.duckdb_temp_dir)} if settings.duckdb_temp_dir else {}),
        **(config or {}),
    }
    target = ":memory:" if path is None else str(path)
    con = duckdb.connect(target, read_only=read_only, config=bounded)
    con.execute("SET enable_progress_bar = false")
    return con
