"""What a row page (``row.html``) shows: the entity's title, its canonical page at
the source, its parents and its related rows.

The title is the row's ``label_column``; the source link its ``url_column`` or, for a
table without one, its metadata's ``url_template`` filled with the row's values. The
parents are the rows its foreign keys name, with their labels (Datasette 0.65 links
them on table pages only); a value naming no row stays plain text. The
related sections are the table's ``entity_sections`` of the plugin's metadata: each a
query of the row's key (``:id``), whose first column may link to another table's row
pages and which may embed a chart of ``datasette-dashboards`` filtered to the row;
they run side by side on Datasette's SQL threads.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from typing import Any
from urllib.parse import urlencode

from datasette.database import QueryInterrupted
from datasette.utils import escape_sqlite, tilde_encode, urlsafe_components

from metabundle.datasette_plugin.release_link import PLUGIN_NAME
from metabundle.datasette_plugin.search_page import safe_url

SECTION_ROWS_SHOWN = 200


def _source_url(metadata: dict[str, Any], row: dict[str, Any]) -> str | None:
    column = metadata.get("url_column")
    if column and safe_url(row.get(column)):
        return row[column]
    template = metadata.get("url_template")
    if template:
        try:
            return safe_url(template.format(**row))
        except (KeyError, IndexError, ValueError):
            return None
    return None


def _lists(row: dict[str, Any]) -> dict[str, str]:
    """Column → its JSON list of plain values written out, comma-separated."""
    lists = {}
    for column, value in row.items():
        if isinstance(value, str) and value.startswith("["):
            try:
                items = json.loads(value)
            except ValueError:
                continue
            if isinstance(items, list) and all(
                isinstance(item, str | int | float) for item in items
            ):
                lists[column] = ", ".join(str(item) for item in items)
    return lists


async def _section(datasette: Any, database: str, spec: dict[str, Any], key: str) -> dict[str, Any]:
    """One related section: its columns and rows (first cell linked when ``link``)."""
    section: dict[str, Any] = {"title": spec["title"], "columns": [], "rows": [], "error": None}
    try:
        results = await datasette.get_database(database).execute(spec["sql"], {"id": key})
    except (sqlite3.Error, QueryInterrupted) as error:
        section["error"] = f"not available: {error}"
        return section
    section["columns"] = list(results.columns)
    link = spec.get("link")
    for row in list(results.rows)[:SECTION_ROWS_SHOWN]:
        values = list(row)
        url = (
            datasette.urls.row(database, link, tilde_encode(str(values[0])))
            if link and values[0] is not None
            else None
        )
        section["rows"].append({"values": values, "url": url})
    if spec.get("chart") and section["rows"]:
        query = urlencode({spec.get("filter", "id"): key})
        section["chart"] = datasette.urls.path(f"/-/dashboards/{spec['chart']}/embed?{query}")
    return section


async def _parents(
    datasette: Any, database: str, table: str, row: dict[str, Any]
) -> dict[str, dict[str, str]]:
    """Column → link and label of each row this row's foreign keys name."""
    db = datasette.get_database(database)
    parents = {}
    for key in await db.foreign_keys_for_table(table):
        value = row.get(key["column"])
        if value is None:
            continue
        other = key["other_table"]
        label = await db.label_column_for_table(other)
        found = await db.execute(
            f"select {escape_sqlite(label) if label else 'null'} from {escape_sqlite(other)} "
            f"where {escape_sqlite(key['other_column'])} = :value limit 1",
            {"value": value},
        )
        first = found.first()
        if first is not None:
            parents[key["column"]] = {
                "url": datasette.urls.row(database, other, tilde_encode(str(value))),
                "label": str(first[0]) if first[0] is not None else str(value),
            }
    return parents


async def entity_context(datasette: Any, database: str, table: str, request: Any) -> dict[str, Any]:
    """``entity`` for ``row.html``: title, source link, parents, lists written out,
    codes beside their labels and related sections of the row the request names
    (empty when the row does not exist)."""
    db = datasette.get_database(database)
    keys = await db.primary_keys(table)
    values = urlsafe_components(request.url_vars.get("pks", ""))
    if not keys or len(keys) != len(values):
        return {}
    where = " and ".join(f"{escape_sqlite(k)} = :k{i}" for i, k in enumerate(keys))
    params = {f"k{i}": value for i, value in enumerate(values)}
    found = await db.execute(f"select * from {escape_sqlite(table)} where {where}", params)
    first = found.first()
    if first is None:
        return {}
    row = dict(zip(found.columns, first, strict=True))
    metadata = datasette.table_metadata(database, table) or {}
    label = metadata.get("label_column")
    specs = ((datasette.plugin_config(PLUGIN_NAME) or {}).get("entity_sections") or {}).get(
        table, []
    )
    sections = await asyncio.gather(
        *(_section(datasette, database, spec, values[0]) for spec in specs)
    )
    return {
        "entity": {
            "title": row.get(label) if label else None,
            "source_url": _source_url(metadata, row),
            "parents": await _parents(datasette, database, table, row),
            "lists": _lists(row),
            # a code column with a ``<column>_label`` beside it: label column → code
            "codes": {f"{c}_label": row[c] for c in row if f"{c}_label" in row},
            "sections": list(sections) if len(keys) == 1 else [],
        }
    }
