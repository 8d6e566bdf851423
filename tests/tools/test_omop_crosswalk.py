"""The crosswalk from every source to standard OMOP concepts (``concept_crosswalk``
table, tool and coverage block) on the session build.

Expected links are recomputed here in Python from the release's own ``aou_item``,
``ukb_encoding_value``, ``omop_concept`` and ``omop_concept_relationship`` rows.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from metabundle.index.crosswalk import STRONG_COSINE
from metabundle.search.release import Release
from tests.tools.test_omop_tools import GI_BLEED, K92_2, call, error_of

ICD10_CODING = 19


@pytest.fixture(scope="module")
def standard_of(release: Release) -> dict[int, set[tuple[int, str]]]:
    """Each concept's standard equivalents: itself when valid standard, else its
    valid standard "Maps to" targets."""
    concepts = {
        int(i): (s == "S" and r is None)
        for i, s, r in release.query(
            "SELECT concept_id, standard_concept, invalid_reason FROM omop_concept"
        )
    }
    found: dict[int, set[tuple[int, str]]] = {i: set() for i in concepts}
    for concept_id, ok in concepts.items():
        if ok:
            found[concept_id].add((concept_id, "self"))
    for a, b in release.query(
        "SELECT concept_id_1, concept_id_2 FROM omop_concept_relationship "
        "WHERE relationship_id = 'Maps to' AND invalid_reason IS NULL"
    ):
        if a in concepts and not concepts[a] and concepts.get(b):
            found[a].add((int(b), "Maps to"))
    return found


def links(release: Release, where: str, params: list[Any]) -> set[tuple[Any, ...]]:
    return {
        tuple(r)
        for r in release.query(
            f"SELECT entity_id, concept_id, relationship_id FROM concept_crosswalk WHERE {where}",
            params,
        )
    }


def test_every_all_of_us_item_links_to_its_concepts_standard_equivalents(
    release: Release, standard_of: dict[int, set[tuple[int, str]]]
) -> None:
    expected: set[tuple[Any, ...]] = set()
    for result_id, concept_id in release.query(
        "SELECT result_id, concept_id FROM aou_item WHERE concept_id > 0"
    ):
        if concept_id not in standard_of:
            expected.add((result_id, concept_id, "as_given"))
        else:
            expected |= {(result_id, t, rel) for t, rel in standard_of[concept_id]}
    got = links(release, "source = 'aou'", [])
    assert got == expected
    assert any(rel == "self" for _, _, rel in got) and any(rel == "Maps to" for _, _, rel in got)
    methods = release.query(
        "SELECT DISTINCT method, link_type FROM concept_crosswalk WHERE source = 'aou'"
    )
    assert methods == [("aou_concept_id", "curated")]


def test_a_concept_finds_the_all_of_us_items_recording_it(release: Release) -> None:
    (result_id, concept_id), *_ = release.query(
        "SELECT a.result_id, a.concept_id FROM aou_item a JOIN omop_concept c USING (concept_id) "
        "WHERE a.kind = 'ehr_concept' AND c.standard_concept = 'S' ORDER BY 2 LIMIT 1"
    )
    payload = call(release, "concept_crosswalk", concept_id=concept_id)
    items = payload["sources"]["aou"]["items"]
    assert result_id in {i["entity_id"] for i in items}
    assert all(i["link_type"] == "curated" for i in items)
    item = call(release, "get_aou_item", result_id=result_id)
    assert concept_id in {c["concept_id"] for c in item["linked_concepts"]}


def dotted(value: str) -> str:
    return f"{value[:3]}.{value[3:]}" if len(value) > 3 else value


def test_ukb_icd10_coding_values_link_to_the_standard_concept_their_code_maps_to(
    release: Release, standard_of: dict[int, set[tuple[int, str]]]
) -> None:
    codes: dict[tuple[str, str], int] = {
        (v, c): int(i)
        for i, v, c in release.query(
            "SELECT concept_id, vocabulary_id, concept_code FROM omop_concept "
            "WHERE vocabulary_id IN ('ICD10', 'ICD10CM')"
        )
    }
    expected: set[tuple[Any, ...]] = set()
    for (value,) in release.query(
        "SELECT value FROM ukb_encoding_value WHERE encoding_id = ?", [ICD10_CODING]
    ):
        source = codes.get(("ICD10", dotted(value))) or codes.get(("ICD10CM", dotted(value)))
        if source is not None:
            expected |= {(f"{ICD10_CODING}:{value}", t, r) for t, r in standard_of[source]}
    got = links(release, "source = 'ukb' AND entity_id LIKE ?", [f"{ICD10_CODING}:%"])
    assert got == expected
    assert (f"{ICD10_CODING}:K922", GI_BLEED, "Maps to") in got
    (row,) = release.query_dicts(
        "SELECT * FROM concept_crosswalk WHERE entity_id = ?", [f"{ICD10_CODING}:K922"]
    )
    assert (row["source_concept_id"], row["source_code"], row["link_type"]) == (
        K92_2,
        "K92.2",
        "curated",
    )
    assert "K922" in row["provenance"] and "K92.2" in row["provenance"]


def test_crosswalk_tool_groups_by_source_and_follows_descendants(release: Release) -> None:
    direct = call(release, "concept_crosswalk", concept_id=GI_BLEED)
    assert "19:K922" in {i["entity_id"] for i in direct["sources"]["ukb"]["items"]}
    assert direct["concept"]["concept_id"] == GI_BLEED and direct["include_descendants"]
    # an entity linked to a concept below an ancestor of the vocabulary, and not to
    # the ancestor itself
    (source, entity_id, ancestor), *_ = release.query(
        "SELECT x.source, x.entity_id, a.ancestor_concept_id FROM concept_crosswalk x "
        "JOIN omop_concept_ancestor a ON a.descendant_concept_id = x.concept_id "
        "JOIN omop_concept c ON c.concept_id = a.ancestor_concept_id "
        "WHERE a.min_levels_of_separation > 0 AND NOT EXISTS (SELECT 1 FROM "
        "concept_crosswalk y WHERE y.entity_id = x.entity_id "
        "AND y.concept_id = a.ancestor_concept_id) ORDER BY 3, 2 LIMIT 1"
    )
    below = call(release, "concept_crosswalk", concept_id=ancestor, limit=500)
    assert entity_id in {i["entity_id"] for i in below["sources"][source]["items"]}
    only = call(
        release, "concept_crosswalk", concept_id=ancestor, include_descendants=False, limit=500
    )
    listed = only["sources"].get(source, {"items": []})["items"]
    assert entity_id not in {i["entity_id"] for i in listed}
    for group in below["sources"].values():
        assert group["links"] >= len(group["items"])
        for item in group["items"]:
            assert item["athena_url"].endswith(str(item["concept_id"]))


def test_each_source_lists_only_its_own_links(release: Release) -> None:
    """A concept recorded by several sources: each source's group holds its links and
    no other source's."""
    ((concept_id,),) = release.query(
        "SELECT concept_id FROM concept_crosswalk GROUP BY 1 "
        "HAVING count(DISTINCT source) > 1 ORDER BY count(*), 1 LIMIT 1"
    )
    payload = call(release, "concept_crosswalk", concept_id=concept_id, limit=500)
    assert len(payload["sources"]) > 1
    for source, group in payload["sources"].items():
        own = {
            entity_id
            for (entity_id,) in release.query(
                "SELECT entity_id FROM concept_crosswalk WHERE source = ?", [source]
            )
        }
        assert group["items"] and {item["entity_id"] for item in group["items"]} <= own
        assert len(group["items"]) <= group["links"]
        assert group["truncated"] == (group["links"] > len(group["items"]))


def test_similarity_links_are_labelled_and_strong(release: Release) -> None:
    rows = release.query_dicts(
        "SELECT * FROM concept_crosswalk WHERE method = 'embedding_similarity'"
    )
    assert rows
    assert {r["source"] for r in rows} <= {"ukb", "dbgap"}
    for row in rows:
        assert row["link_type"] == "similarity" and row["score"] >= STRONG_COSINE
        assert row["relationship_id"] is None and "not a curated mapping" in row["provenance"]
    for row in rows[:: max(1, len(rows) // 20)]:  # the concept named is the one linked
        ((vocabulary, code, name),) = release.query(
            "SELECT vocabulary_id, concept_code, concept_name FROM omop_concept "
            "WHERE concept_id = ?",
            [row["concept_id"]],
        )
        assert f"({vocabulary} {code} {name!r})" in row["provenance"]
        (entity_docno,), (concept_docno,) = (
            release.query(
                "SELECT docno FROM search_doc WHERE source = ? AND entity_id = ? AND kind = ?",
                [source, entity, kind],
            )[0]
            for source, entity, kind in (
                (row["source"], row["entity_id"], row["entity_kind"]),
                ("omop", str(row["concept_id"]), "concept"),
            )
        )
        vectors = np.asarray(release.vectors[[entity_docno, concept_docno]], np.float32)
        assert float(vectors[0] @ vectors[1]) == pytest.approx(row["score"], abs=2e-3)
    assert not release.query(
        "SELECT 1 FROM concept_crosswalk WHERE link_type = 'similarity' "
        "AND method <> 'embedding_similarity'"
    )
    concept_id = rows[0]["concept_id"]
    payload = call(release, "concept_crosswalk", concept_id=concept_id, include_descendants=False)
    listed = [i for s in payload["sources"].values() for i in s["items"]]
    assert any(i["link_type"] == "similarity" for i in listed)
    curated = call(
        release,
        "concept_crosswalk",
        concept_id=concept_id,
        include_descendants=False,
        include_similarity=False,
    )
    assert all(i["link_type"] == "curated" for s in curated["sources"].values() for i in s["items"])


def test_ukb_fields_show_their_linked_concepts(release: Release) -> None:
    (field_id, concept_id), *_ = release.query(
        "SELECT entity_id, concept_id FROM concept_crosswalk "
        "WHERE method = 'ukb_field_vocabulary' ORDER BY 1"
    )
    payload = call(release, "get_ukb_field", field_id=int(field_id))
    (linked,) = payload["linked_concepts"]
    assert (linked["concept_id"], linked["method"]) == (concept_id, "ukb_field_vocabulary")


def test_coverage_block_reports_the_share_linked_by_method(release: Release) -> None:
    manifest = json.loads((release.path / "manifest.json").read_text())
    block = manifest["coverage"]["crosswalk"]
    assert block["similarity_min_cosine"] == STRONG_COSINE
    entities = {
        "aou_item": "SELECT count(*) FROM aou_item WHERE concept_id > 0",
        "ukb_field": "SELECT count(*) FROM ukb_field",
        "dbgap_variable": "SELECT count(*) FROM dbgap_variable",
    }
    for name, sql in entities.items():
        entry = block["sources"][name]
        assert entry["entities"] == release.query(sql)[0][0]
        source, kind = name.split("_", 1)
        where = "source = ?" + ("" if kind == "item" else " AND entity_kind = ?")
        args = [source] if kind == "item" else [source, kind]
        linked = release.query(
            f"SELECT count(DISTINCT entity_id) FROM concept_crosswalk WHERE {where}", args
        )[0][0]
        assert entry["linked"] == linked
        assert entry["share_linked"] == round(linked / entry["entities"], 6)
        assert sum(m["linked"] for m in entry["by_method"].values()) >= linked
    assert block["sources"]["ukb_encoding_value"]["by_method"]


def test_unknown_concept_is_not_found(release: Release) -> None:
    assert error_of(release, "concept_crosswalk", concept_id=999_999_999)["code"] == "not_found"
