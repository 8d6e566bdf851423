"""The retired Showcase data dictionary, ``Data_Dictionary_Showcase.csv``.

A comma-separated file with quoted text, one row per field as it was when the file was
last published. We read four columns: ``FieldID``, ``Field`` (the title then),
``Category`` (the field's category id) and ``Path`` (the titles from the top of the
category tree down to that category, separated by ``' > '``).

A record that DuckDB's CSV reader rejects (the wrong number of cells, an id that is not
an integer) is quarantined with its line, and the other records load. The file fails
when a quote is left open (it swallows the records after it) or when the rejected
record is the last one and the file ends inside it (a download cut short).
"""

from __future__ import annotations

import csv
from collections.abc import Mapping

import duckdb

from metabundle.errors import ParseError
from metabundle.sources.base import ParseContext
from metabundle.sources.records import rejects_limit, set_aside_rejects
from metabundle.sources.ukb.categories import SEPARATOR
from metabundle.sources.ukb.files import LEGACY_COLUMNS
from metabundle.sources.ukb.tsv import SOURCE, TsvFile, require_columns

INTEGER_COLUMNS = ("FieldID", "Category")


def _header(file: TsvFile) -> list[str]:
    with file.path.open(encoding="utf-8-sig", errors="replace", newline="") as handle:
        header = next(csv.reader(handle), [])
    if not header:
        raise ParseError(SOURCE, file.key, "the file is empty (no header line)", line=1)
    return header


def load_legacy(ctx: ParseContext, file: TsvFile | None) -> None:
    """Temp table ``legacy`` (field_id, title, category_id, path); empty without a file."""
    con = ctx.con
    con.execute(
        "CREATE OR REPLACE TEMP TABLE legacy "
        "(field_id INTEGER, title VARCHAR, category_id INTEGER, path VARCHAR)"
    )
    if file is None:
        return
    header = _header(file)
    require_columns(file, header, LEGACY_COLUMNS)
    types = {name: "INTEGER" if name in INTEGER_COLUMNS else "VARCHAR" for name in header}
    spec = "{" + ", ".join(f"'{n}': '{t}'" for n, t in types.items()) + "}"
    con.execute(
        f"""
        INSERT INTO legacy
        SELECT FieldID, nullif(trim(Field), ''), Category, nullif(trim(Path), '')
        FROM read_csv(?, header = true, delim = ',', quote = '"', columns = {spec},
                      store_rejects = true, rejects_table = 'legacy_rejects',
                      rejects_scan = 'legacy_scans', rejects_limit = {rejects_limit(len(header))})
        """,
        [str(file.path)],
    )
    set_aside_rejects(
        con,
        "legacy_rejects",
        file.path,
        _describe,
        ctx.quarantine,
        source=SOURCE,
        label=file.key,
        key=file.key,
    )


def _describe(column: str | None, message: str) -> str:
    """A rejected record's reason: DuckDB's message, after the column it names."""
    return f"column {column!r}: {message}" if column else message


def leaf_paths(con: duckdb.DuckDBPyConnection) -> Mapping[int, tuple[str, ...]]:
    """The category path of each category that holds fields in the dictionary (the most
    frequent one, then the first alphabetically, should its fields disagree)."""
    rows = con.execute(
        """
        SELECT category_id, path FROM (
            SELECT category_id, path, row_number() OVER (
                PARTITION BY category_id ORDER BY count(*) DESC, path) AS choice
            FROM legacy WHERE category_id IS NOT NULL AND path IS NOT NULL
            GROUP BY category_id, path
        ) WHERE choice = 1 ORDER BY category_id
        """
    ).fetchall()
    return {category: tuple(path.split(SEPARATOR)) for category, path in rows}
