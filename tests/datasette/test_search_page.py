"""The /-/search page: a paraphrased question answered from several sources, each
result labelled with its source and kind and linked to its canonical page."""

from __future__ import annotations

import re
from html import unescape
from urllib.parse import urlencode

import pytest
from datasette.app import Datasette

from metabundle.search.release import Release
from metabundle.search.tools import call_tool

pytestmark = pytest.mark.anyio

# Worded unlike the titles it should find (e.g. "Alcohol intake frequency.").
PARAPHRASE = "how often people drink beer or wine"
RESULT = re.compile(r'<li class="search-result" data-source="([^"]+)" data-kind="([^"]+)">')


async def test_a_paraphrase_finds_results_in_several_sources(
    datasette: Datasette, release: Release
) -> None:
    arguments = {"query": PARAPHRASE, "limit": 20}
    response = await datasette.client.get(f"/-/search?{urlencode(arguments)}")
    assert response.status_code == 200
    html = response.text
    payload = call_tool(release, "search_all", arguments)
    labels = RESULT.findall(html)
    assert labels == [(item["source"], item["kind"]) for item in payload["results"]]
    assert len({source for source, _ in labels}) >= 2, "results come from several sources"
    titles = " ".join(item["title"].lower() for item in payload["results"][:10])
    assert "alcohol" in titles, "the paraphrase reaches alcohol items"
    sources = release.manifest["sources"]
    for item in payload["results"]:
        assert unescape(html).count(sources[item["source"]]["title"]) >= 1
        if item["canonical_url"]:
            assert f'class="canonical-link" href="{item["canonical_url"]}"' in unescape(html)
    assert payload["data_notice"] in unescape(html)


async def test_the_empty_page_is_a_form(datasette: Datasette, release: Release) -> None:
    html = (await datasette.client.get("/-/search")).text
    assert 'name="q"' in html and '<li class="search-result"' not in html
    for name, entry in release.manifest["sources"].items():
        assert f'name="sources" value="{name}"' in html
        assert entry["title"] in unescape(html)


async def test_a_source_filter_keeps_to_that_source(datasette: Datasette) -> None:
    html = (await datasette.client.get("/-/search?query=lung+cancer&sources=idc")).text
    labels = RESULT.findall(html)
    assert labels and {source for source, _ in labels} == {"idc"}
    assert 'value="idc" checked' in html


async def test_a_refused_search_shows_the_typed_error(datasette: Datasette) -> None:
    response = await datasette.client.get("/-/search?query=lung&method=fuzzy")
    assert response.status_code == 400
    assert "<strong>invalid_request</strong>" in response.text
    assert '<li class="search-result"' not in response.text
