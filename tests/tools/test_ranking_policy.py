"""The ranking pipeline and its policy table: every search tool names its policy, the
table drives the ranking, services hold no ranking arithmetic, scores never rise."""

from __future__ import annotations

import ast
import re
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import metabundle.search.services as services
from metabundle.index.ann import filtered_search
from metabundle.index.tokenizer import tokenize
from metabundle.index.variants import ALTERNATIVE_WEIGHT
from metabundle.index.vector_file import VectorFile
from metabundle.search.ranking.pipeline import candidates, new_retrieval, rank
from metabundle.search.ranking.policies import (
    AOU_CATALOG,
    POLICIES,
    SEARCH_ALL,
    UKB_FIELDS,
    Fusion,
)
from metabundle.search.ranking.stages import query_words, title_candidates, title_match
from metabundle.search.release import Release
from metabundle.search.retrieval import (
    documents,
    mask_from_sql,
    semantic_candidates,
    source_mask,
)
from metabundle.search.tools import call_tool

SEARCHES: list[tuple[str, dict[str, Any], str]] = [
    ("search_ukb_fields", {"query": "blood glucose"}, "ukb_fields"),
    ("search_aou_catalog", {"query": "smoking"}, "aou_catalog"),
    ("search_idc", {"query": "lung ct"}, "idc_search"),
    ("search_all", {"query": "body mass index"}, "search_all"),
    (
        "search_dbgap_catalog",
        {"query": "blood pressure", "study_id": "phs000286.v7.p2"},
        "dbgap_catalog",
    ),
    (
        "search_dbgap_catalog",
        {"query": "protocol", "study_id": "phs000286.v7.p2", "kind": "document"},
        "dbgap_documents",
    ),
    ("embedding_search", {"query": "heart attack"}, "omop_embedding"),
]
SIGNAL = re.compile(r"score|weight|boost|bm25|cosine|similarity|rrf", re.IGNORECASE)


def call(release: Release, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    payload = call_tool(release, tool, arguments)
    assert "error" not in payload, payload
    return payload


@pytest.mark.parametrize(("tool", "arguments", "policy"), SEARCHES)
def test_every_search_tool_names_its_policy_and_explains_it_on_request(
    release: Release, tool: str, arguments: dict[str, Any], policy: str
) -> None:
    short = call(release, tool, arguments)["retrieval"]
    assert short["policy"] == policy and "explain" not in short
    if tool == "embedding_search":
        return  # its parameters are the OMOP contract's
    explained = call(release, tool, {**arguments, "explain": True})["retrieval"]
    assert explained["explain"]["policy"] == policy
    assert explained["explain"]["score_formula"] == POLICIES[policy].formula


def test_the_policy_table_drives_the_ranking(release: Release) -> None:
    aou = mask_from_sql(release, "source = 'aou'", [])
    production, _ = rank(
        release, "903096", policy=AOU_CATALOG, method="keyword", mask=aou, limit=20
    )
    stricter = replace(AOU_CATALOG, max_per_title=1)
    strict, _ = rank(release, "903096", policy=stricter, method="keyword", mask=aou, limit=20)

    def most_per_title(hits: list) -> int:
        rows = documents(release, [h.docno for h in hits])
        return max(
            Counter((rows[h.docno]["title"], rows[h.docno]["domain"]) for h in hits).values()
        )

    assert most_per_title(production) == 2 and most_per_title(strict) == 1
    fields = mask_from_sql(release, "source = 'ukb' AND kind = 'field'", [])
    unboosted = replace(UKB_FIELDS, boosts={}, fusion=Fusion("weighted", 0.6, 0.4))
    boosted, _ = rank(release, "21001", policy=UKB_FIELDS, method="hybrid", mask=fields, limit=3)
    plain, _ = rank(release, "21001", policy=unboosted, method="hybrid", mask=fields, limit=3)
    assert boosted[0].exact and boosted[0].boost == UKB_FIELDS.boosts["id"]
    assert plain[0].exact and plain[0].boost == 0 and plain[0].score < boosted[0].score


def _signal_names(node: ast.AST) -> list[str]:
    found = []
    for child in ast.walk(node):
        if isinstance(child, ast.Name):
            found.append(child.id)
        elif isinstance(child, ast.Attribute):
            found.append(child.attr)
        elif isinstance(child, ast.Subscript) and isinstance(child.slice, ast.Constant):
            found.append(str(child.slice.value))
    return [name for name in found if SIGNAL.search(name)]


def ranking_arithmetic(source: str) -> list[str]:
    """Arithmetic on ranking signals, and fusions or policies built, in a module."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.BinOp | ast.AugAssign) and _signal_names(node):
            found.append(f"line {node.lineno}: {ast.unparse(node)}")
        built = isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
        if built and node.func.id in ("Fusion", "Policy", "Hit"):
            found.append(f"line {node.lineno}: builds a {node.func.id}")
    return found


def test_the_check_finds_ranking_arithmetic() -> None:
    assert ranking_arithmetic("score = 0.6 * hit.keyword + 0.4 * cosine")
    assert ranking_arithmetic("hit.score += BONUS")
    assert ranking_arithmetic("FUSION = Fusion('weighted', 0.3, 0.7)")
    assert not ranking_arithmetic("offset = page * size + 1")


def test_services_hold_no_ranking_arithmetic() -> None:
    folder = Path(services.__file__).parent
    found = {
        path.name: problems
        for path in sorted(folder.glob("*.py"))
        if (problems := ranking_arithmetic(path.read_text(encoding="utf-8")))
    }
    assert found == {}, "ranking rules belong in metabundle/search/ranking"


@pytest.mark.parametrize("method", ["keyword", "semantic", "hybrid"])
@pytest.mark.parametrize(
    ("tool", "query"),
    [
        ("search_ukb_fields", "blood glucose"),
        ("search_ukb_fields", "qualifications"),
        ("search_ukb_fields", "21001"),
        ("search_aou_catalog", "Smoking_100CigsLifetime"),
        ("search_aou_catalog", "survey questions about sleep"),
        ("search_idc", "breast mri"),
    ],
)
def test_scores_never_rise_as_rank_falls(
    release: Release, tool: str, query: str, method: str
) -> None:
    results = call(release, tool, {"query": query, "method": method})["results"]
    scores = [item["scores"]["score"] for item in results]
    assert results and scores == sorted(scores, reverse=True), scores


def test_hybrid_weighs_what_a_keyword_match_covers(release: Release) -> None:
    """A paraphrase whose best keyword match holds one of its words: over the query's
    ideal BM25 that match counts for what it covers, not 1.0 for being the best."""
    query = "how much money the family earns per year"
    payload = call_tool(release, "search_ukb_fields", {"query": query, "limit": 10})
    assert payload["retrieval"]["weights"]["keyword_scaling"] == "over_ideal_bm25"
    ideal = release.keywords.ideal_score(query)
    matched = [i["scores"] for i in payload["results"] if i["scores"].get("keyword_bm25")]
    assert matched
    for scores in matched:
        assert scores["keyword"] == pytest.approx(scores["keyword_bm25"] / ideal, abs=1e-5)
        assert scores["keyword"] < 0.5
    keyword_only = call_tool(
        release, "search_ukb_fields", {"query": query, "method": "keyword", "limit": 1}
    )
    assert keyword_only["results"][0]["scores"]["keyword"] == 1.0  # over the best there


def test_search_all_ranks_omop_concepts_with_the_omop_fusion(release: Release) -> None:
    """OMOP concepts are ranked with the keyword signal to the fourth power: a concept
    matching half of the query's weight adds 0.3 * 0.5 ** 4, not 0.3 * 0.5. search_all
    over OMOP alone lists what that policy ranks, and its weights say so; another
    source is ranked with the plain fusion."""
    query = "kidney infection"
    payload = call_tool(release, "search_all", {"query": query, "sources": ["omop"], "limit": 10})
    weights = payload["retrieval"]["weights"]
    assert "keyword_power" not in weights  # search_all's fusion, then the sources' own
    assert weights["per_source"] == {
        "omop": {
            "fusion": "weighted",
            "keyword": 0.3,
            "semantic": 0.7,
            "semantic_scaling": "min_max",
            "keyword_scaling": "over_ideal_bm25",
            "keyword_power": 4.0,
            "title_match": 0.2,
        }
    }
    omop = SEARCH_ALL.for_source("omop")
    assert omop.fusion.keyword_power == 4.0 and SEARCH_ALL.for_source("ukb") is SEARCH_ALL
    hits, _ = rank(
        release, query, policy=omop, method="hybrid", mask=source_mask(release, ["omop"]), limit=10
    )
    assert [str(i["id"]) for i in payload["results"]] == [
        documents(release, [h.docno])[h.docno]["entity_id"] for h in hits
    ]
    partial = [h for h in hits if h.keyword is not None and 0 < h.keyword_scaled < 1]
    assert partial  # the query's words are in different concepts
    for hit in hits:
        expected = 0.3 * hit.keyword_scaled**4 + 0.7 * hit.semantic_scaled + 0.2 * hit.title_match
        assert hit.score == pytest.approx(expected, abs=1e-6)


def test_the_title_match_puts_a_title_equal_to_the_query_first(release: Release) -> None:
    payload = call_tool(release, "search_ukb_fields", {"query": "cholesterol", "limit": 10})
    first = payload["results"][0]
    assert first["title"] == "Cholesterol" and first["scores"]["title_match"] == 1.0
    terms = set(tokenize("cholesterol"))
    for item in payload["results"]:
        expected = title_match(terms, set(tokenize(item["title"])))
        assert item["scores"]["title_match"] == pytest.approx(expected, abs=1e-6)
    assert title_match({"a", "b"}, {"a", "c", "d"}) == pytest.approx(1 / 6)
    assert title_match(set(), {"a"}) == 0.0


def test_hybrid_embeds_the_abbreviation_rewrites_of_the_query_too(release: Release) -> None:
    """The query's text rewritten by an abbreviation the documents spell out is searched
    beside it; each document keeps its best cosine, a rewrite's weighted."""
    query = "forced vital capacity"
    texts = release.keywords.variants.alternative_texts(query)
    assert texts == ["FVC"]
    fields = mask_from_sql(release, "source = 'ukb' AND kind = 'field'", [])
    asked = release.embed_queries([query, *texts]).astype("float32")

    def cosines(docno: int) -> Any:
        return asked @ release.vectors[docno].astype("float32")

    plain = dict(semantic_candidates(release, query, fields, 50))
    assert dict(semantic_candidates(release, query, fields, 50, variants=False)) == plain
    both = dict(semantic_candidates(release, query, fields, 50, variants=True))
    raised = set()
    for docno, score in both.items():
        own, *rewrites = cosines(docno)
        assert score == pytest.approx(
            max(own, *(ALTERNATIVE_WEIGHT * c for c in rewrites)), abs=1e-3
        )
        if score > own + 1e-3:
            raised.add(docno)
    assert raised  # documents the rewrite brings closer
    # hybrid asks for the rewrites when its policy says so; semantic never does
    hybrid = pipeline_semantic(release, query, UKB_FIELDS, fields, "hybrid")
    assert all(hybrid[d] == pytest.approx(both[d], abs=1e-6) for d in raised if d in hybrid)
    assert raised & set(hybrid)
    for policy, method in (
        (replace(UKB_FIELDS, semantic_variants=False), "hybrid"),
        (UKB_FIELDS, "semantic"),
    ):
        found = pipeline_semantic(release, query, policy, fields, method)
        assert all(found[d] == pytest.approx(cosines(d)[0], abs=1e-3) for d in found)


def test_a_source_kept_whole_is_searched_through_its_index(
    release: Release, monkeypatch: pytest.MonkeyPatch
) -> None:
    """search_all masks each source whole; such a source is searched as with no mask
    (its index's candidates re-scored), not by reading and scoring all its vectors."""
    docnos = release.source_ranges["omop"]
    vectors = release.vectors
    read: list[int] = []
    read_rows = type(vectors).__getitem__

    def counted(self: VectorFile, rows: Any) -> np.ndarray:
        asked = range(len(self))[rows] if isinstance(rows, slice) else np.asarray(rows)
        read.append(len(asked) if isinstance(asked, range) else asked.size)
        return read_rows(self, rows)

    monkeypatch.setattr(type(vectors), "__getitem__", counted)
    found = semantic_candidates(release, "heart attack", source_mask(release, ["omop"]), 50)
    assert sum(read) < len(docnos) / 2  # the candidates, not the whole source
    index = release.ann_index("omop")
    keys, scores = filtered_search(
        index, vectors, release.embed_queries(["heart attack"])[0], 50, None
    )
    assert found == [(int(k), float(s)) for k, s in zip(keys, scores, strict=True)]
    assert all(docnos.start <= d < docnos.stop for d, _ in found)


def pipeline_semantic(
    release: Release, query: str, policy: Any, mask: Any, method: str
) -> dict[int, float]:
    """The semantic candidates ``rank`` gathers for ``query`` under ``policy``."""
    retrieval = new_retrieval(release, policy, method)
    _exact, lists = candidates(release, query, policy, mask, 10, retrieval)
    return dict(lists["semantic"])


PLAIN_TITLE_SIMILARITY = """
WITH words AS (SELECT DISTINCT unnest(?::VARCHAR[]) AS word),
scope AS (SELECT docno, lower(title) AS title FROM search_doc WHERE source = 'aou'),
best AS (
    SELECT docno, word, max(jaro_winkler_similarity(word, token)) AS similarity
    FROM (SELECT docno, unnest(regexp_split_to_array(title, '[^a-z0-9]+')) AS token FROM scope),
         words
    WHERE length(token) > 1 GROUP BY ALL
)
SELECT docno, greatest(jaro_winkler_similarity(title, ?), coalesce(round(b.words, 9), 0.0))
FROM scope JOIN (SELECT docno, avg(similarity) AS words, max(similarity) AS closest
                 FROM best GROUP BY docno) b
USING (docno)
WHERE b.closest >= ?
"""


@pytest.mark.parametrize(
    "query",
    ["smokng", "diabetis type 2", "hypertenshun medicaton use", "insomnya sleeping too much"],
)
def test_the_title_fallback_finds_what_comparing_every_title_finds(
    release: Release, query: str
) -> None:
    """The fallback reads only the titles holding a word close to one of the query's
    words (through the release's title words) and compares each distinct word of theirs
    once; it finds the titles, with the similarities, that the rule computed over every
    word of every title finds."""
    aou = mask_from_sql(release, "source = 'aou'", [])
    found = title_candidates(release, query, aou, AOU_CATALOG)
    plain = release.query(
        PLAIN_TITLE_SIMILARITY,
        [
            query_words(query),
            " ".join(query.lower().split()),
            AOU_CATALOG.title_similarity_min,
        ],
    )
    kept = sorted(
        ((int(d), s) for d, s in plain if s >= AOU_CATALOG.title_similarity_min),
        key=lambda pair: (-pair[1], pair[0]),
    )
    assert found and len(found) == min(len(kept), AOU_CATALOG.title_pool)
    assert [round(s, 9) for _, s in found] == [round(s, 9) for _, s in kept[: len(found)]]
    top = {d for d, s in kept if s > found[-1][1] + 1e-9}  # above the cut, ties aside
    assert top <= {d for d, _ in found}


def test_a_title_holding_no_close_word_is_no_fallback_candidate(release: Release) -> None:
    """The title "Addiction" is as close to "ADHD medications" as a whole string as the
    threshold asks, yet holds no word close to either query word: the fallback leaves
    it out and still finds the ADHD medication question."""
    aou = mask_from_sql(release, "source = 'aou'", [])
    ((addiction, whole),) = release.query(
        "SELECT docno, jaro_winkler_similarity(lower(title), 'adhd medications') "
        "FROM search_doc WHERE source = 'aou' AND title = 'Addiction'"
    )
    assert whole >= AOU_CATALOG.title_similarity_min
    found = dict(title_candidates(release, "ADHD medications", aou, AOU_CATALOG))
    assert addiction not in found
    titles = {r["docno"]: r["title"] for r in release.shown_rows(found, ["docno", "title"])}
    assert any("(ADHD)" in title for title in titles.values())


def test_the_title_words_hold_every_word_of_every_title(release: Release) -> None:
    """``search_title_word`` lists, per source and word, exactly the documents whose
    title holds the word, as the fallback splits titles."""
    ((missing, extra, words),) = release.query(
        """
        WITH plain AS (
            SELECT DISTINCT source, unnest(regexp_split_to_array(lower(title), '[^a-z0-9]+'))
                AS word, docno
            FROM search_doc
        ), kept AS (SELECT * FROM plain WHERE length(word) > 1),
        listed AS (SELECT source, word, unnest(docnos) AS docno FROM search_title_word)
        SELECT (SELECT count(*) FROM (SELECT * FROM kept EXCEPT SELECT * FROM listed)),
               (SELECT count(*) FROM (SELECT * FROM listed EXCEPT SELECT * FROM kept)),
               (SELECT count(*) FROM search_title_word)
        """
    )
    assert (missing, extra) == (0, 0) and words > 10_000
