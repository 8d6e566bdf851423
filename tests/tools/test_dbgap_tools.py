"""The dbGaP tools (resolve_dbgap_study, get_dbgap_study, search_dbgap_catalog) over
the session build, whose dbGaP studies are the sample profile's.

Expected values come from the release's own ``dbgap_*`` tables and, for statistics,
from the mirror's var_report XML itself, so a test fails when a tool's behaviour
breaks, not when the mirror is refreshed. The evaluation set is
``tests/eval/dbgap.jsonl``.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from metabundle.search.release import Release
from metabundle.search.tools import call_tool
from tests.support.build import Build
from tests.support.cli import run_cli
from tests.support.evaluation import (
    calibration_set,
    figures_by_kind,
    load_eval,
    mean_figures,
    ranking_metrics,
)

METHODS = ("keyword", "semantic", "hybrid")
JHS_CURRENT, JHS_OLDER = "phs000286.v7.p2", "phs000286.v6.p2"
GTEX_CURRENT, GTEX_OLDER = "phs000424.v11.p2", "phs000424.v8.p2"
LOAD = "phs000160.v1.p1"
HARMONIZATION = "phs001985.v1.p1"


def call(release: Release, name: str, **arguments: Any) -> dict[str, Any]:
    return call_tool(release, name, arguments)


def ok(release: Release, name: str, **arguments: Any) -> dict[str, Any]:
    payload = call(release, name, **arguments)
    assert "error" not in payload, payload
    return payload


def error_code(payload: dict[str, Any]) -> str | None:
    return payload.get("error", {}).get("code")


def resolve(release: Release, query: str) -> dict[str, Any]:
    return ok(release, "resolve_dbgap_study", query=query)


def search(release: Release, study_id: str, query: str, **arguments: Any) -> dict[str, Any]:
    return ok(release, "search_dbgap_catalog", study_id=study_id, query=query, **arguments)


def studies(release: Release) -> list[dict[str, Any]]:
    return release.query_dicts("SELECT * FROM dbgap_study ORDER BY study_accession")


def versions_of(release: Release, base: str) -> list[dict[str, Any]]:
    return [s for s in studies(release) if s["study_base"] == base]


# -- resolve_dbgap_study ------------------------------------------------------------------


def test_the_session_build_holds_the_sample_studies(release: Release) -> None:
    bases = {s["study_base"] for s in studies(release)}
    assert {"phs000001", "phs000160", "phs000286", "phs000424", "phs001252"} <= bases
    assert "phs000007" not in bases  # Framingham is left out of the sample profile


def test_a_full_study_name_resolves_with_a_non_authoritative_block(release: Release) -> None:
    name = versions_of(release, "phs000286")[0]["name"]
    payload = resolve(release, name)
    assert payload["recommended"]["study_id"].startswith("phs000286.")
    assert payload["recommended"]["match"]["reason"] == "name"
    block = payload["resolution"]
    assert block["authoritative"] is False
    assert block["query_form"] == "name"
    assert block["matched_by"] == "name"
    assert "confirm" in block["confirm"].lower()
    assert block["alternatives"] == len(payload["candidates"]) - 1 >= 1  # the other version
    # a partial name (words of the name) resolves too
    assert resolve(release, "jackson heart")["recommended"]["study_id"].startswith("phs000286.")


def test_every_acronym_in_the_study_names_resolves_its_study(release: Release) -> None:
    acronyms = {a: s["study_base"] for s in studies(release) for a in s["acronyms"]}
    assert {"JHS", "AREDS", "GTEx", "ECLIPSE"} <= set(acronyms)
    for acronym, base in acronyms.items():
        for query in (acronym, acronym.lower()):
            payload = resolve(release, query)
            assert payload["recommended"]["study_id"].startswith(base + "."), query
            assert payload["recommended"]["match"]["reason"] == "acronym"


def test_a_base_accession_lists_its_versions_and_recommends_the_preferred_one(
    release: Release,
) -> None:
    for base in ("phs000286", "phs000001", "phs000424"):
        rows = versions_of(release, base)
        payload = resolve(release, base)
        ids = [c["study_id"] for c in payload["candidates"]]
        assert sorted(ids) == sorted(r["study_accession"] for r in rows)
        assert all(c["match"]["reason"] == "base_accession" for c in payload["candidates"])
        current = next(r for r in rows if r["is_current_version"])
        richest = max(r["variable_count"] for r in rows)
        recommended = payload["recommended"]
        # the version whose variables the release holds most of; the current one on ties
        assert recommended["variable_count"] == richest
        if current["variable_count"] == richest:
            assert recommended["study_id"] == current["study_accession"]
        else:
            assert any(current["study_accession"] in w for w in payload["resolution"]["warnings"])
    # JHS: the current version has 7 variables, the older one thousands: the older one
    payload = resolve(release, "phs000286")
    assert payload["recommended"]["study_id"] == JHS_OLDER
    assert any(JHS_CURRENT in w for w in payload["resolution"]["warnings"])


def test_a_versioned_accession_resolves_exactly_and_keeps_the_alternatives(
    release: Release,
) -> None:
    payload = resolve(release, JHS_OLDER)
    assert payload["recommended"]["study_id"] == JHS_OLDER
    assert payload["recommended"]["match"]["reason"] == "accession"
    assert [c["study_id"] for c in payload["candidates"]] == [JHS_OLDER, JHS_CURRENT]
    assert payload["resolution"]["alternatives"] == 1
    assert resolve(release, JHS_OLDER.upper())["recommended"]["study_id"] == JHS_OLDER
    named = resolve(release, f"Jackson Heart Study ({JHS_OLDER})")  # an accession in a name
    assert named["recommended"]["study_id"] == JHS_OLDER
    assert named["resolution"]["query_form"] == "accession"
    missing = resolve(release, "phs000286.v99.p2")  # the study exists, the version not
    assert missing["recommended"]["study_id"].startswith("phs000286.")
    assert any("v99" in w for w in missing["resolution"]["warnings"])


def test_study_urls_resolve_to_their_study_version(release: Release) -> None:
    for row in studies(release):
        if row["synthetic"]:  # a synthetic study has no dbGaP page
            assert row["canonical_url"] is None
            continue
        payload = resolve(release, row["canonical_url"])
        assert payload["recommended"]["study_id"] == row["study_accession"]
        assert payload["resolution"]["query_form"] == "url"
    with_more = f"{versions_of(release, 'phs000424')[0]['canonical_url']}&phv=169062"
    assert resolve(release, with_more)["recommended"]["study_id"].startswith("phs000424.")
    bad = call(release, "resolve_dbgap_study", query="https://example.org/nothing-here")
    assert error_code(bad) == "invalid_request"


@pytest.mark.parametrize(
    ("query", "expected_base"),
    [
        ("Framingham Heart Study", "phs000286"),
        ("Jakson Hart Study", "phs000286"),
        ("phs000007", None),
    ],
)
def test_an_unknown_study_is_not_found_with_suggestions(
    release: Release, query: str, expected_base: str | None
) -> None:
    payload = call(release, "resolve_dbgap_study", query=query)
    assert error_code(payload) == "not_found"
    suggestions = payload["error"]["details"]["suggestions"]
    assert 1 <= len(suggestions) <= 5
    known = {s["study_accession"] for s in studies(release)}
    assert all(s["study_id"] in known and "similarity" in s for s in suggestions)
    if expected_base:
        assert suggestions[0]["study_id"].startswith(expected_base + ".")


def test_ties_are_broken_by_how_much_metadata_a_study_has(release: Release) -> None:
    payload = resolve(release, "disease")  # a word of several study names
    top = payload["recommended"]["match"]["reason"]
    tied = {
        c["study_id"].split(".")[0] for c in payload["candidates"] if c["match"]["reason"] == top
    }
    assert len(tied) >= 2 and payload["resolution"]["studies_matched"] >= 2
    richest = max(
        tied,
        key=lambda base: (
            max(r["variable_count"] for r in versions_of(release, base)),
            max(r["dataset_count"] for r in versions_of(release, base)),
        ),
    )
    assert payload["recommended"]["study_id"].startswith(richest + ".")
    assert any("different studies" in w for w in payload["resolution"]["warnings"])


def test_resolve_limits_its_candidates_and_gives_the_total(release: Release) -> None:
    payload = ok(release, "resolve_dbgap_study", query="disease", limit=2)
    assert len(payload["candidates"]) == 2
    assert payload["total_candidates"] > 2 and payload["truncated"] is True


# -- get_dbgap_study ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "study_id",
    ["phs000286", "JHS", "phs000286.v6", "286", f"https://x/study.cgi?study_id={JHS_OLDER}"],
)
def test_get_refuses_anything_but_a_full_versioned_accession(
    release: Release, study_id: str
) -> None:
    payload = call(release, "get_dbgap_study", study_id=study_id)
    assert error_code(payload) == "invalid_request"
    assert "resolve_dbgap_study" in payload["error"]["message"]


def test_get_of_an_unknown_version_is_not_found_with_the_study_versions(release: Release) -> None:
    payload = call(release, "get_dbgap_study", study_id="phs000286.v99.p2")
    assert error_code(payload) == "not_found"
    suggested = {s["study_id"] for s in payload["error"]["details"]["suggestions"]}
    assert suggested == {JHS_CURRENT, JHS_OLDER}
    unknown = call(release, "get_dbgap_study", study_id="phs999999.v1.p1")
    assert error_code(unknown) == "not_found"
    assert unknown["error"]["details"]["suggestions"]


def test_metadata_scope_is_exact_for_a_version_described_by_its_own_files(
    release: Release,
) -> None:
    row = release.query_dicts("SELECT * FROM dbgap_study WHERE study_accession = ?", [JHS_CURRENT])[
        0
    ]
    assert row["text_source"] != "current_version" and row["has_variables"]
    payload = ok(release, "get_dbgap_study", study_id=JHS_CURRENT)
    assert payload["metadata_scope"] == "exact"
    assert set(payload["metadata_sources"].values()) >= {JHS_CURRENT}
    assert payload["metadata_notes"] == []
    study = payload["study"]
    assert study["name"] == row["name"] and study["canonical_url"] == row["canonical_url"]
    assert study["counts"]["variables"] == row["variable_count"]
    assert study["is_current_version"] is True


def test_metadata_scope_is_base_for_an_older_version_described_by_the_current_one(
    release: Release,
) -> None:
    row = release.query_dicts("SELECT * FROM dbgap_study WHERE study_accession = ?", [JHS_OLDER])[0]
    assert row["text_source"] == "current_version" and row["current_accession"] == JHS_CURRENT
    payload = ok(release, "get_dbgap_study", study_id=JHS_OLDER)
    assert payload["metadata_scope"] == "base"
    assert payload["metadata_sources"]["text"] == JHS_CURRENT  # says which version
    assert payload["metadata_sources"]["datasets"] == JHS_OLDER  # its own data dictionaries
    assert any(JHS_CURRENT in note for note in payload["metadata_notes"])
    # its 121 datasets are listed, capped, with their total
    datasets = payload["datasets"]
    assert datasets["total"] == row["dataset_count"] > len(datasets["items"])
    assert datasets["truncated"] is True
    assert all(d["dataset_id"].startswith(JHS_OLDER + "/") for d in datasets["items"])


def test_a_current_version_without_catalog_borrows_it_and_says_from_where(
    release: Release,
) -> None:
    payload = ok(release, "get_dbgap_study", study_id=GTEX_CURRENT)
    assert payload["metadata_scope"] == "base"
    assert payload["metadata_sources"]["text"] == GTEX_CURRENT
    assert payload["metadata_sources"]["datasets"] == GTEX_OLDER
    assert payload["documents"]["content_indexed"] is False
    assert payload["documents"]["items"][0]["title"] == "GTEx Case Report Form"
    assert {v["study_id"] for v in payload["versions"]} == {GTEX_CURRENT, GTEX_OLDER}


def test_get_returns_the_study_attributes(release: Release) -> None:
    row = release.query_dicts("SELECT * FROM dbgap_study WHERE study_accession = ?", [LOAD])[0]
    study = ok(release, "get_dbgap_study", study_id=LOAD)["study"]
    assert study["diseases"] == row["diseases"]
    assert study["study_designs"] == row["study_designs"]
    assert [f"{g['code']} --- {g['name']}" for g in study["consent_groups"]] == row[
        "consent_groups"
    ]
    assert study["description"] == row["description"][:4000]
    assert study["dates"]["gap_create_date"] == (
        row["gap_create_date"].isoformat() if row["gap_create_date"] else None
    )


# -- search_dbgap_catalog -----------------------------------------------------------------


def test_search_never_leaves_the_study(release: Release) -> None:
    other = release.query(
        "SELECT variable_accession FROM dbgap_variable WHERE study_accession = ? "
        "AND name = 'SUBJECT_ID' LIMIT 1",
        [JHS_CURRENT],
    )[0][0]
    for method in METHODS:
        for query in ("Subject ID", "SUBJECT_ID", other, "height weight age"):
            payload = search(release, HARMONIZATION, query, method=method, limit=20)
            assert payload["searched_study_id"] == HARMONIZATION
            assert payload["results"] or query == other, (method, query)
            for item in payload["results"]:
                assert item["study_id"] == HARMONIZATION
                assert item["id"].startswith(HARMONIZATION + "/")
                assert item["accession"] != other
    # an identifier of another study is found in its own study
    first = search(release, JHS_CURRENT, other)["results"][0]
    assert first["accession"] == other and first["scores"]["exact_match"] is True


def test_search_items_carry_ids_urls_scores_and_provenance(release: Release) -> None:
    payload = search(release, JHS_CURRENT, "participant sex", limit=3)
    item = payload["results"][0]
    row = release.query_dicts(
        "SELECT v.*, d.source_file FROM dbgap_variable v JOIN dbgap_dataset d "
        "USING (dataset_id) WHERE v.variable_id = ?",
        [item["id"]],
    )[0]
    assert item["source"] == "dbgap" and item["kind"] == "variable"
    assert item["accession"] == row["variable_accession"]
    assert item["parent_id"] == row["dataset_accession"]
    assert item["canonical_url"] == row["canonical_url"]
    assert item["canonical_url"].startswith("https://www.ncbi.nlm.nih.gov/projects/gap/")
    assert set(item["scores"]) == {"score", "keyword", "semantic", "exact_match"}
    provenance = item["provenance"]
    assert provenance["file"] == row["source_file"] and "file_status" not in provenance
    assert item.get("is_unique_key", False) == row["is_unique_key"]
    keys = search(release, JHS_OLDER, "SUBJECT_ID", limit=20)["results"]
    assert any(key.get("is_unique_key") is True for key in keys)  # said on a key only
    assert provenance["metadata_source"] == row["metadata_source"]
    assert "stats" not in item
    # a data-dictionary variable with statistics: the var_report name was not kept
    older = search(release, HARMONIZATION, "Height at visit 1", limit=1)["results"][0]
    assert older["provenance"]["metadata_source"] == "data_dict"
    assert "stats_file" not in older["provenance"]  # no null fields: one status says why
    assert older["provenance"]["stats_file_status"] == "not_retained"
    retrieval = payload["retrieval"]
    assert retrieval["weights"] == {
        "fusion": "weighted",
        "keyword": 0.3,
        "semantic": 0.7,
        "semantic_scaling": "min_max",
        "keyword_scaling": "over_ideal_bm25",
        "title_match": 0.2,
    }
    assert retrieval["scores_calibrated"] is False


def var_report_variable(path: Path, accession: str) -> ET.Element:
    """The all-subjects ``<variable>`` element of ``accession`` in a var_report."""
    for element in ET.parse(path).getroot().iter("variable"):
        if element.get("id") == accession:
            return element
    raise AssertionError(f"{accession} is not in {path.name}")


def test_include_stats_returns_the_numbers_of_the_var_report(
    release: Release, upstream_dir: Path
) -> None:
    payload = search(release, JHS_CURRENT, "participant sex consent", include_stats=True)
    checked = 0
    for item in payload["results"]:
        stats = item["stats"]
        assert stats["available"] is True
        table = release.query_dicts(
            "SELECT * FROM dbgap_variable_stat WHERE variable_id = ? ORDER BY consent_group",
            [item["id"]],
        )
        total = next(r for r in table if r["consent_group"] == "total")
        assert stats["total"]["n"] == total["n"] and stats["total"]["nulls"] == total["nulls"]
        assert stats["total"].get("male_count") == total["male_count"]
        assert stats["consent_groups"]["total"] == len(table) - 1
        # the same numbers as the var_report file named by the item's provenance
        path = (
            upstream_dir / "dbgap/studies/phs000286" / JHS_CURRENT / "pheno_variable_summaries"
        ) / item["provenance"]["stats_file"]
        element = var_report_variable(path, item["accession"])
        stat = element.find("total/stats/stat")
        assert stat is not None
        assert stats["total"]["n"] == int(stat.get("n"))
        assert stats["total"]["nulls"] == int(stat.get("nulls"))
        male = element.find("total/subject_profile/sex/male")
        assert male is not None and stats["total"]["male_count"] == int(male.text or 0)
        enums = [(e.get("code"), int(e.get("count"))) for e in element.findall("total/stats/enum")]
        shown = [(v["code"], v["count"]) for v in stats["values"]["items"] if v["kind"] == "enum"]
        assert shown == enums[: len(shown)] and stats["values"]["total"] >= len(enums)
        checked += 1
    assert checked >= 2
    consent = next(i for i in payload["results"] if i["title"].startswith("Consent"))
    assert consent["stats"]["values"]["items"][0] == {
        "kind": "enum",
        "code": "3",
        "value": "Health/Medical/Biomedical (IRB) (HMB-IRB)",
        "count": 2289,
    }


def test_include_stats_says_when_a_variable_has_no_report(release: Release) -> None:
    item = search(release, LOAD, "year of birth", include_stats=True, limit=1)["results"][0]
    assert "stats_table" not in item["provenance"]  # no statistics table rows
    assert item["stats"]["available"] is False and "var_report" in item["stats"]["status"]
    datasets = search(release, LOAD, "phenotypes", kind="dataset", include_stats=True)
    assert datasets["stats_note"] and all("stats" not in i for i in datasets["results"])


def test_document_search_follows_the_title_rule(release: Release) -> None:
    titles = {
        r[0]
        for r in release.query("SELECT title FROM dbgap_document WHERE study_accession = ?", [LOAD])
    }
    # keyword: a case-insensitive substring of the title, even inside a word
    for query in ("manual", "MANUAL", "proced"):
        payload = search(release, LOAD, query, kind="document", method="keyword")
        assert [i["title"] for i in payload["results"]] == [
            "The Multiplex Family Study Procedures Manual"
        ]
        assert payload["content_indexed"] is False
        assert payload["results"][0]["content_indexed"] is False
        assert "file" not in payload["results"][0]["provenance"]  # one status says why
        assert payload["results"][0]["provenance"]["file_status"] == "not_retained"
    none = search(release, LOAD, "handbook for study staff", kind="document", method="keyword")
    assert none["results"] == []
    # semantic compares with title embeddings: a paraphrase of a title finds it
    payload = search(
        release, LOAD, "dictionary of data elements", kind="document", method="semantic"
    )
    assert payload["results"][0]["title"] == "LOAD Data Element Dictionary"
    assert {i["title"] for i in payload["results"]} == titles
    hybrid = search(release, LOAD, "manual", kind="document")
    assert hybrid["results"][0]["scores"]["keyword"] == 1.0
    assert hybrid["retrieval"]["weights"]["keyword"] == 0.3


def test_a_version_without_documents_searches_its_sibling_and_says_so(release: Release) -> None:
    payload = search(release, GTEX_CURRENT, "case report", kind="document")
    assert payload["metadata_scope"] == "base"
    assert payload["searched_study_id"] == GTEX_OLDER
    assert GTEX_OLDER in payload["scope_note"]
    assert payload["results"][0]["study_id"] == GTEX_OLDER
    own = search(release, GTEX_OLDER, "case report", kind="document")
    assert own["metadata_scope"] == "exact" and "scope_note" not in own


def test_dataset_search_finds_datasets_of_the_study(release: Release) -> None:
    payload = search(release, GTEX_OLDER, "sample attributes", kind="dataset", method="keyword")
    first = payload["results"][0]
    assert first["kind"] == "dataset" and first["name"] == "GTEx_Sample_Attributes"
    assert first["parent_id"] == GTEX_OLDER
    assert first["provenance"]["file"].endswith(".xml")
    assert payload["in_scope"] == len(
        release.query("SELECT 1 FROM dbgap_dataset WHERE study_accession = ?", [GTEX_OLDER])
    )


@pytest.mark.parametrize(("asked", "returned"), [(0, 1), (-3, 1), (5, 5), (500, 20)])
def test_limit_is_clamped_to_1_through_20(release: Release, asked: int, returned: int) -> None:
    payload = search(release, JHS_OLDER, "blood pressure", limit=asked)
    assert len(payload["results"]) == returned


@pytest.mark.parametrize(
    "arguments",
    [
        {"study_id": JHS_OLDER, "query": "   "},
        {"study_id": JHS_OLDER, "query": "x" * 1001},
        {"study_id": JHS_OLDER, "query": "bp", "kind": "table"},
        {"study_id": JHS_OLDER, "query": "bp", "method": "fuzzy"},
        {"study_id": JHS_OLDER, "query": "bp", "colour": "red"},
        {"study_id": "phs000286", "query": "bp"},
        {"query": "bp"},
    ],
)
def test_bad_parameters_are_invalid_requests(release: Release, arguments: dict) -> None:
    assert error_code(call_tool(release, "search_dbgap_catalog", arguments)) == "invalid_request"


def test_hybrid_degrades_to_keyword_and_semantic_fails_without_embeddings(
    release: Release, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("METABUNDLE_EMBEDDINGS_ENABLED", "0")
    for kind, query in (("variable", "systolic blood pressure"), ("document", "manual")):
        study = LOAD if kind == "document" else JHS_OLDER
        payload = search(release, study, query, kind=kind)
        assert payload["retrieval"]["degraded"] is True
        assert payload["retrieval"]["effective_method"] == "keyword"
        assert payload["results"]
    failed = call(
        release, "search_dbgap_catalog", study_id=JHS_OLDER, query="bp", method="semantic"
    )
    assert error_code(failed) == "embeddings_unavailable"


def test_cli_search_over_dbgap_goes_through_the_core(mirror_build: Build) -> None:
    result = run_cli(
        "search", "phv00124545", "--source", "dbgap", "--json",
        "--release", str(mirror_build.release), timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    exact = [r for r in payload["results"] if r["scores"]["exact_match"]]
    # the accession is published in both JHS versions: one variable, its versions collapsed
    assert [r["id"] for r in exact] == [f"{JHS_OLDER}/phv00124545.v4.p2"]
    assert exact[0]["versions_collapsed"] == 1 and payload["results"][0] == exact[0]
    assert {r["source"] for r in payload["results"]} == {"dbgap"}


# -- evaluation ----------------------------------------------------------------------------


def test_eval_set_is_well_formed_and_names_real_variables(release: Release) -> None:
    queries = load_eval("dbgap")
    assert len(queries) >= 30
    assert sum(q["kind"] == "paraphrase" for q in queries) >= 20
    for q in queries:
        assert q["kind"] in ("paraphrase", "keyword", "identifier")
        assert q["relevant"] and all(g in (1, 2, 3) for g in q["relevant"].values())
        assert 3 in q["relevant"].values()
        found = release.query(
            "SELECT variable_id, study_accession FROM dbgap_variable "
            "WHERE variable_id IN (SELECT unnest(?::VARCHAR[]))",
            [list(q["relevant"])],
        )
        assert len(found) == len(q["relevant"]), q["query"]
        assert {s for _, s in found} == {q["study_id"]}
    paraphrased = [q for q in queries if q["kind"] == "paraphrase"]
    descriptions = {
        d.lower()
        for (d,) in release.query(
            "SELECT description FROM dbgap_variable WHERE variable_id IN "
            "(SELECT unnest(?::VARCHAR[]))",
            [[v for q in paraphrased for v in q["relevant"]]],
        )
    }
    assert not {q["query"].lower() for q in paraphrased} & descriptions


def measure(release: Release, queries: list[dict[str, Any]], method: str) -> dict[str, float]:
    """recall@5/@10 (any grade), MRR of the first relevant and nDCG@10 (graded)."""
    scores = []
    for q in queries:
        results = search(release, q["study_id"], q["query"], method=method, limit=10)["results"]
        scores.append(ranking_metrics([item["id"] for item in results], q["relevant"]))
    return mean_figures(scores)


@pytest.fixture(scope="module")
def eval_figures(release: Release) -> dict[str, dict[str, dict[str, float]]]:
    title = "dbGaP eval (tests/eval/dbgap.jsonl)"
    queries = calibration_set("dbgap")
    return figures_by_kind(queries, METHODS, partial(measure, release), title)


def test_variable_search_finds_variables_by_meaning_not_only_by_shared_words(
    eval_figures: dict,
) -> None:
    # Measured with the session build (wordllama), 30 paraphrases: recall@10 keyword
    # 0.154, semantic 0.614, hybrid 0.537; MRR 0.101 / 0.462 / 0.347.
    para = eval_figures["paraphrase"]
    assert para["semantic"]["recall@10"] >= 0.50
    assert para["hybrid"]["recall@10"] >= 0.42
    for method in ("semantic", "hybrid"):
        assert para[method]["recall@10"] >= para["keyword"]["recall@10"] + 0.25
        assert para[method]["mrr"] >= para["keyword"]["mrr"] + 0.15
        assert para[method]["ndcg@10"] > para["keyword"]["ndcg@10"]


def test_keyword_and_identifier_queries(eval_figures: dict) -> None:
    # Measured: keyword-style recall@10 0.950 / 0.956 / 0.958 and MRR 1.0 / 0.949 / 1.0;
    # identifiers resolve first under keyword and hybrid (MRR 1.0).
    for method in ("keyword", "hybrid"):
        assert eval_figures["keyword"][method]["recall@10"] >= 0.85
        assert eval_figures["keyword"][method]["mrr"] >= 0.85
        assert eval_figures["identifier"][method]["mrr"] == 1.0
