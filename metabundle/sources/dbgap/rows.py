"""Rows on their way to the registry's tables, kept compact.

Parsers append plain dict rows; a :class:`RowBuffer` turns every few thousand of them
into an Arrow record batch with the table's declared types, so a build over many
studies holds Arrow columns rather than millions of Python dicts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from metabundle.errors import SchemaError
from metabundle.schemas import arrow_schema, get_table

Row = dict[str, Any]
SetAside = Callable[[str, int | None], None]
"""Quarantines one malformed record of the file being read: (reason, line or None)."""

COMPUTED: dict[str, tuple[str, ...]] = {
    "dbgap_study": (
        "has_variables",
        "dataset_count",
        "variable_count",
        "var_report_dataset_count",
        "document_count",
    ),
    "dbgap_dataset": ("variable_count", "has_var_report", "synthetic"),
    "dbgap_variable": ("has_stats", "synthetic"),
}
"""Columns the parse step computes in SQL across files; parsers do not fill them."""

BATCH_ROWS = 20_000


def parsed_schema(name: str) -> pa.Schema:
    """Table ``name``'s Arrow schema less the columns computed across files."""
    computed = COMPUTED.get(name, ())
    return pa.schema([f for f in arrow_schema(get_table(name)) if f.name not in computed])


def arrow_rows(name: str, rows: list[Row]) -> pa.Table:
    """``rows`` as an Arrow table of :func:`parsed_schema` (keys must match exactly)."""
    schema = parsed_schema(name)
    if rows and set(rows[0]) != set(schema.names):
        differing = sorted(set(rows[0]) ^ set(schema.names))
        raise SchemaError(f"Rows for {name} do not match its columns: {differing}")
    return pa.Table.from_pylist(rows, schema=schema)


@dataclass
class RowBuffer:
    """Rows of table ``name``, converted to Arrow every :data:`BATCH_ROWS` rows."""

    name: str
    pending: list[Row] = field(default_factory=list)
    batches: list[pa.Table] = field(default_factory=list)

    def append(self, row: Row) -> None:
        self.pending.append(row)
        if len(self.pending) >= BATCH_ROWS:
            self._flush()

    def extend(self, rows: list[Row]) -> None:
        for row in rows:
            self.append(row)

    def table(self) -> pa.Table:
        """Every row so far, as one Arrow table."""
        self._flush()
        return pa.concat_tables([arrow_rows(self.name, []), *self.batches])

    def _flush(self) -> None:
        if self.pending:
            self.batches.append(arrow_rows(self.name, self.pending))
            self.pending = []


@dataclass
class Tables:
    """Rows gathered across files: from data dictionaries (datasets, variables,
    values), from variable reports (stats, value counts), the datasets and variables
    that only a variable report describes, and the study names reports give."""

    datasets: list[Row] = field(default_factory=list)
    variables: RowBuffer = field(default_factory=lambda: RowBuffer("dbgap_variable"))
    values: RowBuffer = field(default_factory=lambda: RowBuffer("dbgap_variable_value"))
    stats: RowBuffer = field(default_factory=lambda: RowBuffer("dbgap_variable_stat"))
    value_counts: RowBuffer = field(default_factory=lambda: RowBuffer("dbgap_variable_value_count"))
    report_datasets: list[Row] = field(default_factory=list)
    report_variables: list[Row] = field(default_factory=list)
    study_names: dict[str, str] = field(default_factory=dict)
