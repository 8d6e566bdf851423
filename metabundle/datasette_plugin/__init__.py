"""The Datasette plugin of metabundle: the search core inside Datasette.

Registered under the ``datasette`` entry point (``pyproject.toml``), it adds to any
Datasette serving a release's ``metabundle.sqlite``:

- ``/-/search``: a search form over every source with ranked results
  (``search_all``), each labelled with its source and kind and linked to its
  entity page and canonical page; ``/-/search.json`` returns the same payload as JSON;
- ``/-/sources/<name>``: an entry page per source (:mod:`.source_pages`), listed on
  the index; entity pages: a row page's title, source link and related rows
  (:mod:`.entity_page`);
- ``/-/api``: every registered tool of the core at ``/-/api/<tool>`` (GET with query
  parameters or POST with a JSON body), payloads identical to ``call_tool``, typed
  errors with their HTTP status, and ``/-/api/openapi.json`` generated from the tools'
  pydantic models;
- bounds on every request (:mod:`.bounds`): SQLite value and statement size limits,
  ``fts3_tokenizer`` refused, request and response byte caps and typed JSON for server
  errors; every statement in a killable worker process, so none outlives the time
  limit (:mod:`.sql_workers`); error pages that keep their 4xx status, and table-page
  query parameters Datasette cannot use answered ``invalid_request`` (:mod:`.errors`);
- the core's tools on ``datasette-mcp``'s ``/-/mcp`` (its ``register_mcp_tools``
  hook).

No business logic lives here: every answer comes from
:func:`metabundle.search.tools.call_tool`. Serving and publishing are in :mod:`.serve`.
"""

from __future__ import annotations

from typing import Any

from datasette import hookimpl
from datasette.utils.asgi import Request, Response

from metabundle.datasette_plugin import mcp_tools
from metabundle.datasette_plugin.api import (
    API_PREFIX,
    api_tool,
    json_response,
    served_tools,
    tool_index,
)
from metabundle.datasette_plugin.bounds import BoundedApp, limit_connection
from metabundle.datasette_plugin.entity_page import entity_context
from metabundle.datasette_plugin.errors import error_response, replace_default_handler
from metabundle.datasette_plugin.openapi import openapi_document
from metabundle.datasette_plugin.release_link import NoRelease, release_for, release_path
from metabundle.datasette_plugin.search_page import search_json, search_page
from metabundle.datasette_plugin.source_pages import source_entries, source_page
from metabundle.datasette_plugin.sql_workers import run_sql_in_workers
from metabundle.errors import MetabundleError
from metabundle.release.datasette_meta import SQLITE_FILE
from metabundle.release.integrity import check_digest


async def _api_index(datasette: Any, request: Request) -> Response:
    return json_response(tool_index(datasette))


async def _openapi(datasette: Any, request: Request) -> Response:
    try:
        version = release_for(datasette).version
    except MetabundleError:
        version = "(none: this Datasette serves no release)"
    document = openapi_document(served_tools(datasette), datasette.urls.path(API_PREFIX), version)
    return json_response(document)


@hookimpl
def register_routes(datasette: Any) -> list[tuple[str, Any]]:
    return [
        (r"^/-/search$", search_page),
        (r"^/-/search\.json$", search_json),
        (r"^/-/sources/(?P<name>[a-z0-9_]+)$", source_page),
        (r"^/-/api$", _api_index),
        (r"^/-/api/openapi\.json$", _openapi),
        (r"^/-/api/(?P<tool>[A-Za-z0-9_]+)$", api_tool),
    ]


@hookimpl
def extra_template_vars(
    template: str, database: str | None, table: str | None, request: Any, datasette: Any
) -> Any:
    """The sources on the index, and the entity facts on a row page."""
    if template == "index.html":
        return {"metabundle_sources": source_entries(datasette)}
    if template.startswith("row") and database and table and request is not None:

        async def entity() -> dict[str, Any]:
            return await entity_context(datasette, database, table, request)

        return entity
    return None


@hookimpl
def prepare_connection(conn: Any) -> None:
    """Size limits and refused functions on every SQLite connection (see :mod:`.bounds`)."""
    limit_connection(conn)


@hookimpl
def asgi_wrapper(datasette: Any) -> Any:
    """Cap response sizes and type server errors (see :mod:`.bounds`)."""
    return BoundedApp


@hookimpl
def handle_exception(datasette: Any, request: Any, exception: Exception) -> Any:
    """Error pages with their 4xx status and no Python text (see :mod:`.errors`)."""

    async def respond() -> Response:
        return await error_response(datasette, request, exception)

    return respond


@hookimpl
def startup(datasette: Any) -> None:
    """Run SQL in killable workers (see :mod:`.sql_workers`); open the release now, so
    a broken one fails at start rather than on a search; the SQLite file Datasette
    serves must match its sha256 in the manifest."""
    replace_default_handler()
    run_sql_in_workers(datasette)
    try:
        release_path(datasette)
    except NoRelease:
        return  # browsing the SQLite file still works; the search routes say why not
    release = release_for(datasette)
    entry = next((f for f in release.manifest["files"] if f["path"] == SQLITE_FILE), None)
    if entry is not None:
        check_digest(release.path, entry)


@hookimpl
def menu_links(datasette: Any, actor: Any, request: Any) -> list[dict[str, str]]:
    return [
        {"href": datasette.urls.path("/-/search"), "label": "Search all sources"},
        {"href": datasette.urls.path(API_PREFIX), "label": "Search API (JSON)"},
    ]


@hookimpl
def skip_csrf(datasette: Any, scope: dict[str, Any]) -> bool | None:
    """The API is read-only: POSTs to it need no CSRF token, even with cookies."""
    path = scope.get("path", "")
    return True if path.startswith(datasette.urls.path(API_PREFIX + "/")) else None


@hookimpl
def register_mcp_tools(datasette: Any, mcp: Any) -> None:
    """``datasette-mcp``'s hook: add the release's core tools to its MCP server."""
    mcp_tools.register_tools(datasette, mcp)
