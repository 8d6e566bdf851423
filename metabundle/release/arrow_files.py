"""The release's memory-mapped Arrow IPC files: how they are streamed out of a staged
table, and the binary search over a sorted string column that serving finds rows by.

Serving maps these files instead of asking DuckDB: a lookup reads the few pages its
search touches, which the kernel can drop (and the mapped-pages budget lets go),
where DuckDB keeps every index node and table block it has read for the life of the
connection.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa

from metabundle.db import connect

BATCH_ROWS = 65_536


def write_arrow_file(
    sql: str,
    destination: Path,
    check: Callable[[pa.RecordBatch, int], None] = lambda batch, rows_before: None,
) -> int:
    """Stream the rows of ``sql`` into the IPC file ``destination`` in batches of
    :data:`BATCH_ROWS`; ``check(batch, rows_before)`` sees each batch before it is
    written and raises to refuse it. The number of rows written."""
    destination.parent.mkdir(parents=True, exist_ok=True)
    written = 0
    with connect() as con:
        reader = con.sql(sql).to_arrow_reader(BATCH_ROWS)
        with (
            pa.OSFile(str(destination), "wb") as sink,
            pa.ipc.new_file(sink, reader.schema) as writer,
        ):
            for batch in reader:
                check(batch, written)
                writer.write_batch(batch)
                written += len(batch)
    return written


def read_batches(path: Path) -> tuple[pa.Schema, list[pa.RecordBatch]]:
    """The batches of the IPC file at ``path``, memory-mapped (nothing is read yet)."""
    reader = pa.ipc.open_file(pa.memory_map(str(path)))
    return reader.schema, [reader.get_batch(i) for i in range(reader.num_record_batches)]


def column_of(schema: pa.Schema, batches: list[pa.RecordBatch], name: str) -> pa.ChunkedArray:
    """Column ``name`` of ``batches`` as one chunked array (no copy)."""
    return pa.chunked_array([batch.column(name) for batch in batches], schema.field(name).type)


class SortedStrings:
    """A sorted string column over batches of a mapped file, searched by binary
    search: a lookup reads about twenty values, whatever the column's length."""

    def __init__(self, column: pa.ChunkedArray) -> None:
        self._column = column

    def __len__(self) -> int:
        return len(self._column)

    def __getitem__(self, position: int) -> str:
        return self._column[position].as_py()

    def slice(self, start: int, stop: int) -> pa.ChunkedArray:
        """The values at ``start`` to ``stop`` (excluded), read as one slice."""
        return self._column.slice(start, stop - start)

    def span(self, value: str) -> range:
        """The positions that hold ``value`` (empty where none does)."""
        start = bisect.bisect_left(self, value)
        return range(start, bisect.bisect_right(self, value, lo=start))
