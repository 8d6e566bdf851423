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

from metabundle.errors import ReleaseError
from metabundle.release.arrow_files import (
    SortedStrings,
    column_of,
    read_batches,
    write_arrow_file,
)
from metabundle.schemas.search import SHOWN_DOC_COLUMNS

DOC_ROWS_FILE = "search/doc_rows.arrow"
LAST_CHARACTER = "\U0010ffff"
"""Sorts after every character a ``doc_id`` holds: ``prefix + LAST_CHARACTER`` ends a run."""


def write_doc_rows(search_doc: Path, destination: Path) -> int:
    """Write the rows file of the ``search_doc`` Parquet file at ``search_doc``, streamed
    in docno order; the number of rows. Docnos must run 0..n-1 without a gap (row i is
    document i) and follow ``doc_id`` order (:meth:`DocRows.docnos_of` relies on it)."""
    last_doc_id = [""]

    def check(batch: pa.RecordBatch, written: int) -> None:
        docnos = batch.column("docno").to_numpy()
        wrong = np.flatnonzero(docnos != np.arange(written, written + len(docnos)))
        if wrong.size:
            raise ReleaseError(
                f"search_doc docnos do not run 0..n-1 (docno {written + wrong[0]:,} is missing)"
            )
        doc_ids = pa.concat_arrays([pa.array(last_doc_id), batch.column("doc_id")])
        early = np.flatnonzero(
            pc.less_equal(doc_ids[1:], doc_ids[:-1]).to_numpy(zero_copy_only=False)
        )
        if early.size:
            raise ReleaseError(
                f"search_doc docnos do not follow doc_id order (docno "
                f"{written + early[0]:,} is out of order)"
            )
        last_doc_id[0] = doc_ids[-1].as_py()

    columns = ", ".join(SHOWN_DOC_COLUMNS)
    return write_arrow_file(
        f"SELECT {columns} FROM read_parquet('{search_doc}') ORDER BY docno", destination, check
    )


class DocRows:
    """The rows file memory-mapped: nothing is read until rows are taken, and a take
    reads only the batches that hold the rows asked for (``Table.take`` over many
    batches joins them first: 64 ms a call at 1.4M documents)."""

    def __init__(self, path: Path) -> None:
        self.schema, self.batches = read_batches(path)
        self.starts = np.cumsum([0, *(len(b) for b in self.batches)])

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
        ``doc_id`` column."""
        found: dict[str, int] = {}
        for doc_id in sorted(set(doc_ids)):
            if at := self._doc_ids.span(doc_id):
                found[doc_id] = at[0]
        return found

    def docnos_under(self, prefix: str) -> dict[str, int]:
        """The docno of every document whose ``doc_id`` starts with ``prefix``, by the
        rest of its ``doc_id`` (``docnos_under("ukb:field:")["21001"]``). Those
        documents are one run of ``doc_id`` order, found by two binary searches and read
        as one slice."""
        start = bisect.bisect_left(self._doc_ids, prefix)
        stop = bisect.bisect_left(self._doc_ids, prefix + LAST_CHARACTER, lo=start)
        ids = self._doc_ids.slice(start, stop)
        rests = pc.utf8_slice_codeunits(ids, len(prefix)).to_pylist()
        return dict(zip(rests, range(start, stop), strict=True))

    @cached_property
    def _doc_ids(self) -> SortedStrings:
        return SortedStrings(column_of(self.schema, self.batches, "doc_id"))

    def table(self) -> pa.Table:
        """Every row (for checks and tests)."""
        return pa.Table.from_batches(self.batches, schema=self.schema)
