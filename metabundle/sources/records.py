"""Record-level reading helpers shared by sources: cut-short detection, rejects → quarantine.

A source reads its files record by record so that a bad *record* is set aside
(quarantined) with its line while every other record loads, and a bad *file* fails with
a :class:`ParseError` naming the line. One failure is common to every reader: a
malformed last record that the file ends inside, without a line break after it, is a
download cut short, so it fails the file rather than being set aside.

Two readers share that rule here. :class:`CsvRecords` reads a small CSV document with
the standard library; :func:`set_aside_rejects` handles the records that DuckDB's CSV
reader noted in its rejects table while streaming a large file.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Protocol, TypeVar

import duckdb

from metabundle.errors import ParseError
from metabundle.sources.base import QUARANTINE_LIMIT

T = TypeVar("T")
LINE_BREAKS = ("\n", "\r")
READ_CHUNK = 1 << 20

SetAside = Callable[[str, int], None]
"""Quarantines one malformed record of the file being read: (reason, line)."""

Describe = Callable[[str | None, str], str]
"""A rejected record's reason from DuckDB's (column name or None, error message)."""


class Quarantine(Protocol):
    """Sets aside one malformed record of a file (``ParseContext.quarantine``)."""

    def __call__(self, file: str, reason: str, *, line: int | None = None) -> None: ...


class BadRecord(ValueError):
    """One record of a file is malformed; the message is the reason."""


def cut_short(reason: object) -> str:
    """Why a file fails whose malformed last record it ends inside."""
    return f"the file ends inside its last record, which is cut short ({reason})"


class CsvRecords:
    """The records of one small CSV document, read with the standard library.

    A record that the caller's converter rejects with :class:`BadRecord` is set aside
    with its line; the document fails when that record is its last and it ends inside
    it, or when its CSV does not parse (a quote left open).
    """

    def __init__(self, text: str, source: str, file: str) -> None:
        self._text = text
        self._source = source
        self._file = file
        self._reader = csv.reader(io.StringIO(text, newline=""), strict=True)

    def header(self) -> list[str] | None:
        """The first record: the column names (None for an empty document)."""
        with self._csv_errors():
            return next(self._reader, None)

    def converted(
        self, convert: Callable[[list[str]], T], set_aside: SetAside
    ) -> Iterator[tuple[int, T]]:
        """(line, ``convert(cells)``) of each non-blank record after the header; a
        record ``convert`` rejects goes to ``set_aside`` (see the class docstring)."""
        with self._csv_errors():
            for line, cells, last in self._records():
                try:
                    value = convert(cells)
                except BadRecord as bad:
                    if last and not self._text.endswith(LINE_BREAKS):
                        raise ParseError(
                            self._source, self._file, cut_short(bad), line=line
                        ) from None
                    set_aside(str(bad), line)
                    continue
                yield line, value

    def _records(self) -> Iterator[tuple[int, list[str], bool]]:
        """(line, cells, is_last) of each non-blank record; the line is the reader's
        line count as the record ends."""
        previous: tuple[int, list[str]] | None = None
        for cells in self._reader:
            if not cells:
                continue
            if previous is not None:
                yield (*previous, False)
            previous = (self._reader.line_num, cells)
        if previous is not None:
            yield (*previous, True)

    @contextmanager
    def _csv_errors(self) -> Iterator[None]:
        """Turn the reader's :class:`csv.Error` into a :class:`ParseError` naming the line."""
        try:
            yield
        except csv.Error as error:
            line = self._reader.line_num
            reason = _csv_problem(error, self._text, line)
            raise ParseError(self._source, self._file, reason, line=line) from None


def _csv_problem(error: csv.Error, text: str, line: int) -> str:
    """Why the CSV does not parse; an error on the last line means the file ends inside
    a quoted value (cut short, or a quote opened earlier never closed)."""
    lines = text.count("\n") + (not text.endswith("\n"))
    if line >= lines:
        return f"malformed CSV: the file ends inside a quoted value, cut short ({error})"
    return f"malformed CSV ({error})"


def rejects_limit(columns: int) -> int:
    """How many errors DuckDB's CSV reader notes before it stops noting them (it still
    skips the records). A record has at most one error per column plus one for its
    shape or encoding, so reaching this limit means more than :data:`QUARANTINE_LIMIT`
    records, which fails the file: what is noted below it is complete."""
    return (QUARANTINE_LIMIT + 1) * (columns + 2)


def set_aside_rejects(
    con: duckdb.DuckDBPyConnection,
    rejects_table: str,
    path: Path,
    describe: Describe,
    quarantine: Quarantine,
    *,
    source: str,
    label: str,
    key: str,
) -> None:
    """Quarantine (under ``key``) each record the last read of ``path`` noted in
    ``rejects_table``, by its first error, unless the rejects show the file itself is
    bad: a rejected last line the file ends inside (cut short) or a quote never closed
    (it swallows the records after it) fail it, named by ``label``."""
    rejects = [
        (line, kind, describe(column, message))
        for line, kind, column, message in con.execute(
            f"SELECT line, error_type, column_name, error_message FROM {rejects_table} "
            "QUALIFY row_number() OVER (PARTITION BY line ORDER BY byte_position) = 1 "
            "ORDER BY line"
        ).fetchall()
    ]
    final = _final_line(path) if rejects else None
    for line, kind, reason in rejects:
        if line == final:
            raise ParseError(source, label, cut_short(reason), line=line)
        if kind == "UNQUOTED VALUE":
            raise ParseError(source, label, f"a quote is never closed ({reason})", line=line)
    for line, _kind, reason in rejects:
        quarantine(key, reason, line=line)


def _final_line(path: Path) -> int | None:
    """The number of the file's last line when no line break ends it, else None."""
    breaks, last = 0, b"\n"
    with path.open("rb") as handle:
        while chunk := handle.read(READ_CHUNK):
            breaks += chunk.count(b"\n")
            last = chunk[-1:]
    return None if last == b"\n" else breaks + 1
