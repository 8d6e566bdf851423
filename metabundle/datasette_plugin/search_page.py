"""``/-/search``: the cross-source search as a page, and ``/-/search.json``.

Both call the core's ``search_all`` with the same parameters as ``/-/api/search_all``
(``query``, ``method``, ``sources``, ``kinds``, ``limit``); the JSON endpoint returns
its payload unchanged, the page renders it: each result with its source and kind
labels, its canonical link at the source and a link to its ``search_doc`` row.
"""

from __future__ import annotations

from typing import Any

from datasette.utils import tilde_encode
from datasette.utils.asgi import Request, Response

from metabundle.datasette_plugin.api import (
    json_response,
    payload_status,
    split_values,
    tool_payload,
)
from metabundle.datasette_plugin.release_link import release_database, release_for
from metabundle.errors import MetabundleError

SEARCH_TOOL = "search_all"
SEARCH_TABLE = "search_doc"
TEMPLATE = "metabundle_search.html"
METHODS = ("hybrid", "keyword", "semantic")


def safe_url(value: Any) -> str | None:
    """``value`` when it is an http(s) URL (source text is untrusted), else None."""
    if isinstance(value, str) and value.startswith(("https://", "http://")) and " " not in value:
        return value
    return None


async def _row_link(datasette: Any) -> Any:
    """A function doc_id → URL of its search_doc row, or None without that table."""
    found = release_database(datasette)
    if found is None:
        return None
    name = found[0]
    if not await datasette.get_database(name).table_exists(SEARCH_TABLE):
        return None
    return lambda doc_id: datasette.urls.row(name, SEARCH_TABLE, tilde_encode(doc_id))


def _sources(datasette: Any) -> dict[str, str]:
    """Source name → title of the release's sources (empty without a release)."""
    try:
        manifest = release_for(datasette).manifest
    except MetabundleError:
        return {}
    return {name: entry["title"] for name, entry in sorted(manifest["sources"].items())}


async def search_json(datasette: Any, request: Request) -> Response:
    """``/-/search.json``: the ``search_all`` payload, as ``/-/api/search_all``."""
    payload = await tool_payload(datasette, request, SEARCH_TOOL)
    return json_response(payload, payload_status(payload))


async def search_page(datasette: Any, request: Request) -> Response:
    """``/-/search``: the form and, when a query is given, its ranked results."""
    query = request.args.get("query") or ""
    payload: dict[str, Any] | None = None
    if query.strip():
        payload = await tool_payload(datasette, request, SEARCH_TOOL)
    titles = _sources(datasette)
    row_link = await _row_link(datasette)
    results = [
        {
            **item,
            "source_title": titles.get(item["source"], item["source"]),
            "link": safe_url(item.get("canonical_url")),
            "row_url": row_link(item["doc_id"]) if row_link else None,
        }
        for item in (payload or {}).get("results", [])
    ]
    context = {
        "query": query,
        "payload": payload,
        "error": (payload or {}).get("error"),
        "results": results,
        "sources": titles,
        "selected_sources": set(split_values(request.args.getlist("sources"))),
        "methods": METHODS,
        "method": request.args.get("method") or METHODS[0],
        "limit": request.args.get("limit") or "10",
        "json_url": datasette.urls.path("/-/search.json")
        + ("?" + request.query_string if request.query_string else ""),
    }
    html = await datasette.render_template(TEMPLATE, context, request=request)
    status = payload_status(payload) if payload else 200
    return Response.html(html, status=status)
