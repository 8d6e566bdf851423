"""Encodings (schema 2) and the values of the downloaded codings (``codown.cgi``).

A coding file is flat (``coding, meaning``) or a tree (``coding, meaning, node_id,
parent_id, selectable``); its header says which. A record is one line: a line with an
empty coding value, or in a tree an empty ``node_id`` or a ``selectable`` other than
``Y`` or ``N``, is quarantined like one that does not split or cast (see :mod:`.tsv`).

Tree codings must be proper trees: node ids unique within the coding, every parent a
node of the same coding (0 marks the top level and is stored as null) and every node
reachable from the top. A violation is an error naming the file and line, except in a
file with quarantined lines: there the nodes cut off from the top (below a set-aside
node) are quarantined too, each counted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import duckdb

from metabundle.sources.base import ParseContext, RawSnapshot
from metabundle.sources.ukb.files import (
    ENCODING_URL,
    FLAT_CODING_COLUMNS,
    TREE_CODING_COLUMNS,
    TREE_ONLY_COLUMNS,
    coding_id_of,
)
from metabundle.sources.ukb.tsv import (
    Rule,
    TsvFile,
    fail_on_first,
    load_tsv,
    read_header,
    require_columns,
    sql_literal,
)

TREE_RULES = (
    Rule(
        "coalesce(selectable, '') NOT IN ('Y', 'N')",
        "'selectable is ' || coalesce(selectable, '(empty)') || ', not Y or N'",
    ),
)
ROW_COLUMNS = (
    "encoding_id INTEGER, file VARCHAR, line INTEGER, is_tree BOOLEAN, value VARCHAR, "
    "meaning VARCHAR, node_id INTEGER, parent_id INTEGER, selectable VARCHAR"
)


def coding_files(snapshot: RawSnapshot) -> list[tuple[int, TsvFile]]:
    """(encoding id, file) of every non-empty coding download, by encoding id."""
    found = [
        (encoding_id, TsvFile(raw.key, raw.path))
        for raw in snapshot.files
        if (encoding_id := coding_id_of(raw.key)) is not None and raw.size > 0
    ]
    return sorted(found, key=lambda item: item[0])


@dataclass(frozen=True)
class CodingGroup:
    """Coding files that share one header, flat or tree."""

    is_tree: bool
    files: tuple[tuple[int, TsvFile], ...]


def _is_tree(header: Sequence[str]) -> bool:
    return bool(TREE_ONLY_COLUMNS & set(header))


def coding_groups(files: Sequence[tuple[int, TsvFile]]) -> list[CodingGroup]:
    """Group coding files by header, checking each header has its kind's columns."""
    groups: dict[tuple[str, ...], list[tuple[int, TsvFile]]] = {}
    for encoding_id, file in files:
        header = read_header(file)
        columns = TREE_CODING_COLUMNS if _is_tree(header) else FLAT_CODING_COLUMNS
        require_columns(file, header, list(columns))
        groups.setdefault(header, []).append((encoding_id, file))
    return [CodingGroup(_is_tree(header), tuple(group)) for header, group in sorted(groups.items())]


def load_codings(ctx: ParseContext, groups: Sequence[CodingGroup]) -> None:
    """Temp table ``coding_raw`` with every good value of every coding file, and
    ``coding_depth`` with the depth of every tree node."""
    con = ctx.con
    con.execute(f"CREATE OR REPLACE TEMP TABLE coding_rows ({ROW_COLUMNS})")
    for number, group in enumerate(groups):
        _insert_group(ctx, f"coding_part_{number}", group)
    con.execute(
        "CREATE OR REPLACE TEMP TABLE coding_raw AS "
        "SELECT * FROM coding_rows ORDER BY encoding_id, line"
    )
    fail_on_first(con, REPEATED_NODE)
    _walk_trees(con)
    _set_aside_cut_off(ctx)
    fail_on_first(con, STRAY_PARENT)
    fail_on_first(con, CYCLE)


def _insert_group(ctx: ParseContext, table: str, group: CodingGroup) -> None:
    """Read coding files that share a header into ``coding_rows``."""
    con = ctx.con
    files = [file for _, file in group.files]
    if group.is_tree:
        columns, required, rules = TREE_CODING_COLUMNS, ("coding", "node_id"), TREE_RULES
    else:
        columns, required, rules = FLAT_CODING_COLUMNS, ("coding",), ()
    load_tsv(con, table, files, columns, ctx.quarantine, required=required, rules=rules)
    ids = ", ".join(f"({sql_literal(file.key)}, {i})" for i, file in group.files)
    tree = "node_id, nullif(parent_id, 0), selectable" if group.is_tree else "NULL, NULL, NULL"
    con.execute(
        f"INSERT INTO coding_rows SELECT k.encoding_id, t.file, t.line, {group.is_tree}, "
        f"t.coding, t.meaning, {tree} FROM {table} AS t "
        f"JOIN (VALUES {ids}) AS k(file, encoding_id) USING (file)"
    )
    con.execute(f"DROP TABLE {table}")


REPEATED_NODE = (
    "SELECT file, line, 'node_id ' || node_id || ' is repeated' FROM (SELECT *, "
    "count(*) OVER (PARTITION BY encoding_id, node_id) AS n FROM coding_raw) "
    "WHERE node_id IS NOT NULL AND n > 1"
)
CUT_OFF = (
    "FROM coding_raw AS c WHERE node_id IS NOT NULL AND NOT EXISTS ("
    "SELECT 1 FROM coding_depth AS d "
    "WHERE d.encoding_id = c.encoding_id AND d.node_id = c.node_id)"
)
"""The tree nodes that the walk down from the top does not reach."""
STRAY_PARENT = (
    "SELECT file, line, 'parent_id ' || parent_id || ' is not a node of this coding' "
    "FROM coding_raw AS c WHERE parent_id IS NOT NULL AND NOT EXISTS ("
    "SELECT 1 FROM coding_raw AS p "
    "WHERE p.encoding_id = c.encoding_id AND p.node_id = c.parent_id)"
)
CYCLE = (
    "SELECT file, line, 'node ' || node_id || ' is not reachable from the top of the "
    f"tree (a parent cycle)' {CUT_OFF}"
)


def _walk_trees(con: duckdb.DuckDBPyConnection) -> None:
    """Temp table ``coding_depth``: each node reachable from the top, with its depth."""
    con.execute(
        """
        CREATE OR REPLACE TEMP TABLE coding_depth AS
        WITH RECURSIVE walk(encoding_id, node_id, depth) AS (
            SELECT encoding_id, node_id, 1 FROM coding_raw
            WHERE node_id IS NOT NULL AND parent_id IS NULL
            UNION ALL
            SELECT c.encoding_id, c.node_id, w.depth + 1
            FROM coding_raw AS c JOIN walk AS w
              ON c.encoding_id = w.encoding_id AND c.parent_id = w.node_id
        )
        SELECT * FROM walk
        """
    )


def _set_aside_cut_off(ctx: ParseContext) -> None:
    """Quarantine and delete the nodes cut off from the top of their tree in files
    that already had lines quarantined (a set-aside node takes its subtree with it)."""
    files = [file for file in ctx.quarantined if coding_id_of(file) is not None]
    if not files:
        return
    keys = ", ".join(sql_literal(file) for file in files)
    where = f"{CUT_OFF} AND file IN ({keys})"
    cut_off = ctx.con.execute(
        f"SELECT file, line, node_id, parent_id {where} ORDER BY file, line"
    ).fetchall()
    for file, line, node, parent in cut_off:
        reason = (
            f"node {node} is cut off from the tree: its parent {parent} was set aside or is missing"
        )
        ctx.quarantine(file, reason, line=line)
    if cut_off:
        ctx.con.execute(f"DELETE {where}")


def value_relation(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyRelation:
    """``ukb_encoding_value`` rows: keys, depths in the tree and URLs."""
    return con.sql(
        f"""
        SELECT c.encoding_id,
               c.line - 1 AS value_order,
               CASE WHEN count(*) OVER (PARTITION BY c.encoding_id, c.value) > 1
                    THEN c.value || '@' || coalesce(c.node_id, c.line - 1)
                    ELSE c.value END AS value_key,
               c.value, c.meaning, c.node_id, c.parent_id,
               CASE c.selectable WHEN 'Y' THEN true WHEN 'N' THEN false END AS selectable,
               coalesce(d.depth, 1) AS depth,
               '{ENCODING_URL}' || c.encoding_id AS canonical_url
        FROM coding_raw AS c
        LEFT JOIN coding_depth AS d USING (encoding_id, node_id)
        """
    )


def encoding_relation(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyRelation:
    """``ukb_encoding`` rows: schema 2 with decoded codes, usage and loaded value counts."""
    return con.sql(
        f"""
        WITH used AS (
            SELECT encoding_id, count(*) AS n FROM raw_field GROUP BY encoding_id
        ),
        loaded AS (
            SELECT encoding_id, count(*) AS n FROM coding_raw GROUP BY encoding_id
        )
        SELECT e.encoding_id, e.title, e.availability,
               e.coded_as, vt.label AS coded_as_label,
               e.structure, st.label AS structure_label,
               e.num_members, e.descript AS description,
               ukb_plain_text(e.descript) AS description_text,
               coalesce(used.n, 0) AS field_count,
               loaded.n IS NOT NULL AS values_loaded,
               coalesce(loaded.n, 0) AS value_count,
               '{ENCODING_URL}' || e.encoding_id AS canonical_url
        FROM raw_encoding AS e
        LEFT JOIN ukb_lookup AS vt ON vt.kind = 'value_type' AND vt.code = e.coded_as
        LEFT JOIN ukb_lookup AS st ON st.kind = 'structure' AND st.code = e.structure
        LEFT JOIN used USING (encoding_id)
        LEFT JOIN loaded USING (encoding_id)
        """
    )
