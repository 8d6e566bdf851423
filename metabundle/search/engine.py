"""The hardened read-only DuckDB connection every serving process opens.

DuckDB's own recommendations for untrusted SQL, locked before any query runs:
external access off, no extension autoload, autoinstall or community extensions, no
temporary spill, a memory limit and a thread count. On top of those the local file
system is switched off once the database is open: with external access off DuckDB
still lets a query read the database file itself and its ``.wal``/``.tmp`` siblings
(``read_blob``, ``read_text``, ``read_duckdb``, ``glob``); with the file system off
no query can open any file, while the open database keeps reading its pages. A
connection that runs SQL from outside (``run_sql``'s workers) then locks its
configuration; the serving connection, which runs only the search core's own
parameterized SQL, keeps the memory limit adjustable so that it can let the memory
it holds between calls go (:meth:`~metabundle.search.release.Release.trim_duckdb_memory`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb

from metabundle.release.integrity import DAMAGED
from metabundle.search.errors import RELEASE_DAMAGED, ToolError

DEFAULT_THREADS = 2


def hardened_config(memory_limit: str, threads: int) -> dict[str, Any]:
    """The connect-time settings (the configuration is locked after the file system is
    switched off, see :func:`open_hardened`)."""
    return {
        "enable_external_access": False,
        "autoload_known_extensions": False,
        "autoinstall_known_extensions": False,
        "allow_community_extensions": False,
        "memory_limit": memory_limit,
        "max_temp_directory_size": "0B",
        # no temporary folder: a query past its memory is out of memory, not refused the
        # file system as it tries to spill
        "temp_directory": "",
        "threads": threads,
    }


def open_hardened(
    database: Path,
    *,
    memory_limit: str,
    threads: int = DEFAULT_THREADS,
    lock: bool = True,
) -> duckdb.DuckDBPyConnection:
    """``database`` opened read-only, file system off, configuration locked unless
    ``lock`` is false."""
    con = duckdb.connect(
        str(database), read_only=True, config=hardened_config(memory_limit, threads)
    )
    locked = con.execute("SELECT current_setting('lock_configuration')").fetchone()
    if not (locked and locked[0]):  # a second connection shares the locked instance
        con.execute("SET disabled_filesystems = 'LocalFileSystem'")
        if lock:
            con.execute("SET lock_configuration = true")
    return con


CORRUPT = "Corrupt database file"
"""How DuckDB reports a block whose checksum fails when a query reads it."""


def damaged_database(error: duckdb.Error) -> ToolError | None:
    """``release_damaged`` when ``error`` is DuckDB finding a damaged block of the
    release's database (after the open check passed: an edit that kept the file's
    inode, size and time, or damage while serving), else ``None``."""
    if CORRUPT not in str(error):
        return None
    return ToolError(RELEASE_DAMAGED, f"metabundle.duckdb has a damaged block; {DAMAGED}")
