"""The Imaging Data Commons tools over the session build.

Golden values come from an independent DuckDB connection over the Parquet files of the
installed ``idc-index-data`` package (the very files the build copied), never from the
release or the code under test, so a count the tools get wrong fails here.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterator
from functools import partial
from importlib.metadata import version as package_version
from typing import Any

import duckdb
import idc_index_data
import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer

from metabundle.mcp.server import build_server
from metabundle.search.release import Release
from metabundle.search.services.idc.citations import apa_text, work_from_apa
from metabundle.search.services.idc.urls import LARGE_BYTES, MAX_PAGE, MAX_SERIES
from metabundle.search.tools import all_tools, call_tool
from tests.support.evaluation import (
    calibration_set,
    figures_by_kind,
    load_eval,
    mean_figures,
    ranking_metrics,
)

METHODS = ("keyword", "semantic", "hybrid")
IDC_TOOLS = (
    "get_idc_version",
    "get_stats",
    "list_collections",
    "get_collection",
    "list_analysis_results",
    "search_idc",
    "list_attributes",
    "list_index_attributes",
    "get_attribute_values",
    "build_cohort",
    "get_citations",
    "get_licenses",
    "get_cohort_urls",
    "get_viewer_url",
    "list_clinical_tables",
    "get_clinical_table_schema",
    "get_clinical_values",
)
INJECTION = "x' OR '1'='1"


def ok(release: Release, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    payload = call_tool(release, name, arguments)
    assert "error" not in payload, payload
    return payload


def error_code(release: Release, name: str, arguments: Any) -> str | None:
    return call_tool(release, name, arguments).get("error", {}).get("code")


# -- the independent reference ------------------------------------------------------------


@pytest.fixture(scope="module")
def parquet() -> Iterator[duckdb.DuckDBPyConnection]:
    """The package's Parquet files as views, on a connection of the test's own."""
    con = duckdb.connect()
    files = {
        "series": idc_index_data.IDC_INDEX_PARQUET_FILEPATH,
        "collections": idc_index_data.INDEX_METADATA["collections_index"]["parquet_filepath"],
        "analysis": idc_index_data.INDEX_METADATA["analysis_results_index"]["parquet_filepath"],
        "versions": idc_index_data.INDEX_METADATA["version_metadata_index"]["parquet_filepath"],
    }
    for view, path in files.items():
        con.execute(f"CREATE VIEW {view} AS SELECT * FROM read_parquet('{path}')")
    yield con
    con.close()


def one(con: duckdb.DuckDBPyConnection, sql: str, params: list[Any] | None = None) -> Any:
    return con.execute(sql, params or []).fetchone()


def reference_counts(con: duckdb.DuckDBPyConnection, where: str, params: list) -> dict:
    row = one(
        con,
        f"""
        SELECT count(DISTINCT collection_id),
               count(DISTINCT collection_id || '/' || PatientID),
               count(DISTINCT StudyInstanceUID), count(*), sum(instanceCount),
               sum(round(series_size_MB * 1e6)::BIGINT)
        FROM series WHERE {where}
        """,
        params,
    )
    collections, patients, studies, series, instances, size_bytes = row
    return {
        "collections": collections,
        "patients": patients,
        "studies": studies,
        "series": series,
        "instances": instances or 0,
        "bytes": size_bytes or 0,
    }


# -- version and stats --------------------------------------------------------------------


def test_version_is_the_package_data_release(release: Release, parquet) -> None:
    payload = ok(release, "get_idc_version", {})
    latest, stamp = one(
        parquet, "SELECT idc_version, version_timestamp FROM versions ORDER BY 1 DESC LIMIT 1"
    )
    assert payload["idc_version"] == f"v{latest}"
    assert payload["version_timestamp"] == stamp
    assert payload["package_version"] == package_version("idc-index-data")
    assert payload["idc_version"] == f"v{payload['package_version'].split('.')[0]}"


def test_stats_match_the_parquet(release: Release, parquet) -> None:
    payload = ok(release, "get_stats", {})
    expected = reference_counts(parquet, "TRUE", [])
    for key in ("collections", "patients", "studies", "series", "instances"):
        assert payload[key] == expected[key], key
    assert payload["total_size"]["bytes"] == expected["bytes"]
    assert payload["analysis_results"] == one(parquet, "SELECT count(*) FROM analysis")[0]
    modalities = dict(
        parquet.execute("SELECT Modality, count(*) FROM series GROUP BY 1").fetchall()
    )
    assert {m["value"]: m["series"] for m in payload["modalities"]} == modalities
    assert sum(m["series"] for m in payload["licenses"]) == expected["series"]


# -- golden cohorts -----------------------------------------------------------------------

COHORTS = [
    pytest.param(
        {"Modality": ["CT"], "BodyPartExamined": ["CHEST"]},
        "Modality = 'CT' AND BodyPartExamined = 'CHEST'",
        id="modality+body-part",
    ),
    pytest.param(
        {"collection_id": ["tcga_luad", "upenn_gbm", "lidc_idri"]},
        "collection_id IN ('tcga_luad', 'upenn_gbm', 'lidc_idri')",
        id="collection-list",
    ),
    pytest.param(
        {"Modality": ["MR"], "series_size_MB": {"min": 100, "max": 500}},
        "Modality = 'MR' AND series_size_MB BETWEEN 100 AND 500",
        id="numeric-range",
    ),
    pytest.param(
        {"collection_id": ["nlst"], "analysis_result_id": [None], "instanceCount": {"min": 200}},
        "collection_id = 'nlst' AND analysis_result_id IS NULL AND instanceCount >= 200",
        id="original-data-only",
    ),
    pytest.param(
        {"Modality": ["SM", "CT"], "license_short_name": ["CC BY-NC 4.0"]},
        "Modality IN ('SM', 'CT') AND license_short_name = 'CC BY-NC 4.0'",
        id="two-modalities+license",
    ),
]


@pytest.mark.parametrize(("filters", "where"), COHORTS)
def test_cohort_counts_match_an_independent_query(
    release: Release, parquet, filters: dict, where: str
) -> None:
    payload = ok(release, "build_cohort", {"filters": filters, "limit": 5})
    expected = reference_counts(parquet, where, [])
    assert expected["series"] > 0
    counts = payload["counts"]
    for key in ("collections", "patients", "studies", "series", "instances"):
        assert counts[key] == expected[key], key
    assert payload["total_size"]["bytes"] == expected["bytes"]
    by_modality = dict(
        parquet.execute(
            f"SELECT Modality, count(*) FROM series WHERE {where} GROUP BY 1"
        ).fetchall()
    )
    assert {m["value"]: m["series"] for m in payload["by_modality"]} == by_modality
    assert payload["filters_applied"] == filters
    assert payload["page"]["total"] == expected["series"]


def test_cohort_rows_page_in_a_stable_order(release: Release, parquet) -> None:
    filters = {"collection_id": ["upenn_gbm"], "Modality": ["MR"]}
    order = "collection_id, PatientID, StudyInstanceUID, SeriesInstanceUID"
    expected = [
        r[0]
        for r in parquet.execute(
            f"SELECT SeriesInstanceUID FROM series WHERE collection_id = 'upenn_gbm' "
            f"AND Modality = 'MR' ORDER BY {order} LIMIT 7"
        ).fetchall()
    ]
    first = ok(release, "build_cohort", {"filters": filters, "limit": 4})
    second = ok(release, "build_cohort", {"filters": filters, "limit": 4, "offset": 4})
    got = [r["SeriesInstanceUID"] for r in first["series"] + second["series"]]
    assert got[:7] == expected
    assert first["page"]["next_offset"] == 4
    row = first["series"][0]
    assert row["collection_id"] == "upenn_gbm" and row["Modality"] == "MR"


def test_counts_only_and_the_hard_page_cap(release: Release) -> None:
    counts_only = ok(release, "build_cohort", {"filters": {"Modality": ["CT"]}, "limit": 0})
    assert counts_only["series"] == [] and counts_only["counts"]["series"] > 0
    huge = ok(release, "build_cohort", {"filters": {"Modality": ["CT"]}, "limit": 10**9})
    assert huge["page"]["limit"] == 100 and len(huge["series"]) == 100
    default = ok(release, "build_cohort", {"filters": {"Modality": ["CT"]}})
    assert len(default["series"]) == 10


# -- validation and safety ----------------------------------------------------------------

BAD_COHORTS = [
    pytest.param({"filters": {}}, id="empty-filters"),
    pytest.param({}, id="no-filters"),
    pytest.param({"filters": "CT"}, id="filters-not-an-object"),
    pytest.param({"filters": {"Modality": [True]}}, id="boolean-value"),
    pytest.param({"filters": {"Modality": [["CT"]]}}, id="nested-list"),
    pytest.param({"filters": {"Modality": []}}, id="empty-value-list"),
    pytest.param({"filters": {"modality": ["CT"]}}, id="attribute-case"),
    pytest.param({"filters": {"Organ": ["lung"]}}, id="unknown-attribute"),
    pytest.param({"filters": {"cancer_types": ["Lung Cancer"]}}, id="collection-level"),
    pytest.param({"filters": {'Modality" OR 1=1 --': ["CT"]}}, id="sql-in-attribute"),
    pytest.param({"filters": {"Modality": {"min": 1}}}, id="range-on-text"),
    pytest.param({"filters": {"instanceCount": {"min": 9, "max": 1}}}, id="inverted-range"),
    pytest.param({"filters": {"instanceCount": {"min": "many"}}}, id="text-bound"),
    pytest.param({"filters": {"instanceCount": {"above": 3}}}, id="unknown-range-key"),
    pytest.param({"filters": {"instanceCount": ["lots"]}}, id="text-for-number"),
    pytest.param({"filters": {"Modality": ["CT"]}, "limit": "many"}, id="limit-type"),
    pytest.param({"filters": {"Modality": ["CT"]}, "offset": -1}, id="negative-offset"),
    pytest.param({"filters": {"Modality": ["CT"]}, "bogus": 1}, id="unknown-parameter"),
    pytest.param({"filters": {"Modality": ["x" * 1001]}}, id="overlong-value"),
    pytest.param({"filters": {f"a{i}": ["x"] for i in range(21)}}, id="too-many-attributes"),
]


@pytest.mark.parametrize("arguments", BAD_COHORTS)
def test_bad_cohort_requests_are_invalid(release: Release, arguments: dict) -> None:
    payload = call_tool(release, "build_cohort", arguments)
    assert payload["error"]["code"] == "invalid_request"
    assert "\n" not in payload["error"]["message"]


def test_attribute_errors_route_the_caller(release: Release) -> None:
    by_case = call_tool(release, "build_cohort", {"filters": {"bodypartexamined": ["CHEST"]}})
    assert by_case["error"]["details"]["suggestions"] == ["BodyPartExamined"]
    collection_level = call_tool(release, "get_attribute_values", {"attribute": "tumor_locations"})
    assert "list_collections" in collection_level["error"]["message"]
    unknown = call_tool(release, "get_attribute_values", {"attribute": "SegmentedAnatomy"})
    assert "list_tables" in unknown["error"]["message"]


def test_sql_fragments_in_values_are_plain_values(release: Release, parquet) -> None:
    payload = ok(release, "build_cohort", {"filters": {"Modality": [INJECTION]}})
    assert payload["counts"]["series"] == 0
    assert payload["filters_applied"] == {"Modality": [INJECTION]}
    assert "matches no series" in payload["warnings"][0]
    mixed = ok(release, "build_cohort", {"filters": {"Modality": ["SM", INJECTION]}, "limit": 0})
    assert (
        mixed["counts"]["series"]
        == one(parquet, "SELECT count(*) FROM series WHERE Modality = 'SM'")[0]
    )
    values = ok(release, "get_attribute_values", {"attribute": "Modality", "contains": INJECTION})
    assert values["values"] == [] and values["total_distinct"] == 0
    collections = ok(release, "list_collections", {"cancer_type": INJECTION})
    assert collections["page"]["total"] == 0


def test_a_value_in_the_wrong_case_warns_with_the_stored_spelling(release: Release) -> None:
    payload = ok(release, "build_cohort", {"filters": {"BodyPartExamined": ["chest"]}})
    assert payload["counts"]["series"] == 0
    assert len(payload["warnings"]) == 1
    assert "'CHEST'" in payload["warnings"][0] and "case" in payload["warnings"][0]
    right = ok(release, "build_cohort", {"filters": {"BodyPartExamined": ["CHEST"]}, "limit": 0})
    assert right["warnings"] == [] and right["counts"]["series"] > 0


def test_body_part_and_collection_filters_carry_their_caveats(release: Release) -> None:
    payload = ok(release, "build_cohort", {"filters": {"BodyPartExamined": ["LUNG"]}, "limit": 0})
    assert any("seg_index" in note for note in payload["notes"])
    nlst = ok(release, "build_cohort", {"filters": {"collection_id": ["nlst"]}, "limit": 0})
    assert any("analysis_result_id" in note for note in nlst["notes"])


# -- collections and analysis results -----------------------------------------------------


def collection_elements(parquet, column: str) -> dict[str, list[str]]:
    rows = parquet.execute(f"SELECT collection_id, {column} FROM collections").fetchall()
    return {cid: [p.strip() for p in (text or "").split(",")] for cid, text in rows}


def test_list_collections_matches_list_elements_case_insensitively(
    release: Release, parquet
) -> None:
    cancer = collection_elements(parquet, "cancer_types")
    expected = sorted(
        cid for cid, parts in cancer.items() if any("lung" in p.lower() for p in parts)
    )
    payload = ok(release, "list_collections", {"cancer_type": "LUNG", "limit": 100})
    assert payload["page"]["total"] == len(expected)
    assert [c["collection_id"] for c in payload["collections"]] == expected
    with_sm = {
        r[0]
        for r in parquet.execute(
            "SELECT DISTINCT collection_id FROM series WHERE Modality = 'SM'"
        ).fetchall()
    }
    locations = collection_elements(parquet, "tumor_locations")
    both = sorted(cid for cid in with_sm if any("breast" in p.lower() for p in locations[cid]))
    combined = ok(
        release, "list_collections", {"tumor_location": "Breast", "modality": "sm", "limit": 100}
    )
    assert [c["collection_id"] for c in combined["collections"]] == both


def test_list_collections_pages_and_clamps(release: Release, parquet) -> None:
    total = one(parquet, "SELECT count(*) FROM collections")[0]
    first = ok(release, "list_collections", {"limit": 5})
    assert first["page"] == {
        "total": total,
        "limit": 5,
        "offset": 0,
        "returned": 5,
        "next_offset": 5,
    }
    clamped = ok(release, "list_collections", {"limit": 10**6})
    assert clamped["page"]["limit"] == 100 and len(clamped["collections"]) == 100
    past = ok(release, "list_collections", {"offset": 10**6})
    assert past["collections"] == [] and past["page"]["next_offset"] is None
    miss = ok(release, "list_collections", {"cancer_type": "glioblastom multiform"})
    assert miss["page"]["total"] == 0 and "Glioblastoma Multiforme" in miss["hint"]


def test_get_collection_details_counts_and_citations(release: Release, parquet) -> None:
    payload = ok(release, "get_collection", {"collection_id": "TCGA-LUAD"})
    assert payload["collection_id"] == "tcga_luad"
    expected = reference_counts(parquet, "collection_id = 'tcga_luad'", [])
    for key in ("patients", "studies", "series", "instances"):
        assert payload["counts"][key] == expected[key]
    assert payload["size"]["bytes"] == expected["bytes"]
    sources = json.loads(
        one(parquet, "SELECT to_json(sources) FROM collections WHERE collection_id = 'tcga_luad'")[
            0
        ]
    )
    assert sorted(payload["dois"]) == sorted(s["source_doi"].lower() for s in sources)
    raw = {s["source_doi"].lower(): s["citation"] for s in sources}
    for source in payload["sources"]:
        text = source["citation"]
        assert "<i>" not in text and "&amp;" not in text and "\n" not in text
        assert text == " ".join(html.unescape(re.sub("<[^>]+>", "", raw[source["doi"]])).split())
    radiology = next(s for s in payload["sources"] if s["doi"] == "10.7937/k9/tcia.2016.jgnihep5")
    assert (
        "& Lemmerman, J. (2016). The Cancer Genome Atlas Lung Adenocarcinoma"
        in radiology["citation"]
    )
    assert payload["canonical_url"].endswith("collection_id=tcga_luad")
    analysis = {a["analysis_result_id"] for a in payload["analysis_results"]}
    assert analysis == {
        r[0]
        for r in parquet.execute(
            "SELECT DISTINCT analysis_result_id FROM series "
            "WHERE collection_id = 'tcga_luad' AND analysis_result_id IS NOT NULL"
        ).fetchall()
    }


def test_unknown_collection_is_not_found_with_suggestions(release: Release) -> None:
    payload = call_tool(release, "get_collection", {"collection_id": "tcga_luadx"})
    assert payload["error"]["code"] == "not_found"
    assert payload["error"]["details"]["suggestions"][0] == "tcga_luad"
    assert error_code(release, "get_collection", {"collection_id": ""}) == "invalid_request"


def test_analysis_results_with_series_counts(release: Release, parquet) -> None:
    payload = ok(release, "list_analysis_results", {"limit": 100})
    assert payload["page"]["total"] == one(parquet, "SELECT count(*) FROM analysis")[0]
    counts = dict(
        parquet.execute(
            "SELECT analysis_result_id, count(*) FROM series "
            "WHERE analysis_result_id IS NOT NULL GROUP BY 1"
        ).fetchall()
    )
    assert {a["analysis_result_id"]: a["series"] for a in payload["analysis_results"]} == {
        a["analysis_result_id"]: counts.get(a["analysis_result_id"], 0)
        for a in payload["analysis_results"]
    }
    nlst = ok(release, "list_analysis_results", {"collection_id": "nlst"})
    assert nlst["analysis_results"] and all(
        "nlst" in a["collections"] for a in nlst["analysis_results"]
    )


# -- attributes ---------------------------------------------------------------------------


def test_attributes_are_the_index_columns_with_routing_notes(release: Release) -> None:
    payload = ok(release, "list_attributes", {})
    schema = idc_index_data.INDEX_METADATA["idc_index"]["schema"]["columns"]
    assert [a["name"] for a in payload["attributes"]] == [c["name"] for c in schema]
    kinds = {a["name"]: a["filter"] for a in payload["attributes"]}
    assert "range" in kinds["series_size_MB"] and "range" not in kinds["Modality"]
    notes = " ".join(payload["notes"])
    assert "list_tables" in notes and "seg_index" in notes


def test_attribute_values_with_counts_and_total(release: Release, parquet) -> None:
    payload = ok(release, "get_attribute_values", {"attribute": "BodyPartExamined", "limit": 5})
    expected = parquet.execute(
        "SELECT BodyPartExamined, count(*) AS n FROM series WHERE BodyPartExamined IS NOT NULL "
        "GROUP BY 1 ORDER BY n DESC, 1 LIMIT 5"
    ).fetchall()
    assert [(v["value"], v["series"]) for v in payload["values"]] == expected
    distinct, nulls = one(
        parquet,
        "SELECT count(DISTINCT BodyPartExamined), count(*) FILTER (WHERE BodyPartExamined IS NULL) "
        "FROM series",
    )
    assert payload["total_distinct"] == distinct and payload["null_series"] == nulls
    assert payload["truncated"] is True
    assert any("seg_index" in note for note in payload["notes"])
    within = ok(
        release,
        "get_attribute_values",
        {"attribute": "Modality", "filters": {"collection_id": ["tcga_luad"]}},
    )
    assert {v["value"]: v["series"] for v in within["values"]} == dict(
        parquet.execute(
            "SELECT Modality, count(*) FROM series WHERE collection_id = 'tcga_luad' GROUP BY 1"
        ).fetchall()
    )
    clamped = ok(
        release, "get_attribute_values", {"attribute": "SeriesInstanceUID", "limit": 10**7}
    )
    assert clamped["returned"] == 500 and clamped["truncated"] is True


def test_numeric_attribute_values_report_their_range(release: Release, parquet) -> None:
    payload = ok(release, "get_attribute_values", {"attribute": "instanceCount", "limit": 3})
    low, high = one(parquet, "SELECT min(instanceCount), max(instanceCount) FROM series")
    assert payload["range"] == {"min": low, "max": high}


# -- licenses and citations ---------------------------------------------------------------


def test_the_build_stores_each_data_source_once_with_its_citation_as_plain_text(
    release: Release, parquet
) -> None:
    rows = release.query_dicts("SELECT * FROM idc_data_source")
    listed = {
        doi.lower()
        for (doi,) in parquet.execute(
            "SELECT DISTINCT s.source_doi FROM collections, unnest(sources) AS u(s) "
            "WHERE s.source_doi IS NOT NULL UNION SELECT source_DOI FROM analysis "
            "WHERE source_DOI IS NOT NULL"
        ).fetchall()
    }
    assert sorted(row["doi"] for row in rows) == sorted(listed)
    with_markup = [row for row in rows if row["citation"] and "<i>" in row["citation"]]
    assert with_markup
    for row in rows:
        if row["citation"] is None:
            assert row["citation_text"] is None
            continue
        text = row["citation_text"]
        assert "<" not in text and "&amp;" not in text and "\n" not in text
        assert text == " ".join(html.unescape(re.sub("<[^>]+>", "", row["citation"])).split())
        if "<i>" in row["citation"]:
            assert row["citation_title"] and row["citation_title"] in text
    # the tools show the stored text
    doi = with_markup[0]["doi"]
    (collection,) = next(row["collections"] for row in with_markup if row["doi"] == doi)[:1]
    shown = ok(release, "get_collection", {"collection_id": collection})["sources"]
    assert next(s for s in shown if s["doi"] == doi)["citation"] == with_markup[0]["citation_text"]


def test_licenses_sum_to_the_series_count(release: Release, parquet) -> None:
    filters = {"Modality": ["CT"], "BodyPartExamined": ["CHEST"]}
    payload = ok(release, "get_licenses", {"filters": filters})
    cohort = ok(release, "build_cohort", {"filters": filters, "limit": 0})
    assert payload["series"] == cohort["counts"]["series"]
    assert sum(item["series"] for item in payload["licenses"]) == payload["series"]
    expected = dict(
        parquet.execute(
            "SELECT license_short_name, count(*) FROM series "
            "WHERE Modality = 'CT' AND BodyPartExamined = 'CHEST' GROUP BY 1"
        ).fetchall()
    )
    assert {item["license"]: item["series"] for item in payload["licenses"]} == expected
    everything = ok(release, "get_licenses", {})
    assert everything["series"] == one(parquet, "SELECT count(*) FROM series")[0]
    by_name = {item["license"]: item for item in everything["licenses"]}
    assert by_name["CC BY-NC 4.0"]["non_commercial_only"] is True
    assert by_name["CC BY 4.0"]["non_commercial_only"] is False
    assert by_name["CC BY 4.0"]["url"] == "https://creativecommons.org/licenses/by/4.0/"


def test_citations_for_a_collection_cover_every_source_doi(release: Release, parquet) -> None:
    payload = ok(release, "get_citations", {"collection_id": "tcga_luad"})
    used = dict(
        parquet.execute(
            "SELECT lower(source_DOI), count(*) FROM series WHERE collection_id = 'tcga_luad' "
            "GROUP BY 1"
        ).fetchall()
    )
    assert {c["doi"]: c["series"] for c in payload["citations"]} == used
    assert payload["total"] == len(used) and payload["truncated"] is False
    for citation in payload["citations"]:
        assert citation["citation"] and "<i>" not in citation["citation"]
        assert citation["doi_url"] == f"https://doi.org/{citation['doi']}"
    by_filters = ok(
        release, "get_citations", {"filters": {"collection_id": ["tcga_luad"]}, "limit": 1}
    )
    assert by_filters["returned"] == 1 and by_filters["truncated"] is True
    assert by_filters["citations"][0] == payload["citations"][0]


def test_a_doi_without_a_shipped_citation_is_cited_by_its_address() -> None:
    """A series' DOI that no collection or analysis result describes still gets APA
    text (before, building it from the empty author list failed)."""
    work = work_from_apa("10.1234/unlisted", None, None)
    assert apa_text(work) == "https://doi.org/10.1234/unlisted"
    titled = work_from_apa("10.1234/unlisted", None, "A data set")
    assert apa_text(titled) == "A data set. https://doi.org/10.1234/unlisted"


def test_citation_requests_need_exactly_one_selection(release: Release) -> None:
    assert error_code(release, "get_citations", {}) == "invalid_request"
    both = {"collection_id": "nlst", "filters": {"Modality": ["CT"]}}
    assert error_code(release, "get_citations", both) == "invalid_request"
    assert error_code(release, "get_citations", {"collection_id": "nope"}) == "not_found"


# -- download links -----------------------------------------------------------------------


def small_selection(parquet) -> tuple[str, str, int]:
    """A (collection, modality) of 20..200 series, chosen from the data."""
    return one(
        parquet,
        "SELECT collection_id, Modality, count(*) AS n FROM series GROUP BY 1, 2 "
        "HAVING n BETWEEN 20 AND 200 ORDER BY 1, 2 LIMIT 1",
    )


def test_cohort_urls_are_series_prefixes_with_sizes(release: Release, parquet) -> None:
    collection, modality, count = small_selection(parquet)
    filters = {"collection_id": [collection], "Modality": [modality]}
    payload = ok(release, "get_cohort_urls", {"filters": filters, "limit": MAX_PAGE})
    rows = parquet.execute(
        "SELECT SeriesInstanceUID, aws_bucket, crdc_series_uuid, series_aws_url, series_size_MB "
        "FROM series WHERE collection_id = ? AND Modality = ? ORDER BY SeriesInstanceUID",
        [collection, modality],
    ).fetchall()
    assert len(payload["series"]) == count == len(rows) == payload["page"]["total"]
    for entry, (uid, bucket, uuid, aws_url, size_mb) in zip(payload["series"], rows, strict=True):
        assert entry["SeriesInstanceUID"] == uid
        assert entry["aws"] == f"s3://{bucket}/{uuid}/" and entry["aws"] + "*" == aws_url
        assert entry["size_bytes"] == round(size_mb * 1_000_000)
    assert payload["total_size"]["bytes"] == sum(round(r[4] * 1_000_000) for r in rows)
    aws = payload["download"]["aws"]
    assert aws["s5cmd_command"].startswith("s5cmd --no-sign-request --endpoint-url https://s3")
    assert aws["idc_download_command"].startswith("idc download idc_manifest_aws.s5cmd")
    first = ok(release, "get_cohort_urls", {"filters": filters, "limit": 2})
    assert first["series"] == payload["series"][:2] and first["page"]["next_offset"] == 2
    assert first["counts"] == payload["counts"]


def test_gcs_links_use_the_google_bucket_names(release: Release, parquet) -> None:
    uid, uuid = one(
        parquet,
        "SELECT SeriesInstanceUID, crdc_series_uuid FROM series "
        "WHERE aws_bucket = 'idc-open-data-two' ORDER BY 1 LIMIT 1",
    )
    payload = ok(
        release, "get_cohort_urls", {"filters": {"SeriesInstanceUID": [uid]}, "provider": "gcs"}
    )
    assert payload["series"][0]["gcs"] == f"gs://idc-open-idc1/{uuid}/"
    assert "aws" not in payload["download"] and "aws" not in payload["series"][0]
    assert payload["download"]["selection_command"].endswith(f"--series-instance-uid {uid}")


def test_large_selections_warn_and_oversized_ones_are_refused(release: Release, parquet) -> None:
    collection, count, _ = one(
        parquet,
        "SELECT collection_id, count(*) AS n, sum(series_size_MB) AS mb FROM series "
        f"WHERE Modality = 'SM' GROUP BY 1 HAVING n <= {MAX_PAGE} AND mb * 1e6 > {LARGE_BYTES} "
        "ORDER BY n LIMIT 1",
    )
    big = ok(
        release,
        "get_cohort_urls",
        {"filters": {"collection_id": [collection], "Modality": ["SM"]}, "limit": MAX_PAGE},
    )
    assert len(big["series"]) == count
    assert any("confirm" in w for w in big["warnings"])
    refused = call_tool(release, "get_cohort_urls", {"filters": {"collection_id": ["nlst"]}})
    assert refused["error"]["code"] == "result_too_large"
    details = refused["error"]["details"]
    nlst = one(parquet, "SELECT count(*) FROM series WHERE collection_id = 'nlst'")[0]
    assert details["counts"]["series"] == nlst > MAX_SERIES == details["cap"]
    assert details["download"]["selection_command"].endswith("--collection-id nlst")
    assert error_code(release, "get_cohort_urls", {"filters": {}}) == "invalid_request"


# -- viewer -------------------------------------------------------------------------------


def test_viewer_urls_follow_idc_index(release: Release, parquet) -> None:
    study, series = one(
        parquet,
        "SELECT StudyInstanceUID, SeriesInstanceUID FROM series WHERE Modality = 'CT' "
        "ORDER BY 2 LIMIT 1",
    )
    ct = ok(release, "get_viewer_url", {"study_instance_uid": study, "series_instance_uid": series})
    assert ct["viewer"] == "ohif_v3"
    assert ct["url"] == (
        "https://viewer.imaging.datacommons.cancer.gov/v3/viewer/"
        f"?StudyInstanceUIDs={study}&SeriesInstanceUIDs={series}"
    )
    sm_study, sm_series = one(
        parquet,
        "SELECT StudyInstanceUID, SeriesInstanceUID FROM series WHERE Modality = 'SM' "
        "ORDER BY 2 LIMIT 1",
    )
    sm = ok(
        release,
        "get_viewer_url",
        {"study_instance_uid": sm_study, "series_instance_uid": sm_series},
    )
    assert sm["viewer"] == "slim"
    assert sm["url"] == (
        f"https://viewer.imaging.datacommons.cancer.gov/slim/studies/{sm_study}/series/{sm_series}"
    )
    whole_study = ok(release, "get_viewer_url", {"study_instance_uid": sm_study})
    assert whole_study["url"].endswith(f"/slim/studies/{sm_study}")
    forced = ok(release, "get_viewer_url", {"study_instance_uid": study, "viewer": "slim"})
    assert forced["url"].endswith(f"/slim/studies/{study}")


def test_viewer_refuses_unknown_and_mismatched_uids(release: Release, parquet) -> None:
    study, series = one(
        parquet, "SELECT StudyInstanceUID, SeriesInstanceUID FROM series ORDER BY 2 LIMIT 1"
    )
    other = one(
        parquet, "SELECT SeriesInstanceUID FROM series WHERE StudyInstanceUID != ? LIMIT 1", [study]
    )[0]
    mismatch = {"study_instance_uid": study, "series_instance_uid": other}
    assert error_code(release, "get_viewer_url", mismatch) == "invalid_request"
    assert error_code(release, "get_viewer_url", {"study_instance_uid": "1.2.3"}) == "not_found"
    swapped = call_tool(release, "get_viewer_url", {"study_instance_uid": series})
    assert swapped["error"]["code"] == "not_found"
    assert swapped["error"]["details"]["suggestions"] == [study]
    assert error_code(release, "get_viewer_url", {}) == "invalid_request"


# -- search -------------------------------------------------------------------------------


def test_search_ranks_exact_ids_first_and_filters_kinds(release: Release) -> None:
    payload = ok(release, "search_idc", {"query": "tcga_luad", "method": "keyword"})
    assert payload["results"][0]["id"] == "tcga_luad"
    assert payload["results"][0]["scores"]["exact_match"] is True
    results = ok(release, "search_idc", {"query": "segmentation", "kind": "analysis_result"})
    assert results["results"] and {r["kind"] for r in results["results"]} == {"analysis_result"}
    assert all(r["source"] == "idc" for r in results["results"])
    clamped = ok(release, "search_idc", {"query": "lung", "limit": 1000, "method": "keyword"})
    assert len(clamped["results"]) == 50


def test_hybrid_degrades_and_semantic_fails_without_embeddings(
    release: Release, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("METABUNDLE_EMBEDDINGS_ENABLED", "0")
    payload = ok(release, "search_idc", {"query": "glioblastoma MRI"})
    assert payload["retrieval"]["degraded"] is True
    assert payload["retrieval"]["effective_method"] == "keyword"
    semantic = {"query": "glioblastoma", "method": "semantic"}
    assert error_code(release, "search_idc", semantic) == "embeddings_unavailable"


def test_every_idc_tool_is_registered_with_a_prescriptive_description() -> None:
    specs = {spec.name: spec for spec in all_tools() if spec.group == "idc"}
    assert set(specs) == set(IDC_TOOLS)
    for spec in specs.values():
        assert "call" in spec.description.lower(), spec.name


# -- the MCP adapter returns the core payload unchanged ---------------------------------

MCP_CALLS = [
    ("get_idc_version", {}),
    ("build_cohort", {"filters": {"collection_id": ["lidc_idri"], "analysis_result_id": [None]}}),
    ("get_attribute_values", {"attribute": "Modality", "limit": 3}),
    ("get_citations", {"collection_id": "nlst", "limit": 2}),
    ("build_cohort", {"filters": {}}),
    ("get_cohort_urls", {"filters": {"collection_id": ["nlst"]}}),
]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def mcp_server(release: Release) -> MCPServer:
    return build_server(release)


@pytest.mark.anyio
@pytest.mark.parametrize(("name", "arguments"), MCP_CALLS)
async def test_mcp_returns_the_core_payload(
    mcp_server: MCPServer, release: Release, name: str, arguments: dict[str, Any]
) -> None:
    async with Client(mcp_server) as client:
        result = await client.call_tool(name, arguments)
    core = call_tool(release, name, arguments)
    assert result.is_error == ("error" in core)
    assert json.loads(result.content[0].text) == core


# -- evaluation ---------------------------------------------------------------------------


def test_eval_set_is_well_formed_and_names_real_entities(release: Release, parquet) -> None:
    queries = load_eval("idc")
    assert len(queries) >= 30 and sum(q["kind"] == "paraphrase" for q in queries) >= 20
    known = {
        r[0]
        for r in parquet.execute(
            "SELECT collection_id FROM collections UNION ALL "
            "SELECT analysis_result_id FROM analysis"
        ).fetchall()
    }
    titles = {
        r[0].lower()
        for r in parquet.execute(
            "SELECT collection_name FROM collections UNION ALL "
            "SELECT analysis_result_title FROM analysis"
        ).fetchall()
    }
    for q in queries:
        assert q["kind"] in ("paraphrase", "keyword", "identifier")
        assert set(q["relevant"]) <= known, q["query"]
        assert 3 in q["relevant"].values()
        if q["kind"] == "paraphrase":
            assert q["query"].lower() not in titles


def measure(release: Release, queries: list[dict[str, Any]], method: str) -> dict[str, float]:
    """recall@5/@10, MRR of the first relevant result and nDCG@10 (graded)."""
    scores = []
    for q in queries:
        results = ok(release, "search_idc", {"query": q["query"], "method": method})["results"]
        scores.append(ranking_metrics([item["id"] for item in results], q["relevant"]))
    return mean_figures(scores)


@pytest.fixture(scope="module")
def eval_figures(release: Release) -> dict[str, dict[str, dict[str, float]]]:
    title = "Imaging Data Commons eval (tests/eval/idc.jsonl)"
    queries = calibration_set("idc")
    return figures_by_kind(queries, METHODS, partial(measure, release), title)


def test_hybrid_beats_keyword_on_paraphrases(eval_figures: dict) -> None:
    # Measured with the session build (wordllama), paraphrase subset (29 queries):
    # nDCG@10 keyword 0.691, semantic 0.579, hybrid 0.704; recall@10 0.743 / 0.659 /
    # 0.774; MRR 0.728 / 0.639 / 0.747.
    para = eval_figures["paraphrase"]
    assert para["hybrid"]["ndcg@10"] >= 0.65
    assert para["hybrid"]["recall@10"] >= 0.70
    assert para["semantic"]["recall@10"] >= 0.55
    assert para["hybrid"]["ndcg@10"] > para["keyword"]["ndcg@10"]
    assert para["hybrid"]["recall@10"] > para["keyword"]["recall@10"]
    assert para["hybrid"]["mrr"] >= para["keyword"]["mrr"]


def test_keyword_and_identifier_queries(eval_figures: dict) -> None:
    # Measured: keyword-style queries MRR 1.0 (keyword, hybrid); identifiers rank their
    # target first under keyword and hybrid (MRR 1.0), semantic MRR 0.479.
    for method in ("keyword", "hybrid"):
        assert eval_figures["keyword"][method]["recall@10"] >= 0.9
        assert eval_figures["identifier"][method]["mrr"] == 1.0


def test_a_search_hit_lists_a_few_cancer_types_and_counts_them_all(release: Release) -> None:
    payload = call_tool(release, "search_idc", {"query": "eay131", "limit": 3})
    first = payload["results"][0]
    assert first["id"] == "eay131"
    (stored,) = release.query(
        "SELECT cancer_types FROM idc_collection WHERE collection_id = 'eay131'"
    )[0]
    every = [part.strip() for part in stored.split(",") if part.strip()]
    assert len(every) > 8
    assert first["cancer_types"] == every[:8] and first["cancer_types_total"] == len(every)
    others = call_tool(release, "search_idc", {"query": "lung cancer ct", "limit": 10})
    short = next(i for i in others["results"] if 0 < len(i.get("cancer_types") or []) < 8)
    assert "cancer_types_total" not in short
