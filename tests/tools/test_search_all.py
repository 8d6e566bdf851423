"""The cross-source search: every source answers, the CLI returns the core's payload,
and the contract's degrade and fail rules hold."""

from __future__ import annotations

import json

import pytest

from metabundle.index.vector_file import unrelated_cosine
from metabundle.search.ranking.merge import rank_all
from metabundle.search.ranking.policies import SEARCH_ALL
from metabundle.search.release import Release
from metabundle.search.retrieval import unmatched_hit
from metabundle.search.tools import call_tool
from tests.support.build import Build
from tests.support.cli import run_cli

# A query per source whose best hits must include that source, by each method.
SOURCE_QUERIES = {
    "dbgap": "systolic blood pressure",
    "ukb": "body mass index",
    "aou": "smoked 100 cigarettes",
    "omop": "gastrointestinal hemorrhage",
    "idc": "breast cancer MRI collection",
}


@pytest.mark.parametrize("method", ["keyword", "semantic", "hybrid"])
@pytest.mark.parametrize("source", sorted(SOURCE_QUERIES))
def test_every_source_answers_every_method(release: Release, source: str, method: str) -> None:
    payload = call_tool(
        release,
        "search_all",
        {"query": SOURCE_QUERIES[source], "method": method, "sources": [source], "limit": 5},
    )
    assert "error" not in payload, payload
    assert payload["results"], f"{method} finds nothing in {source}"
    assert {item["source"] for item in payload["results"]} == {source}
    assert payload["retrieval"]["effective_method"] == method
    assert payload["retrieval"]["scores_calibrated"] is False


def test_one_list_spans_sources(release: Release) -> None:
    payload = call_tool(release, "search_all", {"query": "heart attack", "limit": 15})
    assert len({item["source"] for item in payload["results"]}) >= 3


def test_exact_identifier_ranks_first(release: Release) -> None:
    payload = call_tool(release, "search_all", {"query": "21001", "limit": 3})
    first = payload["results"][0]
    assert (first["source"], first["id"], first["scores"]["exact_match"]) == ("ukb", "21001", True)
    assert first["scores"]["score"] >= max(i["scores"]["score"] for i in payload["results"])


@pytest.mark.parametrize(
    "query", ["body mass index", "heart attack", "tumor status", "K92.2", "age at menarche"]
)
def test_scores_never_rise_as_rank_falls(release: Release, query: str) -> None:
    results = call_tool(release, "search_all", {"query": query, "limit": 30})["results"]
    scores = [item["scores"]["score"] for item in results]
    assert scores == sorted(scores, reverse=True) and len(scores) >= 20


@pytest.mark.parametrize("query", ["21001", "p21001_i0", "K92.2"])
def test_an_identifier_found_exactly_has_nothing_unrelated_behind_it(
    release: Release, query: str
) -> None:
    """A lookup ("21001", an alias, a code) returns what it names first and behind it
    only documents that name it too; the embedding's neighbours of an identifier are
    chance, and come back only when asked for (method=semantic)."""
    results = call_tool(release, "search_all", {"query": query, "limit": 30})["results"]
    assert results[0]["scores"]["exact_match"]
    assert all(i["scores"]["exact_match"] or i["scores"]["keyword"] is not None for i in results)
    semantic = call_tool(release, "search_all", {"query": query, "method": "semantic"})
    assert len(semantic["results"]) == 10
    assert any(i["scores"]["keyword"] is None for i in semantic["results"])
    words = call_tool(release, "search_all", {"query": "body mass index", "sources": ["idc"]})
    assert any(i["scores"]["keyword"] is None for i in words["results"])  # words: not a lookup
    ukb = call_tool(release, "search_ukb_fields", {"query": "21001", "limit": 10})["results"]
    assert str(ukb[0]["id"]) == "21001" and all(
        i["scores"]["exact_match"] or i["scores"].get("keyword_bm25") for i in ukb
    )


def test_each_source_contributes_its_best_hits(release: Release) -> None:
    """Every source that matches "heart attack" has its best hit in the first round;
    IDC, whose collections hold neither word, comes after them."""
    payload = call_tool(release, "search_all", {"query": "heart attack", "limit": 10})
    first_round = [item["source"] for item in payload["results"][:4]]
    assert sorted(first_round) == ["aou", "dbgap", "omop", "ukb"]
    assert payload["retrieval"]["merge"].startswith("each source ranked on its own")
    semantic = call_tool(release, "search_all", {"query": "heart attack", "method": "semantic"})
    assert {i["source"] for i in semantic["results"][:5]} == set(release.manifest["sources"])


@pytest.mark.parametrize(
    ("query", "sources"),
    [
        ("age at menarche", None),
        ("trouble sleeping at night most days", None),
        ("heart attack", ["idc", "ukb"]),
        ("heart attack", ["idc", "omop"]),
    ],
)
def test_a_source_that_matches_nothing_comes_after_the_matches(
    release: Release, query: str, sources: list[str] | None
) -> None:
    """From a source's first hit that holds less than the policy's share of the query's
    ideal keyword score (no word, or one common word of a longer query) and that is no
    closer to the query than unrelated documents are to each other, that source's hits
    come after every other source's matched hits; each source keeps its own order, and
    the tool answers with exactly this ranking."""
    threshold, share = release.unrelated_cosine, SEARCH_ALL.unmatched_last
    assert threshold is not None and share is not None
    chosen = sources or sorted(release.manifest["sources"])
    merged = rank_all(release, query, method="hybrid", sources=chosen, kinds_mask=None, limit=50)
    source_of = [merged.rows[hit.docno]["source"] for hit in merged.hits]
    tail_start: dict[str, int] = {}
    for position, hit in enumerate(merged.hits):
        if unmatched_hit(hit, threshold, share):
            tail_start.setdefault(source_of[position], position)
    tails = [p for p, s in enumerate(source_of) if p >= tail_start.get(s, len(source_of))]
    heads = [p for p in range(len(source_of)) if p not in set(tails)]
    assert tails and heads and max(heads) < min(tails)
    arguments = {"query": query, "limit": 50, **({"sources": sources} if sources else {})}
    results = call_tool(release, "search_all", arguments)["results"]
    assert [i["id"] for i in results] == [merged.rows[h.docno]["entity_id"] for h in merged.hits]
    for source in set(source_of):
        alone = call_tool(release, "search_all", {"query": query, "sources": [source], "limit": 50})
        ids = [i["id"] for i in results if i["source"] == source]
        assert ids == [i["id"] for i in alone["results"]][: len(ids)]


def test_one_common_word_of_a_long_query_is_not_a_match(release: Release) -> None:
    """Hits that share one word of "trouble sleeping at night most days" with the query
    but hold less than the policy's share of its ideal keyword score, and are far from
    it, do not take places before other sources' matches."""
    threshold, share = release.unrelated_cosine, SEARCH_ALL.unmatched_last
    assert threshold is not None and share is not None
    query = "trouble sleeping at night most days"
    merged = rank_all(
        release,
        query,
        method="hybrid",
        sources=sorted(release.manifest["sources"]),
        kinds_mask=None,
        limit=50,
    )
    weak = [h for h in merged.hits if h.keyword is not None and unmatched_hit(h, threshold, share)]
    assert weak and all(0 < h.keyword_scaled < share for h in weak)
    first_weak = merged.hits.index(weak[0])
    assert all(
        h.keyword_scaled >= share or h.semantic >= threshold for h in merged.hits[:first_weak]
    )


def test_a_question_one_source_answers_is_not_diluted_by_the_others(release: Release) -> None:
    """Only dbGaP's data dictionaries name menarche in this build: its two menarche
    variables come first, before any other source's nearest (and unrelated) titles."""
    results = call_tool(release, "search_all", {"query": "age at menarche"})["results"]
    assert [i["source"] for i in results[:2]] == ["dbgap", "dbgap"]
    assert all("menarche" in i["title"].lower() for i in results[:2])
    assert all(i["scores"]["keyword"] is not None for i in results)


def test_versions_of_one_variable_collapse_and_say_so(release: Release) -> None:
    (description,) = release.query(
        "SELECT v7.description FROM dbgap_variable v7 JOIN dbgap_variable v6 "
        "USING (variable_base) WHERE v7.study_accession = 'phs000286.v7.p2' "
        "AND v6.study_accession = 'phs000286.v6.p2' AND length(v7.description) > 30 "
        "ORDER BY v7.variable_id LIMIT 1"
    )[0]
    arguments = {"query": description, "sources": ["dbgap"], "kinds": ["variable"], "limit": 10}
    payload = call_tool(release, "search_all", arguments)
    bases = [item["id"].split("/")[-1].split(".")[0] for item in payload["results"]]
    assert len(bases) == len(set(bases))  # one hit per variable, whatever its versions
    assert payload["results"][0]["versions_collapsed"] >= 1
    assert payload["versions_collapsed"] >= 1


def test_survey_answers_fold_into_their_questions(release: Release) -> None:
    payload = call_tool(
        release,
        "search_all",
        {"query": "have you smoked at least 100 cigarettes", "sources": ["aou"], "limit": 10},
    )
    kinds = [item["kind"] for item in payload["results"]]
    assert "answer" not in kinds
    assert "100 cigarettes" in payload["results"][0]["title"]
    titles = [(i["source"], i["kind"], i["title"].lower()) for i in payload["results"]]
    assert len(titles) == len(set(titles))


def test_cli_json_is_the_core_payload(mirror_build: Build, release: Release) -> None:
    arguments = {"query": "blood pressure", "method": "keyword", "limit": 4, "sources": ["dbgap"]}
    result = run_cli(
        "search",
        "blood pressure",
        "--method",
        "keyword",
        "--limit",
        "4",
        "--source",
        "dbgap",
        "--json",
        "--release",
        str(mirror_build.release),
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == call_tool(release, "search_all", arguments)


def test_without_query_embeddings_hybrid_degrades_and_semantic_fails(mirror_build: Build) -> None:
    release = str(mirror_build.release)
    off = {"METABUNDLE_EMBEDDINGS_ENABLED": "0"}
    hybrid = run_cli("search", "body mass", "--json", "--release", release, **off)
    assert hybrid.returncode == 0, hybrid.stderr
    retrieval = json.loads(hybrid.stdout)["retrieval"]
    assert retrieval["degraded"] is True and retrieval["effective_method"] == "keyword"
    assert "METABUNDLE_EMBEDDINGS_ENABLED" in retrieval["degraded_reason"]
    semantic = run_cli(
        "search", "body mass", "--method", "semantic", "--json", "--release", release, **off
    )
    assert semantic.returncode == 1
    assert json.loads(semantic.stdout)["error"]["code"] == "embeddings_unavailable"


def test_human_output_lists_ranked_results_with_links(mirror_build: Build) -> None:
    result = run_cli("search", "4d_lung", "--release", str(mirror_build.release), "--limit", "2")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[1].startswith("  1. [idc/collection] 4d_lung")
    assert lines[2].strip().startswith("https://portal.imaging.datacommons.cancer.gov/")


def test_cli_call_returns_any_tool_payload(mirror_build: Build, release: Release) -> None:
    arguments = {"field_id": "p21001_i0"}
    result = run_cli(
        "call", "get_ukb_field", json.dumps(arguments), "--release", str(mirror_build.release)
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == call_tool(release, "get_ukb_field", arguments)
    missing = run_cli(
        "call", "get_ukb_field", '{"field_id": 999999999}', "--release", str(mirror_build.release)
    )
    assert missing.returncode == 1
    assert json.loads(missing.stdout)["error"]["code"] == "not_found"


NONSENSE = "xqzvbn plorf"


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("search_all", {}),
        ("search_ukb_fields", {}),
        ("search_idc", {}),
        ("search_aou_catalog", {}),
        ("search_dbgap_catalog", {"study_id": "phs000286.v6.p2"}),
    ],
)
def test_a_query_that_matches_nothing_says_so(
    release: Release, tool: str, arguments: dict[str, str]
) -> None:
    payload = call_tool(release, tool, {"query": NONSENSE, **arguments})
    retrieval = payload["retrieval"]
    assert retrieval["low_confidence"] is True
    assert "random pairs" in retrieval["low_confidence_rule"]


@pytest.mark.parametrize("query", ["heart attack", "21001", "body mass index"])
def test_a_query_that_matches_is_not_low_confidence(release: Release, query: str) -> None:
    retrieval = call_tool(release, "search_all", {"query": query})["retrieval"]
    assert retrieval["low_confidence"] is False and "low_confidence_rule" not in retrieval


def test_the_unrelated_cosine_comes_from_the_release_itself(release: Release) -> None:
    recorded = release.search_info["unrelated_cosine"]  # the build measured it once
    assert release.unrelated_cosine == recorded and 0.0 < recorded < 1.0
    assert release.vectors is not None
    assert unrelated_cosine(release.vectors) == recorded  # seeded: the same every time
