"""Reading the Showcase's tab-separated downloads into typed DuckDB tables.

Showcase schema files (``scdown.cgi?fmt=txt``) and coding files (``codown.cgi``) are
UTF-8, tab-separated, with a header line and no quoting at all (notes contain ``"``).
DuckDB reads each file whole and splits it into lines, so every row keeps its exact
line number (the header is line 1): problems name the file, the line and the column,
and tables keep the published row order. Empty cells are nulls; a trailing ``\\r`` is
dropped; blank lines are skipped. Columns a file has beyond the expected ones are
ignored.

A bad *file* fails with a :class:`ParseError`: a missing column, a header that differs
between files of one table, a repeated key, or a malformed last line that the file
ends inside (no line break after it: a download cut short). A bad *record* (a line with
the wrong number of cells, a value that does not cast, an empty required value, or one
that breaks a rule of its table) is set aside (quarantined) and every other
line loads; one scan finds them all, and only the first few per file reach Python.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import duckdb

from metabundle.errors import ParseError
from metabundle.schemas import quote_identifier
from metabundle.sources.base import QUARANTINE_LIMIT
from metabundle.sources.records import Quarantine, cut_short

SOURCE = "ukb"


def skip_record(file: str, reason: str, *, line: int | None = None) -> None:
    """A :class:`Quarantine` that drops the record: for the fetch step, which reads a
    file only for what it must download; the parse step quarantines the record."""


@dataclass(frozen=True)
class Rule:
    """A check of one record: an SQL condition over the raw text cells that marks the
    record malformed, and an SQL expression giving the reason."""

    bad: str
    reason: str


@dataclass(frozen=True)
class TsvFile:
    """One downloaded file: its snapshot key (for messages) and where it is on disk."""

    key: str
    path: Path


def read_header(file: TsvFile) -> tuple[str, ...]:
    """The column names on the first line of ``file``."""
    with file.path.open("rb") as handle:
        first = handle.readline()
    try:
        text = first.decode("utf-8").removeprefix("\ufeff").rstrip("\r\n")
    except UnicodeDecodeError:
        raise ParseError(SOURCE, file.key, "the header is not UTF-8 text", line=1) from None
    if not text.strip():
        raise ParseError(SOURCE, file.key, "the file is empty (no header line)", line=1)
    return tuple(name.strip() for name in text.split("\t"))


def require_columns(file: TsvFile, header: Sequence[str], wanted: Sequence[str]) -> None:
    """Fail naming the first expected column that ``header`` lacks."""
    missing = [name for name in wanted if name not in header]
    if missing:
        found = ", ".join(header)
        raise ParseError(SOURCE, file.key, f"missing column {missing[0]!r} (found: {found})")


def sql_literal(text: str) -> str:
    """``text`` as an SQL string literal."""
    return "'" + text.replace("'", "''") + "'"


def load_tsv(
    con: duckdb.DuckDBPyConnection,
    table: str,
    files: Sequence[TsvFile],
    columns: Mapping[str, str],
    quarantine: Quarantine,
    *,
    required: Sequence[str] = (),
    unique: str | None = None,
    rules: Sequence[Rule] = (),
) -> None:
    """Create temp table ``table`` from ``files`` that share one header.

    ``columns`` maps each expected column to its DuckDB type. The table has ``file``
    (the key), ``line`` and the expected columns in that order. A line that does not
    split or cast, whose ``required`` column is empty or that breaks one of ``rules``
    goes to ``quarantine``; a ``unique`` column may not repeat a value.
    """
    if not files:
        raise ValueError(f"no files to load into {table}")
    header = read_header(files[0])
    for file in files:
        found = read_header(file)
        require_columns(file, found, list(columns))
        if found != header:
            raise ParseError(SOURCE, file.key, f"header differs from {files[0].key}", line=1)
    raw = f"__{table}_raw"
    _split_cells(con, raw, files, {name: header.index(name) + 1 for name in columns})
    problems = [*_cell_rules(len(header), columns), *_required_rules(required), *rules]
    _set_aside(con, raw, problems, quarantine)
    selected = ", ".join(
        f"CAST({quote_identifier(name)} AS {sql_type}) AS {quote_identifier(name)}"
        for name, sql_type in columns.items()
    )
    con.execute(
        f"CREATE OR REPLACE TEMP TABLE {table} AS "
        f"SELECT file, line, {selected} FROM {raw} ORDER BY file, line"
    )
    con.execute(f"DROP TABLE {raw}")
    if unique is not None:
        column = quote_identifier(unique)
        fail_on_first(
            con,
            f"SELECT file, line, {sql_literal(f'column {unique!r} repeats ')} || {column} "
            f"FROM (SELECT *, row_number() OVER (PARTITION BY {column} ORDER BY file, line) "
            f"AS n FROM {table}) WHERE n > 1 AND {column} IS NOT NULL",
        )


def fail_on_first(con: duckdb.DuckDBPyConnection, query: str) -> None:
    """Raise a ParseError for the first (file, line, reason) row of ``query``, if any."""
    rows = con.execute(f"SELECT * FROM ({query}) ORDER BY 1, 2 LIMIT 1").fetchall()
    if rows:
        file, line, reason = rows[0]
        raise ParseError(SOURCE, file, reason, line=line)


def _split_cells(
    con: duckdb.DuckDBPyConnection,
    table: str,
    files: Sequence[TsvFile],
    positions: Mapping[str, int],
) -> None:
    """``table`` (file, line, width, final, one text column per wanted column): every
    non-blank data line of ``files``, split at tabs; ``final`` marks a last line that
    the file ends inside (no line break follows it)."""
    keys = ", ".join(f"({sql_literal(str(f.path))}, {sql_literal(f.key)})" for f in files)
    paths = ", ".join(sql_literal(str(f.path)) for f in files)
    wanted = ", ".join(
        f"nullif(trim(cells[{position}]), '') AS {quote_identifier(name)}"
        for name, position in positions.items()
    )
    try:
        con.execute(
            f"""
            CREATE OR REPLACE TEMP TABLE {table} AS
            WITH keys(filename, key) AS (VALUES {keys}),
            texts AS (
                SELECT k.key AS file, string_split(t.content, chr(10)) AS parts
                FROM read_text([{paths}]) AS t JOIN keys AS k ON k.filename = t.filename
            ),
            numbered AS (
                SELECT file, unnest(range(1, len(parts) + 1)) AS line, unnest(parts) AS text,
                       len(parts) AS last
                FROM texts
            ),
            split AS (
                SELECT file, CAST(line AS INTEGER) AS line, line = last AS final,
                       string_split(rtrim(text, chr(13)), chr(9)) AS cells
                FROM numbered
                WHERE line > 1 AND trim(text, chr(13) || ' ') <> ''
            )
            SELECT file, line, final AS __final, len(cells) AS __width, {wanted} FROM split
            """
        )
    except duckdb.Error as error:
        raise _unreadable(files, error) from None


def _unreadable(files: Sequence[TsvFile], error: duckdb.Error) -> ParseError:
    """A ParseError naming the first file that is not UTF-8 (DuckDB names none)."""
    for file in files:
        try:
            file.path.read_bytes().decode("utf-8")
        except UnicodeDecodeError as bad:
            return ParseError(SOURCE, file.key, f"not UTF-8 text (byte {bad.start})")
    return ParseError(SOURCE, files[0].key, f"unreadable: {error}")


def _cell_rules(width: int, columns: Mapping[str, str]) -> list[Rule]:
    """A line must have ``width`` cells, and each typed cell must cast to its type."""
    rules = [
        Rule(f"__width <> {width}", f"'expected {width} tab-separated columns, found ' || __width")
    ]
    for name, sql_type in columns.items():
        if sql_type == "VARCHAR":
            continue
        cell = quote_identifier(name)
        article = "an" if sql_type[0] in "AEIOU" else "a"
        before = sql_literal(f"column {name!r} has '")
        after = sql_literal(f"', which is not {article} {sql_type.lower()}")
        bad = f"({cell} IS NOT NULL AND TRY_CAST({cell} AS {sql_type}) IS NULL)"
        rules.append(Rule(bad, f"{before} || {cell} || {after}"))
    return rules


def _required_rules(required: Sequence[str]) -> list[Rule]:
    """A ``required`` cell may not be empty."""
    return [
        Rule(f"{quote_identifier(name)} IS NULL", sql_literal(f"column {name!r} is empty"))
        for name in required
    ]


def _set_aside(
    con: duckdb.DuckDBPyConnection, table: str, rules: Sequence[Rule], quarantine: Quarantine
) -> None:
    """Quarantine and delete the lines of ``table`` that break a rule (one scan); a
    broken line that its file ends inside fails the file as cut short."""
    reason = " ".join(f"WHEN {rule.bad} THEN {rule.reason}" for rule in rules)
    where = " OR ".join(f"({rule.bad})" for rule in rules)
    broken = con.execute(
        f"SELECT file, line, __final, CASE {reason} END FROM {table} WHERE {where} "
        f"QUALIFY __final OR row_number() OVER (PARTITION BY file ORDER BY line) "
        f"<= {QUARANTINE_LIMIT + 1} ORDER BY __final DESC, file, line"
    ).fetchall()
    for file, line, final, why in broken:
        if final:
            raise ParseError(SOURCE, file, cut_short(why), line=line)
        quarantine(file, why, line=line)
    if broken:
        con.execute(f"DELETE FROM {table} WHERE {where}")
