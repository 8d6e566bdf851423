"""The UK Biobank tools (search_ukb_fields, get_ukb_field) over the session build.

Everything runs against the real release (``release`` fixture); expected values come
from the release's own ``ukb_*`` tables, so a test fails when the tool's behaviour
breaks, not when the mirror is refreshed.
"""

from __future__ import annotations

import json
from functools import partial
from typing import Any

import pytest

from benchmarks.quality import recall, reciprocal_rank
from metabundle.search.ranking.policies import UKB_FIELDS
from metabundle.search.release import Release
from metabundle.search.services.ukb.showcase import SHOWCASE
from metabundle.search.tools import call_tool
from tests.support.build import Build
from tests.support.cli import run_cli
from tests.support.evaluation import calibration_set, figures_by_kind, load_eval, mean_figures

METHODS = ("keyword", "semantic", "hybrid")


FIELD_ID_BOOST = UKB_FIELDS.boosts["id"]
ALIAS_BOOST = UKB_FIELDS.boosts["alias"]


def search(release: Release, query: str, **arguments: Any) -> dict[str, Any]:
    payload = call_tool(release, "search_ukb_fields", {"query": query, **arguments})
    assert "error" not in payload, payload
    return payload


def get(release: Release, field_id: Any, **arguments: Any) -> dict[str, Any]:
    return call_tool(release, "get_ukb_field", {"field_id": field_id, **arguments})


def error_code(payload: dict[str, Any]) -> str | None:
    return payload.get("error", {}).get("code")


# -- identifiers and aliases ------------------------------------------------------------


@pytest.mark.parametrize("field_id", [21001, 31, 20116, 41270, 1558])
def test_an_id_and_every_alias_form_rank_the_field_first(release: Release, field_id: int) -> None:
    aliases = release.query_dicts(
        "SELECT alias, alias_kind FROM ukb_field_alias WHERE field_id = ? ORDER BY alias",
        [field_id],
    )
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for alias in aliases:
        by_kind.setdefault(alias["alias_kind"], []).append(alias)
    # (a singular field's RAP name is its stem, p31, so it has no separate rap_stem)
    assert {"field_id", "f_prefix", "ukbconv_csv", "ukbconv_r", "rap"} <= set(by_kind)
    forms = [a for group in by_kind.values() for a in group[:2] + group[-1:]]
    forms += [{"alias": a["alias"].upper(), "alias_kind": a["alias_kind"]} for a in forms[-2:]]
    for method in ("hybrid", "keyword"):
        for alias in forms:
            payload = search(release, alias["alias"], method=method, limit=3)
            first = payload["results"][0]
            assert first["id"] == field_id, (method, alias)
            assert first["rank"] == 1
            assert first["scores"]["exact_match"] is True
            is_id = alias["alias_kind"] == "field_id"
            assert first["scores"]["boost"] == (FIELD_ID_BOOST if is_id else ALIAS_BOOST)
            assert first["matched_alias"]["alias_kind"] == alias["alias_kind"]
            assert all(
                r["scores"]["score"] < first["scores"]["score"] for r in payload["results"][1:]
            )


def test_a_retired_dictionary_title_resolves_its_field(release: Release) -> None:
    field_id, legacy = release.query(
        "SELECT field_id, alias FROM ukb_field_alias WHERE alias_kind = 'legacy_title' "
        "ORDER BY field_id LIMIT 1"
    )[0]
    title = release.query("SELECT title FROM ukb_field WHERE field_id = ?", [field_id])[0][0]
    assert title != legacy
    first = search(release, f"  {legacy.lower()} ")["results"][0]
    assert first["id"] == field_id
    assert first["matched_alias"] == {"alias": legacy, "alias_kind": "legacy_title"}


# -- parameters, retrieval block, payload -----------------------------------------------


@pytest.mark.parametrize(("asked", "returned"), [(0, 1), (-5, 1), (1, 1), (15, 15), (500, 20)])
def test_limit_is_clamped_to_1_through_20(release: Release, asked: int, returned: int) -> None:
    assert len(search(release, "blood pressure", limit=asked)["results"]) == returned


def test_default_limit_is_10(release: Release) -> None:
    assert len(search(release, "blood pressure")["results"]) == 10


@pytest.mark.parametrize(
    "arguments",
    [
        {"query": "   "},
        {"query": "bmi", "method": "fuzzy"},
        {"query": "bmi", "sources": ["ukb"]},
        {"query": "x" * 1001},
    ],
)
def test_bad_parameters_are_invalid_requests(release: Release, arguments: dict) -> None:
    assert error_code(call_tool(release, "search_ukb_fields", arguments)) == "invalid_request"


def test_retrieval_block_names_the_policy_and_explains_it_on_request(release: Release) -> None:
    short = search(release, "systolic blood pressure")["retrieval"]
    assert short["policy"] == "ukb_fields" and "explain" not in short
    payload = search(release, "systolic blood pressure", explain=True)
    block = payload["retrieval"]
    assert block["effective_method"] == "hybrid" and not block["degraded"]
    assert block["weights"] == {
        "fusion": "weighted",
        "keyword": 0.3,
        "semantic": 0.7,
        "semantic_scaling": "min_max",
        "keyword_scaling": "over_ideal_bm25",
        "title_match": 0.2,
        "participants_prior": 0.2,
    }
    assert block["explain"]["stages"]["boosts"] == {"id": FIELD_ID_BOOST, "alias": ALIAS_BOOST}
    formula = block["explain"]["score_formula"]
    assert "0.3 * keyword + 0.7 * semantic + 0.2 * title_match" in formula
    assert "plus 1.2 * boost" in formula
    assert block["scores_calibrated"] is False
    for item in payload["results"]:
        s = item["scores"]
        assert 0 <= s["semantic_scaled"] <= 1 and 0 <= s["title_match"] <= 1
        assert 0 <= (s["keyword"] or 0) <= 1
        if "prior" not in s:  # a prior places a field at the score of the place it takes
            expected = (
                0.3 * (s["keyword"] or 0)
                + 0.7 * s["semantic_scaled"]
                + 0.2 * s["title_match"]
                + 1.2 * s.get("boost", 0)
                + s["prior_bonus"]
            )
            assert s["score"] == pytest.approx(expected, abs=1e-5)
    scores = [item["scores"]["score"] for item in payload["results"]]
    assert scores == sorted(scores, reverse=True)


def test_keyword_and_semantic_explain_their_own_rules(release: Release) -> None:
    keyword = search(release, "31", method="keyword", explain=True)["retrieval"]
    assert keyword["weights"] is None
    assert keyword["explain"]["stages"]["boosts"] == {"id": FIELD_ID_BOOST, "alias": ALIAS_BOOST}
    assert keyword["embedding_model"] is None
    semantic = search(release, "sex of participant", method="semantic", explain=True)
    assert semantic["retrieval"]["weights"] is None
    assert semantic["retrieval"]["explain"]["stages"]["boosts"] is None
    assert not any("boost" in item["scores"] for item in semantic["results"])


def test_hybrid_degrades_to_keyword_and_semantic_fails_without_embeddings(
    release: Release, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("METABUNDLE_EMBEDDINGS_ENABLED", "0")
    payload = search(release, "p21001_i0", explain=True)
    assert payload["retrieval"]["degraded"] is True
    assert payload["retrieval"]["effective_method"] == "keyword"
    boosts = payload["retrieval"]["explain"]["stages"]["boosts"]
    assert boosts == {"id": FIELD_ID_BOOST, "alias": ALIAS_BOOST}
    assert payload["results"][0]["id"] == 21001
    failed = call_tool(release, "search_ukb_fields", {"query": "bmi", "method": "semantic"})
    assert error_code(failed) == "embeddings_unavailable"


def test_results_are_ukb_fields_with_showcase_urls_only(release: Release) -> None:
    results = search(release, "ICD10 diagnoses hospital", limit=20)["results"]
    ids = [item["id"] for item in results]
    rows = {
        r["field_id"]: r
        for r in release.query_dicts(
            "SELECT field_id, title, encoding_id, main_category, notes, units FROM ukb_field "
            "WHERE field_id IN (SELECT unnest(?::INTEGER[]))",
            [ids],
        )
    }
    assert set(rows) == set(ids)
    for item in results:
        assert (item["source"], item["kind"]) == ("ukb", "field")
        assert item["title"] == rows[item["id"]]["title"]
        assert item["canonical_url"] == f"{SHOWCASE}field.cgi?id={item['id']}"
        assert item["category_url"] == f"{SHOWCASE}label.cgi?id={rows[item['id']]['main_category']}"
        if rows[item["id"]]["encoding_id"]:
            assert item["encoding_url"] == f"{SHOWCASE}coding.cgi?id={item['encoding_id']}"
        else:
            assert "encoding_id" not in item and "encoding_url" not in item  # nulls left out
        for key in ("value_type", "item_type", "category_path", "scores"):
            assert key in item
        for key in ("notes", "units"):
            assert (key in item) == (rows[item["id"]][key] is not None), key
        assert len(item.get("notes", "")) <= 160
        assert "<p>" not in (item["notes"] or "") and "~F" not in (item["notes"] or "")
    assert 41270 in ids


# -- get_ukb_field -----------------------------------------------------------------------


def test_get_returns_decoded_properties_category_path_and_aliases(release: Release) -> None:
    payload = get(release, 21001)
    field = payload["field"]
    row = release.query_dicts("SELECT * FROM ukb_field WHERE field_id = 21001")[0]
    assert field["title"] == row["title"] and field["units"] == row["units"]
    assert field["canonical_url"] == f"{SHOWCASE}field.cgi?id=21001"
    assert field["properties"]["value_type"] == {
        "code": row["value_type"],
        "label": row["value_type_label"],
    }
    assert field["properties"]["strata"]["label"] == row["strata_label"]
    assert payload["encoding"] is None
    category = payload["category"]
    assert category["id"] == row["main_category"]
    assert category["path"][-1]["id"] == row["main_category"]
    assert " > ".join(step["title"] for step in category["path"]) == row["category_path"]
    assert all(step["url"] == f"{SHOWCASE}label.cgi?id={step['id']}" for step in category["path"])
    total = release.query("SELECT count(*) FROM ukb_field_alias WHERE field_id = 21001")[0][0]
    assert payload["aliases"]["total"] == total
    assert "p21001_i0" in payload["aliases"]["by_kind"]["rap"]["examples"]
    instances = payload["instances"]
    assert instances["instance_ids"] == list(range(row["instance_min"], row["instance_max"] + 1))
    assert instances["summaries"] is None and instances["summaries_status"] == "not_requested"


def test_instance_summaries_hold_what_the_release_has_and_say_what_it_lacks(
    release: Release,
) -> None:
    instances = get(release, 21001, include_instance_summaries=True)["instances"]
    assert instances["summaries_status"] == "columns_only"
    assert "not in this release" in instances["summaries_note"]
    summaries = instances["summaries"]
    assert [s["instance"] for s in summaries] == instances["instance_ids"]
    for summary in summaries:
        i = summary["instance"]
        assert summary["description"] is None and summary["participants"] is None
        assert summary["columns"]["rap"] == [f"p21001_i{i}"]
        assert summary["columns"]["ukbconv_csv"] == [f"21001-{i}.0"]


def test_get_accepts_alias_forms_and_says_how_it_resolved_them(release: Release) -> None:
    for alias, kind, instance in [
        ("p21001_i2", "rap", 2),
        ("21001-1.0", "ukbconv_csv", 1),
        ("f.21001.3.0", "ukbconv_r", 3),
        ("F21001", "f_prefix", None),
        ("p21001", "rap_stem", None),
    ]:
        payload = get(release, alias)
        assert payload["field"]["id"] == 21001, alias
        assert payload["resolved_from"]["alias_kind"] == kind
        assert payload["resolved_from"]["instance"] == instance
    assert get(release, "21001")["resolved_from"] is None


@pytest.mark.parametrize("field_id", [99999, "99999", "p99999_i0", 0])
def test_unknown_field_is_not_found_with_nearest_suggestions(
    release: Release, field_id: Any
) -> None:
    payload = get(release, field_id)
    assert error_code(payload) == "not_found"
    suggestions = payload["error"]["details"]["suggestions"]
    assert suggestions
    existing = {r[0] for r in release.query("SELECT field_id FROM ukb_field")}
    assert all(s["id"] in existing for s in suggestions)


@pytest.mark.parametrize("field_id", ["body mass index", "", "21001; DROP TABLE x", -1, None])
def test_non_numeric_field_id_is_an_invalid_request(release: Release, field_id: Any) -> None:
    assert error_code(get(release, field_id)) == "invalid_request"


def test_categorical_field_lists_its_coding_values_with_total(release: Release) -> None:
    encoding_id = release.query("SELECT encoding_id FROM ukb_field WHERE field_id = 6150")[0][0]
    expected = release.query(
        "SELECT value, meaning FROM ukb_encoding_value WHERE encoding_id = ? ORDER BY value_order",
        [encoding_id],
    )
    encoding = get(release, 6150)["encoding"]
    assert encoding["id"] == encoding_id and encoding["hierarchical"] is False
    assert encoding["url"] == f"{SHOWCASE}coding.cgi?id={encoding_id}"
    assert encoding["values_total"] == len(expected) > 0
    assert [(v["value"], v["meaning"]) for v in encoding["values"]] == expected
    assert encoding["values_truncated"] is False


def test_large_codings_are_capped_with_their_total(release: Release) -> None:
    (total,) = release.query(
        "SELECT e.value_count FROM ukb_field f JOIN ukb_encoding e "
        "USING (encoding_id) WHERE f.field_id = 20003"
    )[0]
    assert total > 200
    default = get(release, 20003)["encoding"]
    assert len(default["values"]) == 50 and default["values_total"] == total
    assert default["values_truncated"] is True
    assert len(get(release, 20003, value_limit=10_000)["encoding"]["values"]) == 200
    assert get(release, 20003, value_limit=0)["encoding"]["values"] == []


def test_hierarchical_coding_shows_parent_links(release: Release) -> None:
    encoding = get(release, 41270, value_limit=200)["encoding"]
    assert encoding["id"] == 19 and encoding["hierarchical"] is True
    total = release.query("SELECT count(*) FROM ukb_encoding_value WHERE encoding_id = 19")[0][0]
    assert encoding["values_total"] == total
    nodes = {
        r[0]: (r[1], r[2])
        for r in release.query(
            "SELECT node_id, value, meaning FROM ukb_encoding_value WHERE encoding_id = 19"
        )
    }
    linked = [v for v in encoding["values"] if v["parent"] is not None]
    assert len(linked) == len(encoding["values"])  # every listed code sits under a block
    for value in linked:
        parent = value["parent"]
        assert nodes[parent["node_id"]] == (parent["value"], parent["meaning"])
    by_value = {v["value"]: v for v in encoding["values"]}
    assert by_value["A000"]["parent"]["value"] == "A00"
    roots = encoding["top_level"]
    assert encoding["top_level_total"] == 22 and len(roots) == 22
    assert roots[0]["value"] == "Chapter I" and all(r["parent"] is None for r in roots)


def test_coding_without_values_in_the_release_says_so(release: Release) -> None:
    encoding = get(release, 20116)["encoding"]
    loaded = release.query(
        "SELECT values_loaded, num_members FROM ukb_encoding WHERE encoding_id = ?",
        [encoding["id"]],
    )[0]
    assert loaded[0] is False
    assert encoding["values"] is None and encoding["values_status"] == "not_in_release"
    assert encoding["published_value_count"] == loaded[1]


def test_notes_links_become_linked_fields(release: Release) -> None:
    field = get(release, 33)["field"]  # notes point to ~F52~ and ~F34~
    assert {f["id"] for f in field["linked_fields"]} >= {34, 52}
    assert "~F" not in field["notes"] and "field 52" in field["notes"]


def test_every_emitted_url_is_a_showcase_page(release: Release) -> None:
    def urls(value: Any) -> list[str]:
        if isinstance(value, dict):
            own = [v for k, v in value.items() if k.endswith("url") and isinstance(v, str)]
            return own + [u for v in value.values() for u in urls(v)]
        if isinstance(value, list):
            return [u for v in value for u in urls(v)]
        return []

    for field_id in (21001, 41270, 6150, 20116, 738):
        found = urls(get(release, field_id, include_instance_summaries=True))
        assert found and all(u.startswith(SHOWCASE) for u in found), field_id


def test_cli_search_over_ukb_goes_through_the_core(mirror_build: Build) -> None:
    result = run_cli(
        "search", "p21001_i0", "--source", "ukb", "--kind", "field", "--json",
        "--release", str(mirror_build.release), timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    assert payload["results"][0]["id"] == "21001"
    assert {(r["source"], r["kind"]) for r in payload["results"]} == {("ukb", "field")}


# -- evaluation --------------------------------------------------------------------------


def test_eval_set_is_well_formed_and_names_real_fields(release: Release) -> None:
    queries = load_eval("ukb")
    assert len(queries) >= 30
    assert sum(q["kind"] == "paraphrase" for q in queries) >= 20
    ids = {int(i) for q in queries for i in q["relevant"]}
    known = release.query(
        "SELECT count(*) FROM ukb_field WHERE field_id IN (SELECT unnest(?::INTEGER[]))",
        [sorted(ids)],
    )[0][0]
    assert known == len(ids)
    for q in queries:
        assert q["kind"] in ("paraphrase", "keyword", "identifier")
        assert q["relevant"] and all(g in (1, 2, 3) for g in q["relevant"].values())
        assert 3 in q["relevant"].values()
    paraphrase_titles = release.query(
        "SELECT lower(title) FROM ukb_field WHERE field_id IN (SELECT unnest(?::INTEGER[]))",
        [[int(i) for q in queries if q["kind"] == "paraphrase" for i in q["relevant"]]],
    )
    texts = {q["query"].lower() for q in queries if q["kind"] == "paraphrase"}
    assert not texts & {t for (t,) in paraphrase_titles}  # worded differently from titles


def measure(release: Release, queries: list[dict[str, Any]], method: str) -> dict[str, float]:
    """hit@5 (a grade-3 field in the top 5), recall@5/@10 and MRR of the first grade-3."""
    scores = []
    for q in queries:
        results = search(release, q["query"], method=method, limit=10)["results"]
        ranked = [str(item["id"]) for item in results]
        relevant = q["relevant"]
        best = {k: grade for k, grade in relevant.items() if grade == 3}
        scores.append(
            {
                "hit@5": float(any(i in best for i in ranked[:5])),
                "recall@5": recall(ranked, relevant, k=5),
                "recall@10": recall(ranked, relevant),
                "mrr": reciprocal_rank(ranked, best),
            }
        )
    return mean_figures(scores)


@pytest.fixture(scope="module")
def eval_figures(release: Release) -> dict[str, dict[str, dict[str, float]]]:
    title = "UK Biobank eval (tests/eval/ukb.jsonl)"
    queries = calibration_set("ukb")
    return figures_by_kind(queries, METHODS, partial(measure, release), title)


def test_a_paraphrased_query_finds_its_field_in_the_top_5(eval_figures: dict) -> None:
    # Measured with the session build (wordllama): hit@5 keyword 0.341, semantic 0.415,
    # hybrid 0.341; recall@10 0.383 / 0.503 / 0.413; MRR 0.197 / 0.259 / 0.217.
    para = eval_figures["paraphrase"]
    assert para["hybrid"]["hit@5"] >= 0.30
    assert para["semantic"]["hit@5"] >= 0.35
    assert para["hybrid"]["recall@10"] >= 0.35
    assert para["hybrid"]["hit@5"] >= para["keyword"]["hit@5"]
    assert para["hybrid"]["recall@10"] >= para["keyword"]["recall@10"]
    assert para["hybrid"]["mrr"] >= para["keyword"]["mrr"]
    assert para["semantic"]["hit@5"] > para["keyword"]["hit@5"]


def test_keyword_and_identifier_queries(eval_figures: dict) -> None:
    # Measured: keyword-style hit@5 0.833 (keyword, hybrid), 0.75 (semantic); identifiers
    # rank their field first under keyword and hybrid (MRR 1.0).
    assert eval_figures["keyword"]["hybrid"]["hit@5"] >= 0.75
    assert eval_figures["keyword"]["keyword"]["hit@5"] >= 0.75
    for method in ("keyword", "hybrid"):
        assert eval_figures["identifier"][method]["mrr"] == 1.0


# -- priors from the Showcase's own structure ---------------------------------------------


def ukb_ids(release: Release, query: str, **arguments: Any) -> list[int]:
    payload = call_tool(release, "search_ukb_fields", {"query": query, "limit": 10, **arguments})
    scores = [item["scores"]["score"] for item in payload["results"]]
    assert scores == sorted(scores, reverse=True), scores
    return [item["id"] for item in payload["results"]]


def search_all_ukb_ids(release: Release, query: str, **arguments: Any) -> list[int]:
    """The UK Biobank fields ``search_all`` lists for ``query``, in its order."""
    arguments = {"query": query, "sources": ["ukb"], "limit": 10, **arguments}
    payload = call_tool(release, "search_all", arguments)
    return [int(item["id"]) for item in payload["results"] if item["kind"] == "field"]


FIELD_LISTS = pytest.mark.parametrize("field_ids", [ukb_ids, search_all_ukb_ids])


@pytest.mark.parametrize(
    ("query", "main", "companion"),
    [
        ("C-reactive protein", 30710, 30712),
        ("blood glucose", 30740, 30742),
        ("creatinine", 30700, 30702),
    ],
)
@FIELD_LISTS
def test_a_measurement_ranks_above_its_qc_companions(
    release: Release, query: str, main: int, companion: int, field_ids: Any
) -> None:
    for method in ("hybrid", "keyword"):
        ids = field_ids(release, query, method=method)
        assert main in ids and ids.index(main) < ids.index(companion), (method, ids)


@FIELD_LISTS
def test_a_query_that_names_the_qualifier_finds_the_companion(
    release: Release, field_ids: Any
) -> None:
    assert field_ids(release, "glucose missing reason")[0] == 30745


@pytest.mark.parametrize(
    ("query", "whole_cohort", "subset"),
    [
        ("diastolic blood pressure", 4079, 12698),  # 476,035 participants against 88,456
        ("systolic blood pressure", 4080, 12697),  # 476,030 against 88,454
    ],
)
@FIELD_LISTS
def test_a_field_of_the_whole_cohort_ranks_above_a_subsets_field(
    release: Release, query: str, whole_cohort: int, subset: int, field_ids: Any
) -> None:
    ids = field_ids(release, query)
    assert whole_cohort in ids
    assert subset not in ids or ids.index(whole_cohort) < ids.index(subset)


def test_the_participants_prior_adds_its_share_in_hybrid_only(release: Release) -> None:
    """``explain=true`` shows what the prior added to each score."""
    from metabundle.search.ranking.policies import UKB_FIELDS
    from metabundle.search.ranking.priors import ukb_fields

    known = ukb_fields(release)
    participants = {field: n for field, _title, n in known.by_docno.values()}
    for method in ("hybrid", "keyword", "semantic"):
        arguments = {"query": "blood pressure", "method": method, "explain": True}
        payload = call_tool(release, "search_ukb_fields", arguments)
        bonuses = {item["id"]: item["scores"]["prior_bonus"] for item in payload["results"]}
        if method != "hybrid":
            assert set(bonuses.values()) == {0.0}, method
            continue
        for field, bonus in bonuses.items():
            share = participants[field] / known.most_participants
            assert bonus == pytest.approx(UKB_FIELDS.participants_weight * share, abs=1e-6)
        assert any(bonuses.values())
        assert payload["retrieval"]["weights"]["participants_prior"] == 0.2


@FIELD_LISTS
def test_equal_titles_rank_by_participants(release: Release, field_ids: Any) -> None:
    ids = field_ids(release, "qualifications")
    assert ids.index(6138) < ids.index(28056)  # 498,532 participants against 9,943


def test_companion_qualifiers_are_mined_from_the_schema(release: Release) -> None:
    from metabundle.search.ranking.priors import ukb_fields

    known = ukb_fields(release)
    qualifiers = {suffix for _main, suffix in known.companions.main_of.values()}
    assert {"aliquot", "assay date", "missing reason", "correction level"} <= qualifiers
    assert not qualifiers & {"(left)", "(right)", "intake", "(long)", "(pilot)"}
    assert known.companions.main_of[30742] == (30740, "aliquot")


def test_the_priors_know_every_field_document_of_the_release(release: Release) -> None:
    from metabundle.search.ranking.priors import ukb_fields

    known = ukb_fields(release)
    documents = release.query(
        "SELECT d.docno, f.field_id, f.title, coalesce(f.num_participants, 0) FROM search_doc d "
        "JOIN ukb_field f ON d.entity_id = f.field_id::VARCHAR "
        "WHERE d.source = 'ukb' AND d.kind = 'field'"
    )
    assert known.by_docno == {d: (f, t, n) for d, f, t, n in documents}
    assert known.docno_of == {f: d for d, f, _, _ in documents}
    most = release.query("SELECT max(num_participants) FROM ukb_field")[0][0]
    assert known.most_participants == most
    assert ukb_fields(release) is known  # loaded once per opened release
