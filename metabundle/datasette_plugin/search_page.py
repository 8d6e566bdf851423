"""``/-/search``: the cross-source search as a page, and ``/-/search.json``.

Both call the core's ``search_all`` with the same parameters as ``/-/api/search_all``
(``query``, or ``q`` as the index's and portals' forms send it, ``method``,
``sources``, ``kinds``, ``limit``); the JSON endpoint returns its payload unchanged,
the page renders it: each result with its source and kind labels, its entity page
here and its canonical page at the source, the ``low_confidence`` flag, and facets
(results per source and kind) whose links keep every other parameter of the URL.
"""

from __future__ import annotations

from collections import Counter
from typing import Any
from urllib.parse import parse_qsl, urlencode

from datasette.utils import MultiParams, tilde_encode
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
TEMPLATE = "metabundle_search.html"
METHODS = ("hybrid", "keyword", "semantic")
QUERY_ALIAS = "q"
# A result's entity page: table ``<source>_<kind>`` keyed by the result's id, except
# where a source keeps every kind in one table, or a kind is shown on its parent's page.
SOURCE_TABLES = {"aou": "aou_item"}
PARENT_PAGES = {("ukb", "encoding_value"): "ukb_encoding"}


def safe_url(value: Any) -> str | None:
    """``value`` when it is an http(s) URL (source text is untrusted), else None."""
    if isinstance(value, str) and value.startswith(("https://", "http://")) and " " not in value:
        return value
    return None


async def _entity_link(datasette: Any) -> Any:
    """A function result → URL of its entity's row page, or None without one."""
    found = release_database(datasette)
    if found is None:
        return lambda item: None
    name = found[0]
    tables = set(await datasette.get_database(name).table_names())

    def link(item: dict[str, Any]) -> str | None:
        source, kind = item["source"], item["kind"]
        table, key = PARENT_PAGES.get((source, kind)), item.get("parent_id")
        if table is None:
            table, key = SOURCE_TABLES.get(source, f"{source}_{kind}"), item.get("id")
        if table not in tables or key is None:
            return None
        return datasette.urls.row(name, table, tilde_encode(str(key)))

    return link


def search_params(request: Request) -> MultiParams:
    """The request's query parameters with ``q`` read as ``query``."""
    pairs = parse_qsl(request.query_string, keep_blank_values=True)
    return MultiParams([("query" if k == QUERY_ALIAS else k, v) for k, v in pairs])


def _facets(request: Request, results: list[dict[str, Any]], sources: dict[str, str]) -> Any:
    """Results per source and per kind, each linked to the same URL narrowed to it."""
    pairs = parse_qsl(request.query_string, keep_blank_values=True)

    def narrowed(parameter: str, value: str) -> str:
        kept = [(k, v) for k, v in pairs if k != parameter]
        return request.path + "?" + urlencode([*kept, (parameter, value)])

    return [
        {
            "name": parameter,
            "values": [
                {
                    "value": value,
                    "label": labels.get(value, value),
                    "count": count,
                    "url": narrowed(parameter, value),
                }
                for value, count in Counter(item[field] for item in results).most_common()
            ],
        }
        for parameter, field, labels in (("sources", "source", sources), ("kinds", "kind", {}))
    ]


def _sources(datasette: Any) -> dict[str, str]:
    """Source name → title of the release's sources (empty without a release)."""
    try:
        manifest = release_for(datasette).manifest
    except MetabundleError:
        return {}
    return {name: entry["title"] for name, entry in sorted(manifest["sources"].items())}


async def search_json(datasette: Any, request: Request) -> Response:
    """``/-/search.json``: the ``search_all`` payload, as ``/-/api/search_all``."""
    payload = await tool_payload(datasette, request, SEARCH_TOOL, search_params(request))
    return json_response(payload, payload_status(payload))


async def search_page(datasette: Any, request: Request) -> Response:
    """``/-/search``: the form and, when a query is given, its ranked results."""
    params = search_params(request)
    query = params.get("query") or ""
    payload: dict[str, Any] | None = None
    if query.strip():
        payload = await tool_payload(datasette, request, SEARCH_TOOL, params)
    titles = _sources(datasette)
    entity_link = await _entity_link(datasette)
    results = [
        {
            **item,
            "source_title": titles.get(item["source"], item["source"]),
            "link": safe_url(item.get("canonical_url")),
            "entity_url": entity_link(item),
        }
        for item in (payload or {}).get("results", [])
    ]
    context = {
        "query": query,
        "payload": payload,
        "error": (payload or {}).get("error"),
        "results": results,
        "sources": titles,
        "facets": _facets(request, results, titles),
        "low_confidence": ((payload or {}).get("retrieval") or {}).get("low_confidence"),
        "selected_sources": set(split_values(params.getlist("sources"))),
        "selected_kinds": split_values(params.getlist("kinds")),
        "methods": METHODS,
        "method": params.get("method") or METHODS[0],
        "limit": params.get("limit") or "10",
        "json_url": datasette.urls.path("/-/search.json")
        + ("?" + request.query_string if request.query_string else ""),
    }
    html = await datasette.render_template(TEMPLATE, context, request=request)
    status = payload_status(payload) if payload else 200
    return Response.html(html, status=status)
