"""Parse step: every export's vocabulary files → typed Parquet parts → merged tables.

Each table file of each export is read once by DuckDB's CSV reader with explicit
types (:mod:`.athena`) and written to a Parquet part in a scratch folder, so that a
bad row is reported (or quarantined) against the one file it is in. Zip members are extracted one at
a time next to the parts and deleted as soon as they are read. The parts of a table
are then merged and handed to ``ctx.write``, which sorts by the key and writes the
staged Parquet file; the scratch folder is removed at the end.

Merge rule: rows are deduplicated by the table's primary key. When several exports
hold the same key, the row of the export listed first wins (``--omop-vocab`` order;
mirror folders in name order). When one export holds the same key twice, the row that
sorts first by its remaining columns wins. Exact duplicate rows simply collapse.

Memory stays bounded: DuckDB's connection is capped like every working connection
(``duckdb_work_memory_mb``, :func:`metabundle.db.connect`) and spills sorts and
aggregates to the parse's temporary directory, so a full Athena export (tens of
millions of relationships) streams through in a few GB.
"""

from __future__ import annotations

import shutil
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb
import pyarrow.parquet as pq

from metabundle.errors import ParseError
from metabundle.schemas import Table, duckdb_type, quote_identifier
from metabundle.schemas.omop import LOOKUP_COPIES
from metabundle.sources.base import ParseContext, RawFile
from metabundle.sources.omop.athena import (
    REJECT_SCANS,
    REJECTS,
    SOURCE,
    TABLE_FILES,
    FileInput,
    TableFile,
    check_columns,
    parse_error,
    read_header,
    set_aside_rejects,
    sql_literal,
    typed_rows_sql,
)
from metabundle.sources.omop.exports import Export

MERGE_RULE = (
    "rows deduplicated by primary key; for a key in several exports the first export "
    "listed wins; within one export the row first in column order wins"
)
SCRATCH = ".omop_parts"
COPY_CHUNK = 1 << 20


def _configure(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("SET preserve_insertion_order = false")


def _label(raw: RawFile) -> str:
    """How errors name a file: its path on disk, or the URL it was downloaded from."""
    return str(raw.path) if raw.url.startswith("file:") else raw.url


@contextmanager
def _table_file(
    ctx: ParseContext, export: Export, file_name: str, scratch: Path
) -> Iterator[FileInput]:
    """One table file of an export, extracted if it is zipped."""
    if export.archive is None:
        raw = ctx.snapshot.file(export.files[file_name])
        yield FileInput(raw.path, _label(raw), raw.key)
        return
    archive = ctx.snapshot.file(export.archive)
    member = export.files[file_name]
    label = f"{archive.path}:{member}"
    target = scratch / f"{export.name}.{file_name}"
    try:
        with (
            zipfile.ZipFile(archive.path) as zipped,
            zipped.open(member) as source,
            target.open("wb") as sink,
        ):
            shutil.copyfileobj(source, sink, COPY_CHUNK)
    except (zipfile.BadZipFile, OSError) as error:
        raise ParseError(SOURCE, label, f"cannot extract it from the zip ({error})") from None
    try:
        yield FileInput(target, label, f"{archive.key}:{member}")
    finally:
        target.unlink(missing_ok=True)


def _stage_part(ctx: ParseContext, table: Table, source: FileInput, rank: int, out: Path) -> int:
    """Read one file typed as ``table`` into a Parquet part, quarantining the records
    the reader rejects; the number of rows written."""
    header = read_header(source.path, source.label)
    check_columns(table, header, source.label)
    query = typed_rows_sql(source.path, table, header, rank)
    con = ctx.con
    con.execute(f"DROP TABLE IF EXISTS {REJECTS}; DROP TABLE IF EXISTS {REJECT_SCANS}")
    try:
        con.execute(f"COPY ({query}) TO {sql_literal(str(out))} (FORMAT parquet)")
    except duckdb.Error as error:
        raise parse_error(error, source.label, header) from None
    set_aside_rejects(con, source, header, ctx.quarantine)
    return pq.ParquetFile(out).metadata.num_rows


def _empty(con: duckdb.DuckDBPyConnection, table: Table) -> duckdb.DuckDBPyRelation:
    columns = ", ".join(
        f"CAST(NULL AS {duckdb_type(c, table)}) AS {quote_identifier(c.name)}"
        for c in table.columns
    )
    return con.sql(f"SELECT {columns} LIMIT 0")


def _merged(
    con: duckdb.DuckDBPyConnection, table: Table, parts: list[Path]
) -> duckdb.DuckDBPyRelation:
    """The parts' rows deduplicated by key as the module docstring says."""
    if not parts:
        return _empty(con, table)
    source = "read_parquet([" + ", ".join(sql_literal(str(p)) for p in parts) + "])"
    keys = ", ".join(quote_identifier(k) for k in table.primary_key)
    rest = [quote_identifier(c) for c in table.column_names if c not in table.primary_key]
    order = ", ".join(["_export", *rest])
    return con.sql(
        f"""
        SELECT * EXCLUDE (_export)
        FROM {source}
        QUALIFY row_number() OVER (PARTITION BY {keys} ORDER BY {order}) = 1
        """
    )


def _ingest_table(
    ctx: ParseContext, table_file: TableFile, exports: list[Export], scratch: Path
) -> None:
    """Stage every export's file of one table, then write the merged table."""
    table = table_file.table
    parts: list[Path] = []
    rows_read = 0
    for rank, export in enumerate(exports):
        if table_file.file_name not in export.files:
            continue
        out = scratch / f"{table.name}.{rank:04d}.parquet"
        with _table_file(ctx, export, table_file.file_name, scratch) as source:
            rows_read += _stage_part(ctx, table, source, rank, out)
        parts.append(out)
    staged = ctx.write(table.name, _merged(ctx.con, table, parts))
    for part in parts:
        part.unlink()
    if staged.rows < rows_read:
        merged = rows_read - staged.rows
        ctx.report(
            f"{table.name}: {merged:,} rows repeat a key of another row; the row of the "
            "first export that has the key is kept"
        )


def parse(ctx: ParseContext) -> None:
    """Write every ``omop_*`` table from the snapshot's exports."""
    exports = [Export.from_json(e) for e in ctx.snapshot.details["exports"]]
    _configure(ctx.con)
    scratch = ctx.out_dir / SCRATCH
    scratch.mkdir(parents=True, exist_ok=True)
    try:
        for table_file in TABLE_FILES:
            _ingest_table(ctx, table_file, exports, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    for name, copy in LOOKUP_COPIES.items():
        ctx.write(copy.name, ctx.con.sql(f"SELECT * FROM read_parquet('{ctx.staged[name].path}')"))
