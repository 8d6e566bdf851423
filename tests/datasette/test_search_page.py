"""The /-/search page: a paraphrased question answered from several sources, each
result labelled with its source and kind and linked to its entity page and its
canonical page, from `q` or `query`, with facets and the low-confidence flag."""

from __future__ import annotations

import re
from html import escape, unescape
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


ENTITY_LINK = re.compile(r'<a class="entity-link" href="([^"]+)">([^<]*)</a>')


async def test_q_is_the_query_and_every_hit_opens_its_entity_page(
    datasette: Datasette, release: Release
) -> None:
    arguments = {"query": "blood pressure", "limit": 25}
    payload = call_tool(release, "search_all", arguments)
    by_q = await datasette.client.get("/-/search?q=blood+pressure&limit=25")
    as_json = await datasette.client.get("/-/search.json?q=blood+pressure&limit=25")
    assert as_json.json() == call_tool(release, "search_all", arguments)
    links = ENTITY_LINK.findall(by_q.text)
    assert len(links) == len(payload["results"]), "every hit links its entity page"
    assert len({item["source"] for item in payload["results"]}) >= 3
    for (url, _), item in zip(links, payload["results"], strict=True):
        page = await datasette.client.get(unescape(url))
        assert page.status_code == 200, url
        key = item["parent_id"] if item["kind"] == "encoding_value" else item["id"]
        assert f"<code>{escape(key)}</code>" in page.text, f"{url} is the page of {key}"


async def test_facets_narrow_the_search_and_keep_its_parameters(datasette: Datasette) -> None:
    html = (await datasette.client.get("/-/search?q=lung&limit=30&method=keyword")).text
    facets = dict(re.findall(r'<a href="([^"]+)" data-facet="sources" data-value="([^"]+)"', html))
    assert len(facets) >= 2
    url, source = next(iter(facets.items()))
    assert unescape(url) == f"/-/search?q=lung&limit=30&method=keyword&sources={source}"
    narrowed = (await datasette.client.get(unescape(url))).text
    assert {s for s, _ in RESULT.findall(narrowed)} == {source}


async def test_low_confidence_is_shown(datasette: Datasette, release: Release) -> None:
    query = "zzqx vlorp nargle"
    payload = call_tool(release, "search_all", {"query": query})
    html = (await datasette.client.get(f"/-/search?{urlencode({'q': query})}")).text
    assert payload["retrieval"]["low_confidence"] is True
    assert 'data-low-confidence="true"' in html
    confident = (await datasette.client.get("/-/search?q=body+mass+index")).text
    assert "data-low-confidence" not in confident
