"""Response models of the release-wide tools."""

from __future__ import annotations

from pydantic import JsonValue

from metabundle.search.payload import JsonObject, ResponseModel, Retrieval, SearchResult


class SourceEntry(ResponseModel):
    title: str
    upstream: str
    upstream_version: str | None
    fetched_at: str | None
    tables: dict[str, int]


class ReleaseInfo(ResponseModel):
    version: str
    created_at: str
    sources: dict[str, SourceEntry]
    search: JsonObject
    coverage: JsonObject | None


class TableEntry(ResponseModel):
    name: str
    source: str
    rows: int
    description: str


class TableList(ResponseModel):
    tables: list[TableEntry]


class ColumnEntry(ResponseModel):
    name: str
    type: str
    nullable: bool
    description: str


class TableSchema(ResponseModel):
    table: str
    source: str
    description: str
    rows: int
    primary_key: list[str]
    url_column: str | None
    columns: list[ColumnEntry]


class SqlColumn(ResponseModel):
    name: str
    type: str


class SqlResult(ResponseModel):
    columns: list[SqlColumn]
    rows: list[list[JsonValue]]
    row_count: int
    truncated: bool


class SearchAllAnswer(ResponseModel):
    query: str
    retrieval: Retrieval
    results: list[SearchResult]
    versions_collapsed: int
