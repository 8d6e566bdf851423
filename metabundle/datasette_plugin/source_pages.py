"""Entry pages per source (``/-/sources/<name>``) and the index's list of sources.

A source's entry page says what it holds (its coverage block of the manifest), its
main tables with their row counts, example searches, its licence, citation and
charts. The texts come from the release's metadata (``plugins.metabundle.sources``,
rendered from ``datasette/metadata.yaml``), the counts and coverage from its manifest.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from datasette.utils.asgi import NotFound, Request, Response

from metabundle.datasette_plugin.release_link import PLUGIN_NAME, release_for
from metabundle.errors import MetabundleError
from metabundle.release.coverage import source_lines
from metabundle.release.datasette_meta import DASHBOARDS, DATABASE
from metabundle.schemas import get_table

TEMPLATE = "metabundle_source.html"


def _first_sentence(text: str) -> str:
    head, dot, _ = text.partition(". ")
    return head + (dot.strip() if dot else "")


def _table_entry(datasette: Any, name: str, rows: int | None) -> dict[str, Any]:
    return {
        "name": name,
        "url": datasette.urls.table(DATABASE, name),
        "rows": rows,
        "description": _first_sentence(get_table(name).description),
    }


def source_entries(datasette: Any) -> list[dict[str, Any]]:
    """Every source of the served release with its entry-page facts (empty without a
    release)."""
    try:
        manifest = release_for(datasette).manifest
    except MetabundleError:
        return []
    texts = (datasette.plugin_config(PLUGIN_NAME) or {}).get("sources") or {}
    dashboards = datasette.plugin_config(DASHBOARDS) or {}
    counts = {name: table.get("rows") for name, table in manifest["tables"].items()}
    coverage = (manifest.get("coverage") or {}).get("sources") or {}
    entries = []
    for name, source in sorted(manifest["sources"].items()):
        text = texts.get(name) or {}
        block = coverage.get(name)
        entries.append(
            {
                "name": name,
                "title": source["title"],
                "upstream_version": source.get("upstream_version"),
                "url": datasette.urls.path(f"/-/sources/{name}"),
                "about": text.get("about"),
                "homepage": text.get("source_url"),
                "license": text.get("license"),
                "license_url": text.get("license_url"),
                "citation": text.get("citation"),
                "summary": block["summary"] if block else None,
                "complete": block["complete"] if block else None,
                "coverage": source_lines(name, block)[1:] if block else [],
                "tables": [
                    _table_entry(datasette, table, counts[table])
                    for table in text.get("main_tables") or []
                    if table in counts
                ],
                "examples": [
                    {
                        "query": query,
                        "url": datasette.urls.path("/-/search")
                        + "?"
                        + urlencode({"q": query, "sources": name}),
                    }
                    for query in text.get("examples") or []
                ],
                "charts": datasette.urls.path(f"/-/dashboards/{name}")
                if name in dashboards
                else None,
            }
        )
    return entries


async def source_page(datasette: Any, request: Request) -> Response:
    """``/-/sources/<name>``: the entry page of one source of the release."""
    name = request.url_vars["name"]
    entry = next((e for e in source_entries(datasette) if e["name"] == name), None)
    if entry is None:
        raise NotFound(f"This release holds no source named {name!r}")
    html = await datasette.render_template(TEMPLATE, {"source": entry}, request=request)
    return Response.html(html)
