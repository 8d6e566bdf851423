"""Reading one vocabulary file of an Athena export into typed rows with DuckDB.

Athena writes one file per CDM vocabulary table (``CONCEPT.csv``, ...): tab-separated,
no quoting at all (a concept name may contain ``"``), an upper-case header, dates as
``YYYYMMDD`` and empty fields for nulls. Comma-separated CDM exports (the OHDSI
Eunomia files: RFC 4180 quoting, ISO dates) are read too; the delimiter of the header
line decides which dialect a file is in.

Expected columns, types and required values come from the table registry
(:mod:`metabundle.schemas.omop`): a column's header is its name in upper case, and a
``nullable=False`` column must have a value. A required text column left empty is read
as an empty string; a required id, number or date left empty makes the record
malformed. Columns the CDM does not know are ignored; their order in the file does not
matter.

Two quirks of real files are accepted: a UTF-8 byte order mark, and a placeholder
header of generated names (``COLUMN0``, ``COLUMN1``, ...) followed by the real header
line, which a tool that exported an empty table without header detection leaves
behind (the mirror's ``eunomia_gibleed/CONCEPT_CLASS.csv``). Integer columns accept
``123.0`` (written by exporters that went through floating point); note that DuckDB
rounds other decimals in integer columns.

A malformed record (the wrong number of fields, a value that does not convert, a
required value missing) is rejected by DuckDB's reader, which notes its line in a
rejects table as it streams the file; :func:`set_aside_rejects` then quarantines each
one (counting the header as line 1) and every other record loads. The *file* fails
with a :class:`ParseError` naming it and the line when its header is wrong, a quote is
never closed (it swallows the records after it), or a rejected record is its last line
and the file ends inside it without a line break (an export cut short).
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from pathlib import Path

import duckdb

from metabundle.errors import ParseError
from metabundle.schemas import Table, duckdb_type, quote_identifier
from metabundle.schemas.omop import OMOP_DRUG_STRENGTH, OMOP_TABLES
from metabundle.sources import records
from metabundle.sources.records import Quarantine, rejects_limit

SOURCE = "omop"
PLACEHOLDER_HEADER = re.compile(r"COLUMN\d+")
REJECTS = "omop_rejects"
REJECT_SCANS = "omop_reject_scans"


@dataclass(frozen=True)
class Dialect:
    """How a vocabulary file is written."""

    name: str
    delimiter: str
    quote: str
    date_format: str


ATHENA = Dialect("Athena (tab-separated)", "\t", "", "%Y%m%d")
CDM_CSV = Dialect("CDM CSV (comma-separated)", ",", '"', "%Y-%m-%d")


@dataclass(frozen=True)
class FileInput:
    """One vocabulary file on disk: where it is, how errors name it (its path or URL)
    and its key in the snapshot (``archive:member`` for a zip member)."""

    path: Path
    label: str
    key: str


@dataclass(frozen=True)
class TableFile:
    """A vocabulary table and the file an export holds it in."""

    table: Table
    required: bool

    @property
    def file_name(self) -> str:
        return self.table.name.removeprefix("omop_").upper() + ".csv"


TABLE_FILES: tuple[TableFile, ...] = tuple(
    TableFile(table, required=table is not OMOP_DRUG_STRENGTH) for table in OMOP_TABLES
)


@dataclass(frozen=True)
class Header:
    """What the first lines of a file say: its dialect, column names and where data starts."""

    dialect: Dialect
    columns: tuple[str, ...]
    data_line: int


def _split(line: str, dialect: Dialect) -> list[str]:
    if not dialect.quote:
        return line.split(dialect.delimiter)
    return next(csv.reader([line], delimiter=dialect.delimiter, quotechar=dialect.quote))


def read_header(path: Path, label: str) -> Header:
    """The dialect and the (upper-cased) column names of a vocabulary file."""
    with path.open(encoding="utf-8-sig", errors="replace", newline="") as handle:
        first = handle.readline().rstrip("\r\n")
        second = handle.readline().rstrip("\r\n")
    if not first:
        raise ParseError(SOURCE, label, "the file is empty (no header line)", line=1)
    dialect = ATHENA if "\t" in first else CDM_CSV
    names = [name.strip().upper() for name in _split(first, dialect)]
    data_line = 2
    if second and all(PLACEHOLDER_HEADER.fullmatch(name) for name in names):
        names = [name.strip().upper() for name in _split(second, dialect)]
        data_line = 3
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise ParseError(SOURCE, label, f"the header repeats column {duplicates[0]}", line=1)
    return Header(dialect, tuple(names), data_line)


def check_columns(table: Table, header: Header, label: str) -> None:
    """Every column the CDM declares must be in the header."""
    for column in table.columns:
        if column.name.upper() not in header.columns:
            raise ParseError(
                SOURCE,
                label,
                f"the header has no column {column.name.upper()} "
                f"(found {', '.join(header.columns)})",
                line=header.data_line - 1,
            )


def sql_literal(text: str) -> str:
    """``text`` as a single-quoted SQL string literal."""
    return "'" + text.replace("'", "''") + "'"


def _read_csv_sql(path: Path, table: Table, header: Header) -> str:
    """``read_csv(...)`` over the file with every column typed as declared."""
    declared = {c.name.upper(): c for c in table.columns}
    columns = []
    for index, name in enumerate(header.columns):
        column = declared.get(name)
        if column is None:
            columns.append(f"{sql_literal(f'_unused_{index}')}: 'VARCHAR'")
        else:
            columns.append(f"{sql_literal(column.name)}: {sql_literal(duckdb_type(column, table))}")
    required = [sql_literal(c.name) for c in table.columns if not c.nullable]
    dialect = header.dialect
    options = [
        sql_literal(str(path)),
        f"delim={sql_literal(dialect.delimiter)}",
        f"quote={sql_literal(dialect.quote)}",
        f"escape={sql_literal(dialect.quote)}",
        f"header=false, skip={header.data_line - 1}, auto_detect=false",
        f"columns={{{', '.join(columns)}}}",
        f"dateformat={sql_literal(dialect.date_format)}",
        f"store_rejects=true, rejects_table={sql_literal(REJECTS)}",
        f"rejects_scan={sql_literal(REJECT_SCANS)}",
        f"rejects_limit={rejects_limit(len(header.columns))}",
    ]
    if required:
        # An empty required cell is read as '' rather than NULL: text keeps it, and an
        # id, number or date fails to convert, so the reader rejects the record.
        options.append(f"force_not_null=[{', '.join(required)}]")
    return f"read_csv({', '.join(options)})"


def typed_rows_sql(path: Path, table: Table, header: Header, export_rank: int) -> str:
    """SQL selecting the file's rows typed as ``table`` plus the export's rank; the
    records it rejects are listed in :data:`REJECTS` (drop it before each read)."""
    selected = ", ".join(quote_identifier(c.name) for c in table.columns)
    return f"SELECT {selected}, {export_rank} AS _export FROM {_read_csv_sql(path, table, header)}"


_LINE = re.compile(r"CSV Error on Line: (\d+)")
_CONVERSION = re.compile(r'Error when converting column "([^"]+)"\.(.*)')
_COLUMNS = re.compile(r"Expected Number of Columns: (\d+) Found: (\d+)")
_PREFIX = re.compile(r"^[A-Za-z ]*Error: ")


def _reason(message: str, header: Header) -> str:
    """DuckDB's description of a bad record as a short reason."""
    if conversion := _CONVERSION.search(message):
        column, detail = conversion.group(1).upper(), conversion.group(2).strip().rstrip(".")
        return f"column {column}: {detail}" if detail else f"required column {column} is empty"
    if counts := _COLUMNS.search(message):
        return f"expected {counts.group(1)} {header.dialect.name} fields, found {counts.group(2)}"
    if "unicode" in message.lower():
        return "the text is not valid UTF-8"
    first = message.splitlines()[0] if message else "unreadable"
    return _PREFIX.sub("", first).rstrip(".")


def parse_error(error: duckdb.Error, label: str, header: Header) -> ParseError:
    """Turn DuckDB's report of a bad file into a one-sentence :class:`ParseError`."""
    message = str(error)
    line_match = _LINE.search(message)
    line = int(line_match.group(1)) if line_match else None
    return ParseError(SOURCE, label, _reason(message, header), line=line)


def set_aside_rejects(
    con: duckdb.DuckDBPyConnection,
    source: FileInput,
    header: Header,
    quarantine: Quarantine,
) -> None:
    """Quarantine each record the last read rejected (by its first error), unless the
    rejects show the file itself is bad (see the module docstring)."""
    records.set_aside_rejects(
        con,
        REJECTS,
        source.path,
        lambda _column, message: _reason(message, header),
        quarantine,
        source=SOURCE,
        label=source.label,
        key=source.key,
    )
