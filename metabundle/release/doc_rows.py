"""``search/doc_rows.arrow``: the ``search_doc`` columns a search answer shows
(:data:`~metabundle.schemas.search.SHOWN_DOC_COLUMNS`), one row per document in docno
order, as an uncompressed Arrow IPC file that serving processes memory-map.

Hydrating a result list is then a ``take`` of its rows: 0.25 ms for 60 rows of a
1.4M-document release, where DuckDB's ``WHERE docno IN (...)`` read every shown column
of every row group it could not skip (20 ms), and kept what it read in its buffer.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from metabundle.db import connect
from metabundle.errors import ReleaseError
from metabundle.schemas.search import SHOWN_DOC_COLUMNS

DOC_ROWS_FILE = "search/doc_rows.arrow"
BATCH_ROWS = 65_536


def write_doc_rows(search_doc: Path, destination: Path) -> int:
    """Write the rows file of the ``search_doc`` Parquet file at ``search_doc``, streamed
    in docno order; the number of rows. Docnos must run 0..n-1 without a gap (row i is
    document i)."""
    destination.parent.mkdir(parents=True, exist_ok=True)
    columns = ", ".join(SHOWN_DOC_COLUMNS)
    written = 0
    with connect() as con:
        reader = con.sql(
            f"SELECT {columns} FROM read_parquet('{search_doc}') ORDER BY docno"
        ).to_arrow_reader(BATCH_ROWS)
        with (
            pa.OSFile(str(destination), "wb") as sink,
            pa.ipc.new_file(sink, reader.schema) as writer,
        ):
            for batch in reader:
                docnos = batch.column("docno").to_numpy()
                wrong = np.flatnonzero(docnos != np.arange(written, written + len(docnos)))
                if wrong.size:
                    raise ReleaseError(
                        f"search_doc docnos do not run 0..n-1 (docno {written + wrong[0]:,} "
                        "is missing)"
                    )
                writer.write_batch(batch)
                written += len(docnos)
    return written


class DocRows:
    """The rows file memory-mapped: nothing is read until rows are taken, and a take
    reads only the batches that hold the rows asked for (``Table.take`` over many
    batches joins them first: 64 ms a call at 1.4M documents)."""

    def __init__(self, path: Path) -> None:
        reader = pa.ipc.open_file(pa.memory_map(str(path)))
        self.batches = [reader.get_batch(i) for i in range(reader.num_record_batches)]
        self.starts = np.cumsum([0, *(len(b) for b in self.batches)])
        self.schema = reader.schema

    @property
    def num_rows(self) -> int:
        return int(self.starts[-1])

    def take(self, rows: np.ndarray) -> list[dict[str, Any]]:
        """The rows at ``rows`` (ascending, distinct, in range) as dictionaries."""
        found: list[dict[str, Any]] = []
        at = np.searchsorted(self.starts, rows, side="right") - 1
        for batch in np.unique(at):
            local = rows[at == batch] - self.starts[batch]
            found += self.batches[batch].take(pa.array(local)).to_pylist()
        return found

    def table(self) -> pa.Table:
        """Every row (for checks and tests)."""
        return pa.Table.from_batches(self.batches, schema=self.schema)
