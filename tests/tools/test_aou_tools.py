"""The All of Us tools (search_aou_catalog, get_aou_item) over the session build.

Everything runs against the real release (``release`` fixture). Expected values come
from the release's own ``aou_*`` tables or are recomputed here independently (result
ids from their native keys with hashlib), so a test fails when the tool's behaviour
breaks, not when the mirror is refreshed. The evaluation set ``tests/eval/aou.jsonl``
was written from an earlier build of the mirror; its ids resolving here shows that
ids are stable across builds.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from typing import Any

import pytest

from metabundle.search.ranking.policies import AOU_CATALOG
from metabundle.search.release import Release
from metabundle.search.services.aou.queries import LIST_CAP
from metabundle.search.services.aou.tools import MAX_LIMIT
from metabundle.search.tools import call_tool
from tests.support.build import Build
from tests.support.cli import run_cli
from tests.support.evaluation import calibration_set, load_eval, ranking_metrics

METHODS = ("keyword", "semantic", "hybrid")
INTENT_BONUS = AOU_CATALOG.intent_bonus
MAX_PER_TITLE = AOU_CATALOG.max_per_title
SMOKING = "Smoking_100CigsLifetime"


def search(release: Release, query: str, **arguments: Any) -> dict[str, Any]:
    payload = call_tool(release, "search_aou_catalog", {"query": query, **arguments})
    assert "error" not in payload, payload
    return payload


def get(release: Release, result_id: Any) -> dict[str, Any]:
    return call_tool(release, "get_aou_item", {"result_id": result_id})


def error_code(payload: dict[str, Any]) -> str | None:
    return payload.get("error", {}).get("code")


def item_id(release: Release, where: str, params: list[Any]) -> str:
    rows = release.query(f"SELECT result_id FROM aou_item WHERE {where}", params)
    assert len(rows) == 1, (where, params, rows)
    return rows[0][0]


# -- every question through get_aou_item --------------------------------------------------


def test_every_survey_question_is_an_item_with_its_answers(release: Release) -> None:
    questions = release.query_dicts(
        "SELECT result_id, title, concept_code, survey_name, topic FROM aou_item "
        "WHERE kind = 'question' ORDER BY result_id"
    )
    answers: dict[str, list[str]] = {}
    for parent, answer in release.query(
        "SELECT parent_result_id, result_id FROM aou_item WHERE kind = 'answer' "
        "ORDER BY parent_result_id, position, title, result_id"
    ):
        answers.setdefault(parent, []).append(answer)
    assert len(questions) > 900
    for question in questions:
        payload = get(release, question["result_id"])
        item = payload["item"]
        assert (item["title"], item["concept_code"]) == (
            question["title"],
            question["concept_code"],
        )
        assert item["is_variable"] is True and item["search_role"] == "variable"
        expected = answers.get(question["result_id"], [])
        got = payload["answers"]
        assert got["total"] == len(expected), question
        assert [a["result_id"] for a in got["items"]] == expected[:LIST_CAP], question
        membership = payload["membership"]
        assert membership["module"]["title"] == question["survey_name"]
        assert membership["module"]["is_variable"] is False
        topic = membership["topic"]
        assert (topic and topic["title"]) == question["topic"], question


def test_a_question_is_found_by_its_code_and_by_a_paraphrase(release: Release) -> None:
    target = item_id(release, "kind = 'question' AND concept_code = ?", [SMOKING])
    for query in (SMOKING, SMOKING.lower(), f"ppi:{SMOKING}", "1585857"):
        for method in ("keyword", "hybrid"):
            first = search(release, query, method=method, limit=3)["results"][0]
            assert (first["result_id"], first["scores"]["exact_match"]) == (target, True), query
    for method in ("semantic", "hybrid"):
        results = search(release, "lifetime smoking of a hundred cigarettes", method=method)
        assert target in [r["result_id"] for r in results["results"][:3]], method


def test_answers_stand_for_their_question_unless_the_query_names_them(
    release: Release,
) -> None:
    results = search(release, "smoked at least 100 cigarettes in your entire life")["results"]
    first = results[0]
    assert first["kind"] == "question" and first["scores"]["via_answers"] is True
    assert not [r for r in results if r["title"] in ("Yes", "No")]
    named = search(release, "sleep apnea", variable_type="survey", limit=20)["results"]
    assert any(r["kind"] == "answer" and r["title"] == "Sleep apnea" for r in named)


def test_random_question_codes_resolve_first(release: Release) -> None:
    rows = release.query(
        "SELECT result_id, concept_code FROM aou_item WHERE kind = 'question' "
        "AND concept_code IS NOT NULL ORDER BY hash(result_id) LIMIT 40"
    )
    for result_id, code in rows:
        first = search(release, code, method="keyword", limit=1)["results"][0]
        assert first["result_id"] == result_id, code


# -- result ids --------------------------------------------------------------------------


def test_result_ids_are_recomputed_from_native_keys(release: Release) -> None:
    rows = release.query("SELECT result_id, kind, native_id FROM aou_item")
    for result_id, kind, native_id in rows:
        digest = hashlib.sha256(f"{kind}\0{native_id}".encode()).hexdigest()[:24]
        assert result_id == f"aou.doc.{digest}", (kind, native_id)
    payload = search(release, "Body height", variable_type="ehr", limit=1)
    assert payload["results"][0]["result_id"] == item_id(
        release, "kind = 'ehr_concept' AND concept_code = '8302-2'", []
    )


def test_ids_written_from_an_earlier_build_resolve_here(release: Release) -> None:
    for row in load_eval("aou"):
        for result_id in row["relevant"]:
            payload = get(release, result_id)
            assert "error" not in payload, (row["query"], result_id)
            assert payload["item"]["title"][:40] in row["note"], (row["query"], result_id)


# -- result shape ------------------------------------------------------------------------


def test_results_carry_their_role_and_never_call_navigation_a_variable(
    release: Release,
) -> None:
    seen_kinds: set[str] = set()
    for query in ("lifestyle survey", "sleep apnea", "blood pressure", "Conditions"):
        for result in search(release, query, limit=20)["results"]:
            assert result["result_id"].startswith("aou.doc.") and len(result["result_id"]) == 32
            assert result["is_variable"] == (result["search_role"] == "variable")
            assert result["is_variable"] == (
                result["kind"] in ("question", "ehr_concept", "physical_measurement")
            )
            assert result["canonical_url"].startswith("https://databrowser.researchallofus.org/")
            seen_kinds.add(result["kind"])
    assert {"survey_module", "question", "physical_measurement", "ehr_concept"} <= seen_kinds


def test_at_most_two_results_per_title_and_domain(release: Release) -> None:
    skip = search(release, "903096", method="keyword", limit=MAX_LIMIT)["results"]
    assert [r["title"] for r in skip].count("PMI: Skip") == MAX_PER_TITLE
    for query in ("Yes", "No", "PMI: Skip", "Mother", "hepatitis", "blood pressure"):
        for method in METHODS:
            results = search(release, query, method=method, limit=MAX_LIMIT)["results"]
            keys = Counter((r["title"].strip().lower(), r["domain"]) for r in results)
            assert max(keys.values()) <= MAX_PER_TITLE, (query, method, keys.most_common(1))


def test_limit_is_clamped(release: Release) -> None:
    assert len(search(release, "diabetes", limit=500)["results"]) == MAX_LIMIT
    assert len(search(release, "diabetes", limit=0)["results"]) == 1


# -- filters -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "filters", "column", "value"),
    [
        ("blood pressure", {"variable_type": "survey"}, "variable_type", "survey"),
        (
            "blood pressure",
            {"variable_type": "physical_measurement"},
            "variable_type",
            "physical_measurement",
        ),
        ("sodium", {"variable_type": "ehr", "ehr_domain": "drug"}, "domain", "Drug"),
        ("sodium", {"variable_type": "ehr", "ehr_role": "source"}, "ehr_role", "source"),
        (
            "blood pressure",
            {"variable_type": "ehr", "ehr_vocabulary": "loinc"},
            "vocabulary",
            "LOINC",
        ),
    ],
)
def test_filters_narrow_every_method(
    release: Release, query: str, filters: dict[str, str], column: str, value: str
) -> None:
    unfiltered = search(release, query, method="keyword", limit=MAX_LIMIT)["results"]
    assert {r[column] for r in unfiltered} - {value}, "the filter must have work to do"
    for method in METHODS:
        payload = search(release, query, method=method, limit=MAX_LIMIT, **filters)
        assert payload["results"], (filters, method)
        assert {r[column] for r in payload["results"]} == {value}, (filters, method)


def test_filters_apply_before_candidate_limits(release: Release) -> None:
    # Two ICD10CM source concepts among thousands of items: for "disease" the semantic
    # candidates rank one of them past a thousand others, yet filtered it is found.
    expected = {
        row[0]
        for row in release.query(
            "SELECT result_id FROM aou_item WHERE vocabulary = 'ICD10CM' AND kind = 'ehr_concept'"
        )
    }
    assert len(expected) == 2
    icd10 = {"variable_type": "ehr", "ehr_vocabulary": "ICD10CM"}
    for method in METHODS:
        unfiltered = search(release, "disease", method=method, limit=MAX_LIMIT)["results"]
        assert not expected <= {r["result_id"] for r in unfiltered}, method
        filtered = search(release, "disease", method=method, limit=MAX_LIMIT, **icd10)
        found = {r["result_id"] for r in filtered["results"]}
        if method == "keyword":  # only one of them has the word
            assert found and found < expected
        else:
            assert found == expected, method


def test_identifiers_resolve_inside_the_filter(release: Release) -> None:
    pm = item_id(release, "kind = 'physical_measurement' AND concept_id = 903115", [])
    ehr = item_id(release, "kind = 'ehr_concept' AND concept_code = '8462-4'", [])
    both = search(release, "loinc:8462-4", limit=2)["results"]
    assert {r["result_id"] for r in both} == {pm, ehr}
    assert all(r["scores"]["exact_match"] for r in both)
    only_pm = search(release, "loinc:8462-4", variable_type="physical_measurement")["results"]
    assert only_pm[0]["result_id"] == pm
    assert ehr not in {r["result_id"] for r in only_pm}


@pytest.mark.parametrize(
    ("arguments", "parameter"),
    [
        ({"ehr_domain": "Condition"}, "ehr_domain"),
        ({"ehr_role": "standard"}, "ehr_role"),
        ({"ehr_vocabulary": "SNOMED"}, "ehr_vocabulary"),
        ({"variable_type": "survey", "ehr_role": "source"}, "ehr_role"),
        ({"variable_type": "ehr", "ehr_domain": "Observation"}, "ehr_domain"),
        ({"variable_type": "ehr", "ehr_vocabulary": "NotAVocabulary"}, "ehr_vocabulary"),
        ({"variable_type": "ehr", "ehr_role": "primary"}, "ehr_role"),
        ({"variable_type": "labs"}, "variable_type"),
        ({"method": "fuzzy"}, "method"),
        ({"sources": ["aou"]}, "sources"),
    ],
)
def test_bad_filters_are_invalid_requests(
    release: Release, arguments: dict[str, Any], parameter: str
) -> None:
    payload = call_tool(release, "search_aou_catalog", {"query": "asthma", **arguments})
    assert error_code(payload) == "invalid_request", payload
    assert parameter in payload["error"]["message"]


def test_blank_query_is_an_invalid_request(release: Release) -> None:
    payload = call_tool(release, "search_aou_catalog", {"query": "   "})
    assert error_code(payload) == "invalid_request"


# -- methods -----------------------------------------------------------------------------


def test_hybrid_degrades_and_semantic_fails_without_embeddings(
    release: Release, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("METABUNDLE_EMBEDDINGS_ENABLED", "0")
    payload = search(release, "sleep apnea")
    retrieval = payload["retrieval"]
    assert (retrieval["effective_method"], retrieval["degraded"]) == ("keyword", True)
    assert retrieval["degraded_reason"] and "semantic" not in retrieval["candidates"]
    keyword = search(release, "sleep apnea", method="keyword")
    assert [r["result_id"] for r in payload["results"]] == [
        r["result_id"] for r in keyword["results"]
    ]
    failed = call_tool(release, "search_aou_catalog", {"query": "asthma", "method": "semantic"})
    assert error_code(failed) == "embeddings_unavailable"


def test_title_similarity_rescues_misspellings(release: Release) -> None:
    target = item_id(release, "kind = 'ehr_concept' AND title = 'Essential hypertension'", [])
    payload = search(release, "esential hypertenshun", method="keyword", limit=5)
    assert payload["retrieval"]["candidates"]["title"] > 0
    first = payload["results"][0]
    assert first["result_id"] == target and first["scores"]["title_similarity"] >= 0.85
    exact = search(release, SMOKING, method="keyword")["retrieval"]["candidates"]
    assert "title" not in exact  # an identifier needs no fallback


def test_intent_signals_favour_the_named_data_type_only(release: Release) -> None:
    payload = search(release, "smoking survey question", limit=MAX_LIMIT)
    assert payload["retrieval"]["weights"]["intent_bonus"] == INTENT_BONUS
    for result in payload["results"]:
        favoured = result["variable_type"] == "survey"
        assert bool(result["scores"]["intent"]) == favoured, result
    plain = search(release, "smoking", limit=MAX_LIMIT)["results"]
    assert not [r for r in plain if r["scores"]["intent"]]


def test_standard_concepts_are_not_preferred_for_being_standard(release: Release) -> None:
    # The ICD10CM source concept and the SNOMED standard concept it maps to: asked by
    # the source concept's own name, the source concept must come first.
    source = item_id(release, "title = 'Gastrointestinal hemorrhage, unspecified'", [])
    standard = item_id(
        release, "title = 'Gastrointestinal hemorrhage' AND ehr_role = 'standard'", []
    )
    for method in METHODS:
        ranked = [
            r["result_id"]
            for r in search(
                release, "gastrointestinal hemorrhage, unspecified", method=method,
                variable_type="ehr", limit=MAX_LIMIT,
            )["results"]
        ]  # fmt: skip
        assert ranked.index(source) < ranked.index(standard), method
        for result in search(release, "hemorrhage", variable_type="ehr")["results"]:
            assert not result["scores"]["intent"]


# -- get_aou_item ------------------------------------------------------------------------


def test_an_item_carries_identifiers_links_and_relationships(release: Release) -> None:
    systolic = item_id(release, "kind = 'physical_measurement' AND concept_id = 903118", [])
    loinc = item_id(release, "kind = 'ehr_concept' AND concept_code = '8480-6'", [])
    payload = get(release, systolic)
    identifiers = {(i["identifier_kind"], i["identifier"]) for i in payload["identifiers"]["items"]}
    assert {("concept_id", "903118"), ("vocabulary_code", "loinc:8480-6")} <= identifiers
    links = {link["link_kind"] for link in payload["links"]["items"]}
    assert {"data_browser", "athena", "public_api"} <= links
    maps = [r for r in payload["relationships"]["items"] if r["edge_kind"] == "maps_to"]
    assert [(r["direction"], r["item"]["result_id"]) for r in maps] == [("outgoing", loinc)]
    back = get(release, loinc)["relationships"]["items"]
    assert ("maps_to", "incoming", systolic) in {
        (r["edge_kind"], r["direction"], r["item"]["result_id"]) for r in back
    }
    assert payload["membership"]["parent"]["title"] == "Physical Measurements"
    assert "answers" not in payload and "members" not in payload


def test_branching_questions_name_the_answer_they_go_through(release: Release) -> None:
    edge = release.query_dicts(
        "SELECT from_result_id, to_result_id, via_result_id FROM aou_item_edge "
        "WHERE edge_kind = 'branches_to' ORDER BY from_result_id, to_result_id LIMIT 1"
    )[0]
    outgoing = get(release, edge["from_result_id"])["relationships"]["items"]
    found = [r for r in outgoing if r["item"]["result_id"] == edge["to_result_id"]]
    assert found and found[0]["direction"] == "outgoing"
    assert found[0]["via"]["result_id"] == edge["via_result_id"]
    assert found[0]["via"]["is_variable"] is False
    incoming = get(release, edge["to_result_id"])["relationships"]["items"]
    assert ("branches_to", "incoming", edge["from_result_id"]) in {
        (r["edge_kind"], r["direction"], r["item"]["result_id"]) for r in incoming
    }


def test_navigation_items_list_their_members_capped_with_a_total(release: Release) -> None:
    conditions = item_id(release, "kind = 'domain' AND domain = 'Condition'", [])
    payload = get(release, conditions)
    expected = release.query(
        "SELECT count(*) FROM aou_item WHERE parent_result_id = ?", [conditions]
    )[0][0]
    assert payload["item"]["is_variable"] is False
    assert payload["members"]["total"] == expected > LIST_CAP
    assert len(payload["members"]["items"]) == LIST_CAP
    topic = item_id(release, "kind = 'survey_topic' AND title = 'Lung Conditions'", [])
    members = get(release, topic)["members"]
    in_topic = release.query(
        "SELECT count(*) FROM aou_item WHERE kind = 'question' AND topic = 'Lung Conditions'"
    )[0][0]
    assert members["total"] == in_topic and {m["kind"] for m in members["items"]} == {"question"}


def test_an_answer_belongs_to_its_question_and_module(release: Release) -> None:
    answer = release.query_dicts(
        "SELECT result_id, parent_result_id, survey_name FROM aou_item WHERE kind = 'answer' "
        "ORDER BY result_id LIMIT 1"
    )[0]
    payload = get(release, answer["result_id"])
    assert payload["item"]["search_role"] == "support" and payload["item"]["is_variable"] is False
    membership = payload["membership"]
    assert membership["parent"]["result_id"] == answer["parent_result_id"]
    assert membership["module"]["title"] == answer["survey_name"]


@pytest.mark.parametrize("result_id", ["aou.doc." + "0" * 24, "ukb:21001", "phs000007.v32"])
def test_unknown_ids_are_not_found(release: Release, result_id: str) -> None:
    payload = get(release, result_id)
    assert error_code(payload) == "not_found"
    assert "search_aou_catalog" in payload["error"]["message"]


@pytest.mark.parametrize(
    "result_id", ["aou.doc.123", "aou.doc." + "g" * 24, "", "  ", "aou.doc." + "0" * 25]
)
def test_malformed_ids_are_invalid_requests(release: Release, result_id: str) -> None:
    payload = get(release, result_id)
    assert error_code(payload) == "invalid_request"
    assert "result_id" in payload["error"]["message"]


# -- through the core --------------------------------------------------------------------


def test_cli_search_over_aou_goes_through_the_core(mirror_build: Build, release: Release) -> None:
    result = run_cli(
        "search", SMOKING, "--source", "aou", "--json",
        "--release", str(mirror_build.release), timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    first = payload["results"][0]
    assert first["id"] == item_id(release, "kind = 'question' AND concept_code = ?", [SMOKING])
    assert {r["source"] for r in payload["results"]} == {"aou"}


# -- evaluation --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def evaluation(release: Release) -> dict[tuple[str, str], dict[str, float]]:
    """Mean metrics per (method, subset): subsets are 'all' and each query kind."""
    sums: dict[tuple[str, str], Counter[str]] = {}
    counts: Counter[tuple[str, str]] = Counter()
    for row in calibration_set("aou"):
        for method in METHODS:
            payload = search(release, row["query"], method=method, limit=10)
            scores = ranking_metrics([r["result_id"] for r in payload["results"]], row["relevant"])
            for subset in ("all", row["kind"]):
                sums.setdefault((method, subset), Counter()).update(scores)
                counts[(method, subset)] += 1
    return {key: {m: v / counts[key] for m, v in total.items()} for key, total in sums.items()}


def test_the_evaluation_set_is_well_formed(release: Release) -> None:
    rows = load_eval("aou")
    assert len(rows) >= 30
    assert len({row["query"] for row in rows}) == len(rows)
    kinds = Counter(row["kind"] for row in rows)
    assert set(kinds) <= {"paraphrase", "keyword", "identifier"} and kinds["paraphrase"] >= 20
    for row in rows:
        assert row["relevant"] and all(g in (1, 2, 3) for g in row["relevant"].values())
        assert row["note"]


@pytest.mark.parametrize(
    ("method", "recall10", "mrr"),
    [("keyword", 0.75, 0.65), ("semantic", 0.72, 0.65), ("hybrid", 0.85, 0.68)],
)
def test_evaluation_thresholds(
    evaluation: dict[tuple[str, str], dict[str, float]], method: str, recall10: float, mrr: float
) -> None:
    # measured with the session build's wordllama embeddings (see the task report):
    # keyword 0.832 / 0.740, semantic 0.820 / 0.750, hybrid 0.918 / 0.767
    scores = evaluation[(method, "all")]
    assert scores["recall@10"] >= recall10, scores
    assert scores["mrr"] >= mrr, scores


def test_identifiers_always_rank_a_relevant_item_first(
    evaluation: dict[tuple[str, str], dict[str, float]],
) -> None:
    for method in ("keyword", "hybrid"):
        assert evaluation[(method, "identifier")]["mrr"] == 1.0, method


def test_meaning_beats_words_on_paraphrases(
    evaluation: dict[tuple[str, str], dict[str, float]],
) -> None:
    keyword = evaluation[("keyword", "paraphrase")]
    for method in ("semantic", "hybrid"):
        scores = evaluation[(method, "paraphrase")]
        assert scores["recall@10"] >= keyword["recall@10"] + 0.05, (method, scores, keyword)
        assert scores["ndcg@10"] > keyword["ndcg@10"], (method, scores, keyword)
