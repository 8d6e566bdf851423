"""``search/doc_rows.arrow``: the ``search_doc`` columns a search answer shows
(:data:`~metabundle.schemas.search.SHOWN_DOC_COLUMNS`), one row per document in docno
order, as an uncompressed Arrow IPC file that serving processes memory-map.

Hydrating a result list is then a ``take`` of its rows: 0.25 ms for 60 rows of a
1.4M-document release, where DuckDB's ``WHERE docno IN (...)`` read every shown column
of every row group it could not skip (20 ms), and kept what it read in its buffer.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from metabundle.db import connect
from metabundle.errors import ReleaseError
from metabundle.schemas.search import SHOWN_DOC_COLUMNS

DOC_ROWS_FILE = "search/doc_rows.arrow"
BATCH_ROWS = 65_536


def write_doc_rows(search_doc: Path, destination: Path) -> int:
    """Write the rows file of the ``search_doc`` Parquet file at ``search_doc``, streamed
    in docno order; the number of rows. Docnos must run 0..n-1 without a gap (row i is
    document i) and follow ``doc_id`` order (:meth:`DocRows.docnos_of` relies on it)."""
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
            last_doc_id = ""
            for batch in reader:
                docnos = batch.column("docno").to_numpy()
                wrong = np.flatnonzero(docnos != np.arange(written, written + len(docnos)))
                if wrong.size:
                    raise ReleaseError(
                        f"search_doc docnos do not run 0..n-1 (docno {written + wrong[0]:,} "
                        "is missing)"
                    )
                doc_ids = pa.concat_arrays([pa.array([last_doc_id]), batch.column("doc_id")])
                early = np.flatnonzero(
                    pc.less_equal(doc_ids[1:], doc_ids[:-1]).to_numpy(zero_copy_only=False)
                )
                if early.size:
                    raise ReleaseError(
                        f"search_doc docnos do not follow doc_id order (docno "
                        f"{written + early[0]:,} is out of order)"
                    )
                writer.write_batch(batch)
                written += len(docnos)
                last_doc_id = doc_ids[-1].as_py()
    return written


class _Values:
    """A string column read one value at a time, as :mod:`bisect` reads a sequence."""

    def __init__(self, column: pa.StringArray) -> None:
        self._column = column

    def __len__(self) -> int:
        return len(self._column)

    def __getitem__(self, index: int) -> str:
        return self._column[index].as_py()


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

    def take(self, rows: np.ndarray, columns: Sequence[str] | None = None) -> list[dict[str, Any]]:
        """The rows at ``rows`` (ascending, distinct, in range) as dictionaries of
        ``columns`` (default: every column). The rows of each batch are taken together
        and converted once: fewer columns cost less (a ranking reads a few, a payload
        shows them all)."""
        at = np.searchsorted(self.starts, rows, side="right") - 1
        names = list(columns) if columns is not None else self.schema.names
        parts = [
            self.batches[batch].select(names).take(pa.array(rows[at == batch] - self.starts[batch]))
            for batch in np.unique(at)
        ]
        if not parts:
            return []
        return pa.Table.from_batches(parts).to_pylist()

    def docnos_of(self, doc_ids: Iterable[str]) -> dict[str, int]:
        """The docno of each of ``doc_ids`` the file holds. Documents are numbered in
        ``doc_id`` order, so each is found by binary search, reading a few values of the
        ``doc_id`` column; an id not at its place is not in the file."""
        found: dict[str, int] = {}
        for doc_id in sorted(set(doc_ids)):
            batch = max(0, bisect.bisect_right(self._first_doc_ids, doc_id) - 1)
            column = self._doc_id_columns[batch]
            position = bisect.bisect_left(_Values(column), doc_id)
            if position < len(column) and column[position].as_py() == doc_id:
                found[doc_id] = int(self.starts[batch]) + position
        return found

    @cached_property
    def _doc_id_columns(self) -> list[pa.StringArray]:
        return [batch.column("doc_id") for batch in self.batches]

    @cached_property
    def _first_doc_ids(self) -> list[str]:
        return [column[0].as_py() if len(column) else "" for column in self._doc_id_columns]

    def table(self) -> pa.Table:
        """Every row (for checks and tests)."""
        return pa.Table.from_batches(self.batches, schema=self.schema)
