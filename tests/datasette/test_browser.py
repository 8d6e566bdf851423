"""A person in a real browser at 1400×1000: Debian's Chromium, headless, driven by
Playwright over ``metabundle datasette`` on loopback. The index leads to one entry
page per source; an entity page per main entity shows its title and source link above
the fold and links its parents; charts are drawn; a search from ``?q=`` links each hit
to its entity page. Screenshots go to ``test-artifacts/datasette/``."""

from __future__ import annotations

import re
import shutil
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import pytest
from datasette.utils import tilde_encode
from playwright.sync_api import Browser, Locator, Page, expect, sync_playwright

from metabundle.release.manifest import read_manifest

pytestmark = pytest.mark.browser

CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "datasette"
VIEWPORT = {"width": 1400, "height": 1000}


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if not CHROMIUM.exists():
        found = shutil.which("chromium")
        pytest.fail(
            f"Chromium is missing at {CHROMIUM} ({found or 'not on PATH'}): install Debian's "
            "package with `apt-get install -y chromium` (.ci/run does)."
        )
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport=VIEWPORT)
    opened = context.new_page()
    opened.set_default_timeout(30_000)
    yield opened
    context.close()


def shot(page: Page, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=False)


def test_index_page(page: Page, served_url: str, release_path: Path) -> None:
    version = read_manifest(release_path)["version"]
    page.goto(served_url + "/")
    expect(page).to_have_title(re.compile(f"metabundle {re.escape(version)}"))
    expect(page.get_by_role("heading", level=1)).to_contain_text(f"metabundle {version}")
    expect(page.get_by_label("Search every source:")).to_be_visible()
    page.get_by_text("Every table of the release").click()
    expect(page.get_by_role("link", name="metabundle", exact=True)).to_be_visible()
    coverage = page.locator(".metabundle-coverage")
    expect(coverage).to_be_visible()
    expect(coverage).to_contain_text("dbgap: PARTIAL")  # the shared build selects studies
    expect(coverage).to_contain_text("--dbgap-studies")
    shot(page, "index")


def test_table_page_with_description_and_source_links(page: Page, served_url: str) -> None:
    page.goto(served_url + "/metabundle/ukb_field")
    expect(page.get_by_role("heading", level=1)).to_have_text("ukb_field")
    expect(page.locator(".metadata-description")).to_contain_text("UK Biobank Showcase data-fields")
    terms = page.locator(".metadata-description + p")
    expect(terms).to_contain_text("Data license: UK Biobank Showcase terms")
    expect(terms).to_contain_text("Data source: UK Biobank Showcase")
    first = page.locator("a.canonical-link").first
    expect(first).to_be_visible()
    assert first.get_attribute("href").startswith("https://biobank.")
    columns = page.locator("dl.column-descriptions")
    expect(columns).to_contain_text("Showcase data-field id.")
    assert columns.bounding_box()["height"] < 300, "column descriptions stay compact"
    shot(page, "table-ukb_field")


def test_full_text_search_from_the_table_page(page: Page, served_url: str) -> None:
    page.goto(served_url + "/metabundle/ukb_field")
    total = page.locator("h3").first.inner_text()
    page.get_by_label("Search:").fill("smoking")
    page.get_by_label("Search:").press("Enter")
    expect(page).to_have_url(re.compile(r"_search=smoking"))
    heading = page.locator("h3").first
    expect(heading).to_contain_text('where search matches "smoking"')
    assert heading.inner_text() != total
    titles = page.locator("td.col-title").all_inner_texts()
    assert titles, "the search shows rows"
    assert sum("smok" in title.lower() for title in titles) >= len(titles) // 2
    page.locator("table.rows-and-columns").evaluate("table => table.scrollIntoView()")
    shot(page, "fts-ukb_field-smoking")


def test_the_search_page_answers_a_question(page: Page, served_url: str) -> None:
    page.goto(served_url + "/-/search")
    page.get_by_label("Search query").fill("how often people drink beer or wine")
    page.get_by_role("button", name="Search").click()
    results = page.locator("li.search-result")
    expect(results.first).to_be_visible()
    sources = {results.nth(i).get_attribute("data-source") for i in range(results.count())}
    assert len(sources) >= 2, f"results from several sources, got {sources}"
    expect(results.first.locator(".source-label")).to_be_visible()
    expect(results.first.locator(".kind-label")).to_be_visible()
    expect(page.locator("ol.search-results")).to_contain_text(re.compile("alcohol", re.I))
    link = page.locator("a.canonical-link").first
    assert link.get_attribute("href").startswith("https://")
    shot(page, "search-all")


SOURCES = ("aou", "dbgap", "idc", "omop", "ukb")


def above_the_fold(locator: Locator) -> None:
    expect(locator).to_be_visible()
    box = locator.bounding_box()
    assert box is not None and box["y"] + box["height"] <= VIEWPORT["height"], (
        f"{locator} is below the fold at {box}"
    )


def test_the_index_starts_at_the_sources(page: Page, served_url: str, release_path: Path) -> None:
    manifest = read_manifest(release_path)
    page.goto(served_url + "/")
    cards = page.locator(".source-card")
    expect(cards).to_have_count(len(manifest["sources"]))
    for name, source in manifest["sources"].items():
        link = page.locator(f'.source-card[data-source="{name}"] h2 a')
        above_the_fold(link)
        expect(link).to_have_text(source["title"])
    first_tables = page.locator('.source-card[data-source="ukb"] p a').first
    expect(first_tables).to_have_text("ukb_field")
    expect(page.locator(".source-cards")).not_to_contain_text("search_doc")
    shot(page, "index-sources")
    page.locator('.source-card[data-source="omop"] h2 a').click()
    expect(page).to_have_url(re.compile(r"/-/sources/omop$"))


@pytest.mark.parametrize("source", SOURCES)
def test_an_entry_page_per_source(
    page: Page, served_url: str, release_path: Path, source: str
) -> None:
    manifest = read_manifest(release_path)
    page.goto(f"{served_url}/-/sources/{source}")
    expect(page.get_by_role("heading", level=1)).to_have_text(manifest["sources"][source]["title"])
    summary = manifest["coverage"]["sources"][source]["summary"]
    expect(page.locator("dd.summary")).to_contain_text(summary)
    expect(page.locator("dd.license a")).to_have_attribute("href", re.compile("^https://"))
    expect(page.locator("dd.citation")).to_contain_text(re.compile(r"\d{4}"))
    tables = page.locator("table.main-tables a")
    assert tables.count() >= 2
    expect(tables.first).to_have_text(re.compile(f"^{source}_"))
    example = page.locator("ul.examples a").first
    above_the_fold(page.locator("form.metabundle-search"))
    shot(page, f"source-{source}")
    example.click()
    expect(page).to_have_url(re.compile(f"q=.+&sources={source}"))
    results = page.locator("li.search-result")
    expect(results.first).to_be_visible()
    assert {results.nth(i).get_attribute("data-source") for i in range(results.count())} == {source}


@dataclass(frozen=True)
class Entity:
    """A main entity: its table, how to pick a row, and the parents it links to."""

    table: str
    pick: str  # SQL giving the key and the title of one row
    parents: tuple[str, ...] = ()  # columns whose values link to their table
    sections: tuple[str, ...] = ()  # related sections with rows
    coded: tuple[str, ...] = ()  # code columns shown after their labels


ENTITIES = (
    Entity(
        "dbgap_study",
        "SELECT study_accession, name FROM dbgap_study WHERE dataset_count > 0 "
        "ORDER BY study_accession LIMIT 1",
        sections=("Datasets",),
    ),
    Entity(
        "dbgap_dataset",
        "SELECT dataset_id, name FROM dbgap_dataset WHERE variable_count > 0 "
        "ORDER BY dataset_id LIMIT 1",
        parents=("study_accession",),
        sections=("Variables",),
    ),
    Entity(
        "dbgap_variable",
        "SELECT variable_id, name FROM dbgap_variable WHERE variable_id IN "
        "(SELECT variable_id FROM dbgap_variable_value_count) ORDER BY variable_id LIMIT 1",
        parents=("study_accession", "dataset_id"),
        sections=("Value counts",),
    ),
    Entity(
        "ukb_field",
        "SELECT field_id, title FROM ukb_field WHERE encoding_id IN "
        "(SELECT encoding_id FROM ukb_encoding_value) ORDER BY num_participants DESC LIMIT 1",
        parents=("main_category", "encoding_id"),
        sections=("Coding values", "Column names in extracts"),
        coded=("value_type", "stability"),
    ),
    Entity(
        "ukb_category",
        "SELECT category_id, title FROM ukb_category WHERE parent_id IS NOT NULL "
        "AND field_count > 0 ORDER BY category_id LIMIT 1",
        parents=("parent_id",),
        sections=("Fields",),
    ),
    Entity(
        "ukb_encoding",
        "SELECT encoding_id, title FROM ukb_encoding WHERE encoding_id IN "
        "(SELECT encoding_id FROM ukb_encoding_value) ORDER BY encoding_id LIMIT 1",
        sections=("Values",),
    ),
    Entity(
        "aou_item",
        "SELECT result_id, title FROM aou_item WHERE kind = 'question' "
        "AND parent_result_id IS NOT NULL ORDER BY result_id LIMIT 1",
        parents=("parent_result_id",),
        sections=("Children",),
    ),
    Entity(
        "omop_concept",
        "SELECT concept_id, concept_name FROM omop_concept WHERE concept_id IN "
        "(SELECT descendant_concept_id FROM omop_concept_ancestor "
        "WHERE min_levels_of_separation > 0) AND concept_id IN "
        "(SELECT concept_id FROM omop_concept_synonym) ORDER BY concept_id LIMIT 1",
        parents=("domain_id", "vocabulary_id"),
        sections=("Synonyms", "Ancestors"),
    ),
    Entity(
        "idc_collection",
        "SELECT collection_id, collection_name FROM idc_collection WHERE collection_id IN "
        "(SELECT collection_id FROM idc_series) ORDER BY subjects DESC LIMIT 1",
        sections=("Series by modality",),
    ),
    Entity(
        "idc_series",
        "SELECT SeriesInstanceUID, SeriesDescription FROM idc_series "
        "WHERE SeriesDescription IS NOT NULL ORDER BY SeriesInstanceUID LIMIT 1",
        parents=("collection_id",),
    ),
)


@pytest.mark.parametrize("entity", ENTITIES, ids=lambda e: e.table)
def test_an_entity_page_per_main_entity(
    page: Page, served_url: str, sqlite_db: sqlite3.Connection, entity: Entity
) -> None:
    found = sqlite_db.execute(entity.pick).fetchone()
    assert found is not None, f"the session build has a {entity.table} row to show"
    key, title = found[0], found[1]
    page.goto(f"{served_url}/metabundle/{entity.table}/{tilde_encode(str(key))}")
    heading = page.get_by_role("heading", level=1)
    expect(heading).to_have_text(title.strip())
    above_the_fold(heading)
    source = page.locator(".entity-head .canonical-link a")
    above_the_fold(source)
    assert source.get_attribute("href").startswith("https://")
    for column in entity.parents:
        parent = page.locator(f"dd.col-{column} a").first
        expect(parent).to_be_visible()
        href = parent.get_attribute("href")
        assert re.search(r"/metabundle/\w+/.+", href), f"{column} links its row: {href}"
    for column in entity.coded:
        expect(page.locator(f"dd.col-{column}_label em.code")).to_be_visible()
        expect(
            page.locator("dl.entity-values dt", has_text=re.compile(f"^{column}$"))
        ).to_have_count(1)
        expect(page.locator(f"dd.col-{column}")).to_have_count(0)
    for title_text in entity.sections:
        section = page.locator("section.related", has=page.get_by_role("heading", name=title_text))
        expect(section.locator("td").first).to_be_visible()
    shot(page, f"entity-{entity.table}")
    for column in entity.parents[:1]:
        page.locator(f"dd.col-{column} a").first.click()
        expect(page.locator(".entity-head h1")).to_be_visible()
        expect(page).not_to_have_url(re.compile(f"/{entity.table}/{re.escape(quote(str(key)))}$"))


def drawn(chart: Locator) -> None:
    """The chart has been drawn: Vega's canvas (or SVG) of marks, with a size."""
    marks = chart.locator(".marks").first
    expect(marks).to_be_visible()
    box = marks.bounding_box()
    assert box is not None and box["width"] > 100 and box["height"] > 50, box


def test_charts_are_drawn(page: Page, served_url: str) -> None:
    page.goto(served_url + "/-/dashboards/idc")
    for chart in ("series-by-modality", "series-by-body-part", "collection-size"):
        drawn(page.locator(f"#chart-{chart}"))
    shot(page, "charts-idc")
    for source in ("dbgap", "ukb", "omop"):
        page.goto(f"{served_url}/-/dashboards/{source}")
        for container in page.locator(".chart-container").all():
            drawn(container)
        shot(page, f"charts-{source}")


def test_an_entity_page_embeds_its_chart(
    page: Page, served_url: str, sqlite_db: sqlite3.Connection
) -> None:
    (variable_id,) = sqlite_db.execute(
        "SELECT variable_id FROM dbgap_variable_value_count ORDER BY variable_id LIMIT 1"
    ).fetchone()
    page.goto(f"{served_url}/metabundle/dbgap_variable/{tilde_encode(variable_id)}")
    frame = page.frame_locator("iframe.entity-chart")
    drawn(frame.locator(".chart-container"))
    page.locator("iframe.entity-chart").scroll_into_view_if_needed()
    shot(page, "entity-dbgap_variable-chart")


def test_a_search_from_q_links_each_hit_to_its_entity_page(page: Page, served_url: str) -> None:
    page.goto(served_url + "/-/search?q=alcohol+intake+frequency&limit=20")
    results = page.locator("li.search-result")
    expect(results.first).to_be_visible()
    expect(page.get_by_label("Search query")).to_have_value("alcohol intake frequency")
    links = page.locator("li.search-result a.entity-link")
    assert links.count() == results.count(), "every hit opens its entity page"
    facets = page.locator(".search-facets a[data-facet=sources]")
    assert facets.count() >= 2
    shot(page, "search-q")
    key = results.first.locator(".result-meta code").inner_text()
    links.first.click()
    expect(page.locator(".entity-head .entity-kind code")).to_have_text(key)
    above_the_fold(page.locator(".entity-head .canonical-link a"))
    page.go_back()
    page.locator('.search-facets a[data-facet=sources][data-value="ukb"]').click()
    expect(page).to_have_url(re.compile(r"q=alcohol\+intake\+frequency&limit=20&sources=ukb"))
    assert {results.nth(i).get_attribute("data-source") for i in range(results.count())} == {"ukb"}
