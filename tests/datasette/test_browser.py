"""A person in a real browser: Debian's Chromium, headless, driven by Playwright over
``metabundle datasette`` on loopback. Screenshots go to ``test-artifacts/``."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

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
    context = browser.new_context(viewport={"width": 1280, "height": 900})
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
