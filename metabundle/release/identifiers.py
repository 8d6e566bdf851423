"""``search/identifiers.arrow``: ``search_identifier`` (every accession, field id,
alias and code of every document, lower-cased, with its docno) sorted by identifier,
as an uncompressed Arrow IPC file that serving processes memory-map.

Every search request looks its query up here before any ranking. A binary search
reads about twenty identifiers of the mapped file (0.04 ms); DuckDB's lookup through
an ART index of ``identifier`` took 0.9 ms at a million documents, and kept every
index node it read for the life of the connection (``docs/architecture.md``,
decision 17).
"""

from __future__ import annotations

from functools import cached_property
from pathlib import Path

import pyarrow as pa

from metabundle.release.arrow_files import (
    SortedStrings,
    column_of,
    read_batches,
    write_arrow_file,
)

IDENTIFIERS_FILE = "search/identifiers.arrow"


def write_identifiers(search_identifier: Path, destination: Path) -> int:
    """Write the identifiers file of the ``search_identifier`` Parquet file at
    ``search_identifier``, sorted by identifier then docno; the number of rows. DuckDB
    orders strings by their UTF-8 bytes, which is the order of their code points that
    :class:`SortedStrings` searches by."""
    return write_arrow_file(
        f"SELECT identifier, docno FROM read_parquet('{search_identifier}') "
        "ORDER BY identifier, docno",
        destination,
    )


class Identifiers:
    """The identifiers file memory-mapped: a lookup reads only the pages its binary
    search touches."""

    def __init__(self, path: Path) -> None:
        self.schema, self.batches = read_batches(path)

    @property
    def num_rows(self) -> int:
        return sum(len(batch) for batch in self.batches)

    def docnos(self, identifier: str) -> tuple[int, ...]:
        """Docnos of the documents with ``identifier`` (normalized), ascending."""
        at = self._identifiers.span(identifier)
        if not at:
            return ()
        return tuple(self._docnos[at.start : at.stop].to_pylist())

    @cached_property
    def _identifiers(self) -> SortedStrings:
        return SortedStrings(column_of(self.schema, self.batches, "identifier"))

    @cached_property
    def _docnos(self) -> pa.ChunkedArray:
        return column_of(self.schema, self.batches, "docno")
