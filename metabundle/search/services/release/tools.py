"""Release-wide tools: what the release holds, its tables, guarded SQL and the
cross-source search that ranks every source in one list."""

from __future__ import annotations

import difflib
from typing import Annotated, Any

from pydantic import Field

from metabundle.schemas import Target, duckdb_type, get_table
from metabundle.schemas.sources import DESCRIPTORS
from metabundle.search.errors import invalid, not_found
from metabundle.search.params import Explain, Method, Params, Query, clamp
from metabundle.search.payload import Retrieval, search_result
from metabundle.search.ranking.merge import MERGE, rank_all
from metabundle.search.registry import absent_source, tool
from metabundle.search.release import Release
from metabundle.search.retrieval import mask_from_sql
from metabundle.search.services.release.models import (
    ReleaseInfo,
    SearchAllAnswer,
    SqlResult,
    TableList,
    TableSchema,
)
from metabundle.search.sql_guard import DEFAULT_MAX_ROWS, MAX_ROWS
from metabundle.search.sql_pool import run_sql

GROUP = "release"


class NoParams(Params):
    pass


@tool(
    "get_release_info",
    "Call this first: release version, sources, counts and coverage; cite the version.",
    NoParams,
    GROUP,
    response=ReleaseInfo,
    guide=(
        "Call this first: the release version, its sources with upstream versions, row "
        "counts and coverage, and the embedding model. Cite the version with any answer. "
        "When coverage.complete is false, say that an entity missing here may still exist upstream."
    ),
)
def get_release_info(release: Release, params: NoParams) -> ReleaseInfo:
    manifest = release.manifest
    return ReleaseInfo.model_validate(
        {
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
            "coverage": manifest.get("coverage"),
        }
    )


def _release_tables(release: Release) -> dict[str, dict[str, Any]]:
    return {
        name: entry
        for name, entry in sorted(release.manifest["tables"].items())
        if Target.DUCKDB.value in entry["targets"]
    }


@tool(
    "list_tables",
    "Call before writing SQL for run_sql: every table with source, rows and description.",
    NoParams,
    GROUP,
    response=TableList,
    guide=(
        "List every table with its source, row count and description. Call it before "
        "writing SQL for run_sql, or when a property is missing from a tool's answer."
    ),
)
def list_tables(release: Release, params: NoParams) -> TableList:
    tables = [
        {
            "name": name,
            "source": entry["source"],
            "rows": entry["rows"],
            "description": entry["description"],
        }
        for name, entry in _release_tables(release).items()
    ]
    return TableList.model_validate({"tables": tables})


class TableParams(Params):
    table: Annotated[str, Field(max_length=200, description="A table name from list_tables.")]


@tool(
    "get_table_schema",
    "Call before run_sql to get one table's real column names and types.",
    TableParams,
    GROUP,
    response=TableSchema,
    guide=(
        "Get one table's columns (type, nullability, description, primary key). Call it "
        "before run_sql so queries use real column names."
    ),
)
def get_table_schema(release: Release, params: TableParams) -> TableSchema:
    tables = _release_tables(release)
    if params.table not in tables:
        suggestions = difflib.get_close_matches(params.table, list(tables), n=5)
        raise not_found(
            f"There is no table {params.table!r}; call list_tables.", suggestions=suggestions
        )
    table = get_table(params.table)
    return TableSchema.model_validate(
        {
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
    )


class SqlParams(Params):
    sql: Annotated[
        str,
        Field(max_length=20_000, description="One SELECT (or WITH)."),
    ]
    max_rows: Annotated[int, clamp(1, MAX_ROWS), Field(description=f"1..{MAX_ROWS}.")] = (
        DEFAULT_MAX_ROWS
    )


@tool(
    "run_sql",
    "Use when curated tools cannot answer: one read-only DuckDB SELECT (get_table_schema first).",
    SqlParams,
    GROUP,
    response=SqlResult,
    guide=(
        "Run one read-only DuckDB SELECT over the release when the curated tools cannot "
        "answer. Call list_tables and get_table_schema first. "
        "Only SELECT is accepted; files, URLs, ATTACH, COPY, SET and extensions are refused; rows"
        " are capped (truncated tells you) and slow queries are stopped."
    ),
)
def run_sql_tool(release: Release, params: SqlParams) -> SqlResult:
    with release.off_connection():  # the query runs in a worker process
        answer = run_sql(release.sql_workers, params.sql, params.max_rows)
    return SqlResult.model_validate(answer)


# -- cross-source search ----------------------------------------------------------------


class SearchAllParams(Params):
    query: Query
    method: Method = "hybrid"
    sources: Annotated[
        list[str] | None,
        Field(max_length=10, description=f"{', '.join(DESCRIPTORS)}."),
    ] = None
    kinds: Annotated[
        list[str] | None,
        Field(max_length=20, description="E.g. variable, field."),
    ] = None
    limit: Annotated[int, clamp(1, 50), Field(description="1..50.")] = 10
    explain: Explain = False


@tool(
    "search_all",
    "Call when you do not know which source (dbGaP, UKB, All of Us, OMOP, IDC) measures something.",
    SearchAllParams,
    GROUP,
    response=SearchAllAnswer,
    guide=(
        "Search every source at once (dbGaP, UK Biobank, All of Us, OMOP, IDC) for one "
        "ranked list, each item labelled with its source and kind. Call it when you do "
        "not know which source measures something. "
        "Then use the source's own tools for details. Exact identifiers and aliases rank first; "
        "a source whose hits match little of the query comes after the sources that match."
    ),
)
def search_all(release: Release, params: SearchAllParams) -> SearchAllAnswer:
    available = sorted(release.manifest["sources"])
    unknown = [s for s in params.sources or [] if s not in available]
    if unknown and unknown[0] in DESCRIPTORS:
        raise absent_source(release, "search_all", unknown[0])
    if unknown:
        raise invalid(f"Unknown source {unknown[0]!r}; this release has {', '.join(available)}.")
    kinds_mask = (
        mask_from_sql(release, "list_contains(?, kind)", [params.kinds]) if params.kinds else None
    )
    merged = rank_all(
        release,
        params.query,
        method=params.method,
        sources=params.sources or available,
        kinds_mask=kinds_mask,
        limit=params.limit,
        explain=params.explain,
    )
    results = []
    for position, hit in enumerate(merged.hits, start=1):
        item = search_result(position, merged.rows[hit.docno], hit.scores())
        if merged.collapsed.get(hit.docno):
            item.versions_collapsed = merged.collapsed[hit.docno]
        results.append(item)
    return SearchAllAnswer(
        query=params.query,
        retrieval=Retrieval.model_validate({**merged.retrieval.to_json(), "merge": MERGE}),
        results=results,
        versions_collapsed=sum(merged.collapsed.get(h.docno, 0) for h in merged.hits),
    )
