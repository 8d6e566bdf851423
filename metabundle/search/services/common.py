"""Release-wide tools: what the release holds, its tables, guarded SQL and the
cross-source search that ranks every source in one list."""

from __future__ import annotations

import difflib
from dataclasses import replace
from typing import Annotated, Any

from pydantic import Field

from metabundle.schemas import Target, duckdb_type, get_table
from metabundle.search.errors import invalid, not_found
from metabundle.search.params import Method, Params, Query, clamp
from metabundle.search.release import Release
from metabundle.search.retrieval import (
    RRF,
    Hit,
    combine,
    documents,
    mask_from_sql,
    rank,
    source_mask,
)
from metabundle.search.sql_guard import DEFAULT_MAX_ROWS, MAX_ROWS
from metabundle.search.sql_pool import run_sql
from metabundle.search.tools import tool
from metabundle.sources.registry import get_source

SNIPPET_CHARS = 300
DIVERSITY_POOL = 3  # candidates per requested result, before look-alikes are dropped
GROUP = "release"


class NoParams(Params):
    pass


@tool(
    "get_release_info",
    "Call this first to learn what this offline release holds: its version, the "
    "sources with their upstream versions and row counts, and the embedding model. "
    "Cite the version with any answer.",
    NoParams,
    GROUP,
)
def get_release_info(release: Release, params: NoParams) -> dict[str, Any]:
    manifest = release.manifest
    return {
        "version": release.version,
        "created_at": manifest["created_at"],
        "sources": {
            name: {
                "title": entry["title"],
                "upstream": entry["upstream_url"],
                "upstream_version": entry.get("upstream_version"),
                "fetched_at": entry.get("fetched_at"),
                "tables": entry["tables"],
            }
            for name, entry in sorted(manifest["sources"].items())
        },
        "search": release.search_info,
    }


def _release_tables(release: Release) -> dict[str, dict[str, Any]]:
    return {
        name: entry
        for name, entry in sorted(release.manifest["tables"].items())
        if Target.DUCKDB.value in entry["targets"]
    }


@tool(
    "list_tables",
    "List every table of the release with its source, row count and description. "
    "Call this before writing SQL for run_sql, and when a property is not among a "
    "source tool's attributes: it may live in another table.",
    NoParams,
    GROUP,
)
def list_tables(release: Release, params: NoParams) -> dict[str, Any]:
    tables = [
        {
            "name": name,
            "source": entry["source"],
            "rows": entry["rows"],
            "description": entry["description"],
        }
        for name, entry in _release_tables(release).items()
    ]
    return {"tables": tables}


class TableParams(Params):
    table: Annotated[str, Field(max_length=200, description="A table name from list_tables.")]


@tool(
    "get_table_schema",
    "Get the columns of one table (type, nullability, description, primary key). Call "
    "this before run_sql so queries use real column names.",
    TableParams,
    GROUP,
)
def get_table_schema(release: Release, params: TableParams) -> dict[str, Any]:
    tables = _release_tables(release)
    if params.table not in tables:
        suggestions = difflib.get_close_matches(params.table, list(tables), n=5)
        raise not_found(
            f"There is no table {params.table!r}; call list_tables.", suggestions=suggestions
        )
    table = get_table(params.table)
    return {
        "table": table.name,
        "source": table.source,
        "description": table.description,
        "rows": tables[table.name]["rows"],
        "primary_key": list(table.primary_key),
        "url_column": table.url_column,
        "columns": [
            {
                "name": c.name,
                "type": duckdb_type(c, table),
                "nullable": c.nullable,
                "description": c.description,
            }
            for c in table.columns
        ],
    }


class SqlParams(Params):
    sql: Annotated[
        str,
        Field(max_length=20_000, description="One read-only SELECT (WITH ... SELECT allowed)."),
    ]
    max_rows: Annotated[int, clamp(1, MAX_ROWS), Field(description=f"Row cap, 1..{MAX_ROWS}.")] = (
        DEFAULT_MAX_ROWS
    )


@tool(
    "run_sql",
    "Run one read-only SELECT over the whole release (DuckDB SQL) when the curated "
    "tools cannot answer. Call list_tables and get_table_schema first. Only SELECT is "
    "accepted; files, URLs, ATTACH, COPY, SET and extensions are refused; rows are "
    "capped (truncated tells you) and slow queries are stopped.",
    SqlParams,
    GROUP,
)
def run_sql_tool(release: Release, params: SqlParams) -> dict[str, Any]:
    return run_sql(release.sql_workers, params.sql, params.max_rows)


# -- cross-source search ----------------------------------------------------------------


def result_item(position: int, row: dict[str, Any], scores: dict[str, Any]) -> dict[str, Any]:
    """A search result in the shape every search tool shares."""
    body = row.get("body") or ""
    snippet = body if len(body) <= SNIPPET_CHARS else body[: SNIPPET_CHARS - 1] + "…"
    item: dict[str, Any] = {
        "rank": position,
        "source": row["source"],
        "kind": row["kind"],
        "id": row["entity_id"],
        "doc_id": row["doc_id"],
        "title": row["title"],
        "snippet": snippet,
        "canonical_url": row["canonical_url"],
    }
    for key in ("parent_id", "study_id", "domain", "vocabulary", "variable_type", "role"):
        if row.get(key) is not None:
            item[key] = row[key]
    item["scores"] = scores
    return item


class SearchAllParams(Params):
    query: Query
    method: Method = "hybrid"
    sources: Annotated[
        list[str] | None,
        Field(max_length=10, description="Restrict to these sources (dbgap, ukb, aou, omop, idc)."),
    ] = None
    kinds: Annotated[
        list[str] | None,
        Field(max_length=20, description="Restrict to these kinds, e.g. variable, field."),
    ] = None
    limit: Annotated[int, clamp(1, 50), Field(description="Results to return, 1..50.")] = 10


@tool(
    "search_all",
    "Search every source at once (dbGaP, UK Biobank, All of Us, OMOP, Imaging Data "
    "Commons) and get one ranked list, each item labelled with its source and kind. "
    "Call this when you do not know which resource measures something; then use the "
    "source's own tools for details. Exact identifiers and aliases rank first.",
    SearchAllParams,
    GROUP,
)
def search_all(release: Release, params: SearchAllParams) -> dict[str, Any]:
    available = sorted(release.manifest["sources"])
    unknown = [s for s in params.sources or [] if s not in available]
    if unknown:
        raise invalid(f"Unknown source {unknown[0]!r}; this release has {', '.join(available)}.")
    kinds_mask = (
        mask_from_sql(release, "list_contains(?, kind)", [params.kinds]) if params.kinds else None
    )
    mask = combine(source_mask(release, params.sources), kinds_mask)
    hits, retrieval = rank(
        release,
        params.query,
        method=params.method,
        mask=mask,
        limit=params.limit * DIVERSITY_POOL,
        fusion=RRF,
    )
    rows = documents(release, [h.docno for h in hits])
    hits = fold_children(release, hits, rows)
    kept = distinct_titles(hits, rows)[: params.limit]
    results = [result_item(i, rows[h.docno], h.scores()) for i, h in enumerate(kept, start=1)]
    return {"query": params.query, "retrieval": retrieval.to_json(), "results": results}


def fold_children(release: Release, hits: list[Hit], rows: dict[int, dict[str, Any]]) -> list[Hit]:
    """Replace hits of a source's folded kinds by their parent documents, once each;
    the parents' rows are added to ``rows``."""
    parent_ids = {
        h.docno: f"{row['source']}:{folded}:{row['parent_id']}"
        for h in hits
        if (row := rows[h.docno])["parent_id"]
        and (folded := get_source(row["source"]).folded_kinds.get(row["kind"]))
    }
    if not parent_ids:
        return hits
    found = dict(
        release.query(
            "SELECT doc_id, docno FROM search_doc WHERE doc_id IN (SELECT unnest(?::VARCHAR[]))",
            [sorted(set(parent_ids.values()))],
        )
    )
    folded: list[Hit] = []
    seen: set[int] = set()
    for hit in hits:
        docno = found.get(parent_ids.get(hit.docno, ""), hit.docno)
        if docno not in seen:
            seen.add(docno)
            folded.append(replace(hit, docno=docno) if docno != hit.docno else hit)
    missing = [h.docno for h in folded if h.docno not in rows]
    rows.update(documents(release, missing))
    return folded


def distinct_titles(hits: list[Hit], rows: dict[int, dict[str, Any]]) -> list[Hit]:
    """Keep the best hit per (source, kind, title): one list across sources should not
    spend its places on look-alikes such as the many "Yes" answers of survey questions.
    Exact identifier matches are all kept."""
    seen: set[tuple[str, str, str]] = set()
    kept = []
    for hit in hits:
        row = rows[hit.docno]
        key = (row["source"], row["kind"], " ".join(row["title"].lower().split()))
        if hit.exact or key not in seen:
            seen.add(key)
            kept.append(hit)
    return kept
