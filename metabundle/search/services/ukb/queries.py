"""SQL over the release's UK Biobank tables: fields, their aliases, codings and
categories, and the search documents of fields."""

from __future__ import annotations

from typing import Any

import numpy as np

from metabundle.search.release import Release
from metabundle.search.retrieval import mask_from_sql, normalize_identifier

FIELD_DOCS = "source = 'ukb' AND kind = 'field'"
MAX_FIELD_ID = 2**31 - 1
"""The largest id ``ukb_field.field_id`` (INTEGER) can hold; no field has a larger one."""
NORMALIZED_ALIAS = "lower(regexp_replace(trim(alias), '\\s+', ' ', 'g'))"


def field_mask(release: Release) -> np.ndarray:
    """The UK Biobank field documents (applied before any candidate limit)."""
    return mask_from_sql(release, FIELD_DOCS, [])


def fields_by_id(release: Release, field_ids: list[int]) -> dict[int, dict[str, Any]]:
    """``ukb_field`` rows of ``field_ids`` with their main category's Showcase page (an id
    outside the INTEGER range names no field and never reaches SQL)."""
    field_ids = [f for f in field_ids if 0 <= f <= MAX_FIELD_ID]
    if not field_ids:
        return {}
    rows = release.query_dicts(
        "SELECT f.*, c.canonical_url AS category_url FROM ukb_field AS f "
        "LEFT JOIN ukb_category AS c ON c.category_id = f.main_category "
        "WHERE f.field_id IN (SELECT unnest(?::INTEGER[]))",
        [field_ids],
    )
    return {int(row["field_id"]): row for row in rows}


def matched_aliases(release: Release, query: str, field_ids: list[int]) -> dict[int, dict]:
    """The stored alias (``alias``, ``alias_kind``) of each field that equals ``query``
    (case and spacing ignored)."""
    if not field_ids:
        return {}
    rows = release.query(
        "SELECT field_id, alias, alias_kind FROM ukb_field_alias "
        f"WHERE field_id IN (SELECT unnest(?::INTEGER[])) AND {NORMALIZED_ALIAS} = ? "
        "ORDER BY field_id, alias_kind = 'field_id' DESC, alias",
        [field_ids, normalize_identifier(query)],
    )
    found: dict[int, dict[str, Any]] = {}
    for field_id, alias, kind in rows:
        found.setdefault(int(field_id), {"alias": alias, "alias_kind": kind})
    return found


def stored_alias(release: Release, text: str) -> dict[str, Any] | None:
    """The alias row (lowest field id first) that equals ``text``, case and spacing ignored."""
    rows = release.query_dicts(
        "SELECT field_id, alias, alias_kind FROM ukb_field_alias "
        f"WHERE {NORMALIZED_ALIAS} = ? ORDER BY field_id LIMIT 1",
        [normalize_identifier(text)],
    )
    return rows[0] if rows else None


def nearest_fields(release: Release, field_id: int, count: int) -> list[tuple[int, str]]:
    """``(field id, title)`` of the ``count`` fields with the ids closest to ``field_id``."""
    rows = release.query(
        "SELECT field_id, title FROM ukb_field ORDER BY abs(field_id - ?), field_id LIMIT ?",
        [min(field_id, MAX_FIELD_ID), count],
    )
    return [(int(f), t) for f, t in rows]


def field_aliases(release: Release, field_id: int) -> list[dict[str, Any]]:
    return release.query_dicts(
        "SELECT alias, alias_kind FROM ukb_field_alias WHERE field_id = ? "
        "ORDER BY alias_kind, length(alias), alias",
        [field_id],
    )


def encoding_row(release: Release, encoding_id: int) -> dict[str, Any] | None:
    rows = release.query_dicts("SELECT * FROM ukb_encoding WHERE encoding_id = ?", [encoding_id])
    return rows[0] if rows else None


VALUES_SQL = """
SELECT v.value, v.meaning, v.node_id, v.parent_id, v.selectable, v.depth,
       p.value AS parent_value, p.meaning AS parent_meaning
FROM ukb_encoding_value AS v
LEFT JOIN ukb_encoding_value AS p
       ON p.encoding_id = v.encoding_id AND p.node_id = v.parent_id
WHERE v.encoding_id = ? {where}
ORDER BY {order}
LIMIT ?
"""


def coding_value_rows(
    release: Release, encoding_id: int, limit: int, *, top_level: bool = False
) -> list[dict[str, Any]]:
    """The first ``limit`` values in published order, or the top-level nodes of a tree
    coding in node order (chapters I, II, ... of ICD-10), each with its parent's value
    and meaning."""
    if top_level:
        sql = VALUES_SQL.format(where="AND v.depth = 1", order="v.node_id, v.value_order")
    else:
        sql = VALUES_SQL.format(where="", order="v.value_order")
    return release.query_dicts(sql, [encoding_id, limit])


def top_level_count(release: Release, encoding_id: int) -> int:
    """How many top-level nodes a tree coding has."""
    rows = release.query(
        "SELECT count(*) FROM ukb_encoding_value WHERE encoding_id = ? AND depth = 1",
        [encoding_id],
    )
    return int(rows[0][0])


CATEGORY_PATH_SQL = """
WITH RECURSIVE up(category_id, title, parent_id, canonical_url, step) AS (
    SELECT category_id, title, parent_id, canonical_url, 0 FROM ukb_category
    WHERE category_id = ?
    UNION ALL
    SELECT c.category_id, c.title, c.parent_id, c.canonical_url, up.step + 1
    FROM ukb_category AS c JOIN up ON c.category_id = up.parent_id
    WHERE up.step < 20
)
SELECT category_id, title, canonical_url FROM up ORDER BY step DESC
"""


def category_path(release: Release, category_id: int) -> list[tuple[int, str | None, str]]:
    """``(id, title, url)`` of the category and its ancestors, top first."""
    return [(int(c), t, u) for c, t, u in release.query(CATEGORY_PATH_SQL, [category_id])]
