"""The concept-graph tools (ancestors, descendants, relationships, paths, codes,
nearest standard ancestor, ATLAS concept sets, embedding neighbours) over the
session build's vocabularies.

Expected values are computed here, in Python, from the raw rows of the release's
``omop_concept``, ``omop_concept_ancestor`` and ``omop_concept_relationship``, not by
the tools' SQL.
"""

from __future__ import annotations

import itertools
import json
from collections import deque
from typing import Any

import pytest

from metabundle.search.release import Release
from metabundle.search.services.omop.concepts import ATHENA_TERMS
from metabundle.search.services.omop.queries import lookup_table
from metabundle.search.tools import call_tool
from tests.tools.test_omop_tools import (
    CONCEPT_FIELDS,
    CONCUSSION,
    CONCUSSION_LOC,
    CONCUSSION_NO_LOC,
    GI_BLEED,
    K92,
    K92_2,
    call,
    error_of,
)


@pytest.fixture(scope="module")
def concepts(release: Release) -> dict[int, dict[str, Any]]:
    rows = release.query("SELECT concept_id, standard_concept, invalid_reason FROM omop_concept")
    return {int(i): {"standard": s, "invalid": r} for i, s, r in rows}


@pytest.fixture(scope="module")
def ancestor_rows(release: Release) -> list[tuple[int, int, int, int]]:
    return [
        tuple(int(v) for v in row)
        for row in release.query(
            "SELECT ancestor_concept_id, descendant_concept_id, min_levels_of_separation, "
            "max_levels_of_separation FROM omop_concept_ancestor"
        )
    ]


@pytest.fixture(scope="module")
def relationship_rows(release: Release) -> list[tuple[int, str, int, bool]]:
    return [
        (int(a), str(rel), int(b), invalid is None)
        for a, rel, b, invalid in release.query(
            "SELECT concept_id_1, relationship_id, concept_id_2, invalid_reason "
            "FROM omop_concept_relationship"
        )
    ]


def assert_concept(item: dict[str, Any], concepts: dict[int, dict[str, Any]]) -> None:
    assert set(item) >= CONCEPT_FIELDS
    assert item["athena_url"] == f"{ATHENA_TERMS}{item['concept_id']}"
    assert item["standard_concept"] is (concepts[item["concept_id"]]["standard"] == "S")


# -- ancestors and descendants ----------------------------------------------------------


def spread(
    ancestor_rows: list[tuple[int, int, int, int]], known: set[int], side: int
) -> tuple[int, list[int]]:
    """The smallest concept of the release whose in-release ancestors (``side`` 1) or
    descendants (``side`` 0) lie at the most distinct levels, and those levels."""
    levels: dict[int, set[int]] = {}
    for row in ancestor_rows:
        if row[0] in known and row[1] in known and row[2] > 0:
            levels.setdefault(row[side], set()).add(row[2])
    best = min(levels, key=lambda c: (-len(levels[c]), c))
    return best, sorted(levels[best])


@pytest.mark.parametrize("tool,side", [("concept_ancestors", 1), ("concept_descendants", 0)])
def test_hierarchy_is_depth_limited_with_levels(
    release: Release,
    concepts: dict[int, dict[str, Any]],
    ancestor_rows: list[tuple[int, int, int, int]],
    tool: str,
    side: int,
) -> None:
    concept_id, levels = spread(ancestor_rows, set(concepts), side)
    assert len(levels) >= 2
    low, high = levels[1], levels[-1]  # leaves out the nearest level
    expected = {
        row[1 - side]: (row[2], row[3])
        for row in ancestor_rows
        if row[side] == concept_id and low <= row[2] <= high and row[1 - side] in concepts
    }
    key = "ancestors" if side == 1 else "descendants"
    payload = call(release, tool, concept_id=concept_id, min_depth=low, max_depth=high, limit=1000)
    got = {
        r["concept_id"]: (r["min_levels_of_separation"], r["max_levels_of_separation"])
        for r in payload[key]
    }
    assert got == expected and expected
    assert payload["total"] == len(expected) and payload["truncated"] is False
    found_levels = [r["min_levels_of_separation"] for r in payload[key]]
    assert found_levels == sorted(found_levels)
    for item in payload[key]:
        assert_concept(item, concepts)
    nearest = call(release, tool, concept_id=concept_id, max_depth=levels[0], limit=1000)
    assert {r["min_levels_of_separation"] for r in nearest[key]} == {levels[0]}


def test_descendants_default_to_three_levels_and_include_self_from_depth_zero(
    release: Release, concepts: dict[int, dict[str, Any]]
) -> None:
    one = call(release, "concept_descendants", concept_id=CONCUSSION, max_depth=1)
    assert {r["concept_id"] for r in one["descendants"]} == {CONCUSSION_LOC, CONCUSSION_NO_LOC}
    with_self = call(release, "concept_descendants", concept_id=CONCUSSION, min_depth=0)
    assert with_self["descendants"][0]["concept_id"] == CONCUSSION
    assert with_self["descendants"][0]["min_levels_of_separation"] == 0
    for item in with_self["descendants"]:
        assert_concept(item, concepts)


def test_hierarchy_limits_clamp_and_bad_depths_are_refused(release: Release) -> None:
    capped = call(release, "concept_descendants", concept_id=CONCUSSION, limit=1, max_depth=99)
    assert len(capped["descendants"]) == 1 and capped["truncated"] is True
    error = error_of(release, "concept_ancestors", concept_id=CONCUSSION, min_depth=4, max_depth=2)
    assert error["code"] == "invalid_request" and "min_depth" in error["message"]
    assert error_of(release, "concept_ancestors", concept_id=0)["code"] == "invalid_request"
    assert error_of(release, "concept_descendants", concept_id=999_999_999)["code"] == "not_found"


def test_a_non_standard_concept_has_no_hierarchy_and_says_where_to_go(release: Release) -> None:
    payload = call(release, "concept_ancestors", concept_id=K92_2)
    assert payload["ancestors"] == []
    assert "concept_nearest_standard_ancestor" in payload["hint"]


# -- relationships ------------------------------------------------------------------------


def test_inbound_and_outbound_relationships_match_the_table(
    release: Release,
    concepts: dict[int, dict[str, Any]],
    relationship_rows: list[tuple[int, str, int, bool]],
) -> None:
    payload = call(release, "concept_relationships", concept_id=GI_BLEED, limit=200)
    inbound = {
        (r["relationship_id"], r["concept"]["concept_id"]) for r in payload["inbound"]["items"]
    }
    outbound = {
        (r["relationship_id"], r["concept"]["concept_id"]) for r in payload["outbound"]["items"]
    }
    assert inbound == {
        (rel, a) for a, rel, b, _ in relationship_rows if b == GI_BLEED and a in concepts
    }
    assert outbound == {
        (rel, b) for a, rel, b, _ in relationship_rows if a == GI_BLEED and b in concepts
    }
    assert ("Maps to", K92_2) in inbound
    for item in payload["inbound"]["items"] + payload["outbound"]["items"]:
        assert_concept(item["concept"], concepts)


def test_lookups_by_the_other_key_read_the_sorted_copies(release: Release) -> None:
    """A concept's ancestors and inbound relationships come from the copies sorted by
    descendant and by target (the answers above, checked against the files, are
    theirs); a release without them falls back to the tables themselves."""
    ancestors = lookup_table(release, "omop_concept_ancestor", by_other_key=True)
    inbound = lookup_table(release, "omop_concept_relationship", by_other_key=True)
    assert (ancestors, inbound) == (
        "omop_concept_ancestor_by_descendant",
        "omop_concept_relationship_inbound",
    )
    assert lookup_table(release, "omop_concept_ancestor", by_other_key=False) == (
        "omop_concept_ancestor"
    )
    for name, copy in (
        ("omop_concept_ancestor", ancestors),
        ("omop_concept_relationship", inbound),
    ):
        assert release.query(f"SELECT count(*) FROM {copy}") == release.query(
            f"SELECT count(*) FROM {name}"
        )


def test_relationships_filter_by_id_and_direction(release: Release) -> None:
    payload = call(
        release,
        "concept_relationships",
        concept_id=GI_BLEED,
        direction="in",
        relationship_id="maps TO",
    )
    assert "outbound" not in payload
    assert [r["concept"]["concept_id"] for r in payload["inbound"]["items"]] == [K92_2]
    assert payload["inbound"]["by_relationship"] == {"Maps to": 1}
    error = error_of(release, "concept_relationships", concept_id=GI_BLEED, relationship_id="Nope")
    assert error["code"] == "invalid_request" and "relationship_id" in error["message"]


# -- paths ------------------------------------------------------------------------------------


def distances(
    relationship_rows: list[tuple[int, str, int, bool]],
    concepts: dict[int, dict[str, Any]],
    source: int,
) -> dict[int, int]:
    """Fewest valid relationships from ``source`` to each concept of the release."""
    graph: dict[int, set[int]] = {}
    for a, _, b, valid in relationship_rows:
        if valid and a != b and a in concepts and b in concepts:
            graph.setdefault(a, set()).add(b)
    seen, queue = {source: 0}, deque([source])
    while queue:
        node = queue.popleft()
        for nxt in graph.get(node, ()):
            if nxt not in seen:
                seen[nxt] = seen[node] + 1
                queue.append(nxt)
    return seen


def test_path_is_a_shortest_chain_of_real_relationships(
    release: Release,
    concepts: dict[int, dict[str, Any]],
    relationship_rows: list[tuple[int, str, int, bool]],
) -> None:
    reached = distances(relationship_rows, concepts, CONCUSSION_LOC)
    expected = max(d for d in reached.values() if d <= 6)
    assert expected >= 3
    target = min(c for c, d in reached.items() if d == expected)
    payload = call(
        release, "concept_path", source_id=CONCUSSION_LOC, target_id=target, within_domain=False
    )
    assert payload["found"] is True
    (path,) = payload["paths"]
    assert path["length"] == expected
    valid = {(a, rel, b) for a, rel, b, ok in relationship_rows if ok}
    steps = path["steps"]
    for step in steps:
        assert (step["subject_id"], step["predicate"], step["object_id"]) in valid
    assert steps[0]["subject_id"] == CONCUSSION_LOC and steps[-1]["object_id"] == target
    assert all(a["object_id"] == b["subject_id"] for a, b in itertools.pairwise(steps))
    assert [c["concept_id"] for c in path["concepts"]] == [CONCUSSION_LOC] + [
        s["object_id"] for s in steps
    ]
    for item in path["concepts"]:
        assert_concept(item, concepts)


def test_path_between_siblings_and_to_itself(release: Release) -> None:
    siblings = call(release, "concept_path", source_id=CONCUSSION_LOC, target_id=CONCUSSION_NO_LOC)
    assert siblings["paths"][0]["length"] == 2
    assert siblings["paths"][0]["concepts"][1]["concept_id"] == CONCUSSION
    itself = call(release, "concept_path", source_id=GI_BLEED, target_id=GI_BLEED)
    assert itself["found"] is True and itself["paths"][0]["length"] == 0


def test_path_not_found_beyond_max_depth(
    release: Release,
    concepts: dict[int, dict[str, Any]],
    relationship_rows: list[tuple[int, str, int, bool]],
) -> None:
    reached = distances(relationship_rows, concepts, CONCUSSION_LOC)
    target = min(c for c, d in reached.items() if d == 3)
    arguments = {"source_id": CONCUSSION_LOC, "target_id": target, "within_domain": False}
    assert call(release, "concept_path", **arguments, max_depth=3)["found"] is True
    short = call(release, "concept_path", **arguments, max_depth=2)
    assert (short["found"], short["paths"]) == (False, [])


# -- by code, nearest standard ancestor -------------------------------------------------------


def test_concept_by_code_returns_non_standard_concepts(release: Release) -> None:
    payload = call(release, "concept_by_code", vocabulary_id="icd10cm", concept_code="k92.2")
    (concept,) = payload["concepts"]
    assert concept["concept_id"] == K92_2 and concept["standard_concept"] is False
    error = error_of(release, "concept_by_code", vocabulary_id="ICD10CM", concept_code="K92.9")
    assert error["code"] == "not_found" and "K92.9" in error["message"]


def test_nearest_standard_ancestor(release: Release) -> None:
    mapped = call(release, "concept_nearest_standard_ancestor", concept_id=K92_2)
    (result,) = mapped["results"]
    assert (result["concept_id"], result["via"], result["path"]) == (
        GI_BLEED,
        "Maps to",
        [K92_2, GI_BLEED],
    )
    itself = call(release, "concept_nearest_standard_ancestor", concept_id=CONCUSSION_LOC)
    assert [r["concept_id"] for r in itself["results"]] == [CONCUSSION_LOC]
    parent = call(
        release, "concept_nearest_standard_ancestor", concept_id=CONCUSSION_LOC, include_self=False
    )
    assert [r["concept_id"] for r in parent["results"]] == [CONCUSSION]
    assert parent["results"][0]["levels_of_separation"] == 1
    # K92 has no "Maps to" and no parent in the subset: an empty answer, not an error
    assert call(release, "concept_nearest_standard_ancestor", concept_id=K92)["results"] == []


# -- ATLAS concept sets --------------------------------------------------------------------


def atlas_item(concept_id: int, **flags: bool) -> dict[str, Any]:
    """An item as ATLAS exports it (every concept column, upper case)."""
    return {
        "concept": {
            "CONCEPT_ID": concept_id,
            "CONCEPT_NAME": "as exported",
            "STANDARD_CONCEPT": "S",
            "INVALID_REASON": "V",
            "VOCABULARY_ID": "SNOMED",
        },
        "isExcluded": flags.get("excluded", False),
        "includeDescendants": flags.get("descendants", False),
        "includeMapped": flags.get("mapped", False),
    }


def expected_set(
    items: list[dict[str, Any]],
    concepts: dict[int, dict[str, Any]],
    ancestor_rows: list[tuple[int, int, int, int]],
    relationship_rows: list[tuple[int, str, int, bool]],
) -> set[int]:
    """ATLAS's resolution, computed item by item in Python."""

    def members(item: dict[str, Any], mapped: bool) -> set[int]:
        root = item["concept"]["CONCEPT_ID"]
        found = {root} & set(concepts)
        if item["includeDescendants"]:
            found |= {
                d
                for a, d, _, _ in ancestor_rows
                if a == root and d in concepts and concepts[d]["invalid"] is None
            }
        if mapped:
            found |= {
                a for a, rel, b, ok in relationship_rows if ok and rel == "Maps to" and b in found
            }
        return found

    def side(excluded: bool) -> set[int]:
        chosen = [i for i in items if i["isExcluded"] == excluded]
        plain = set().union(*(members(i, False) for i in chosen))
        mapped = set().union(*(members(i, True) for i in chosen if i["includeMapped"]))
        return plain | mapped

    return side(False) - side(True)


@pytest.fixture(scope="module")
def set_root(
    concepts: dict[int, dict[str, Any]],
    ancestor_rows: list[tuple[int, int, int, int]],
    relationship_rows: list[tuple[int, str, int, bool]],
) -> tuple[int, int]:
    """A standard concept with several descendants, one of which (itself with
    descendants) has source concepts mapping to it: (root, that descendant)."""
    mapped_into = {b for _, rel, b, ok in relationship_rows if ok and rel == "Maps to"}
    below: dict[int, set[int]] = {}
    for a, d, low, _ in ancestor_rows:
        if low > 0 and a in concepts and d in concepts:
            below.setdefault(a, set()).add(d)
    for root in sorted(below, key=lambda r: (-len(below[r]), r)):
        if concepts[root]["standard"] != "S" or len(below[root]) > 60:
            continue
        for child in sorted(below[root]):
            if child in below and mapped_into & (below[child] | {child}):
                return root, child
    raise AssertionError("no concept with mapped descendants in the subset")


def test_concept_set_descendants_mapped_and_exclusions(
    release: Release,
    concepts: dict[int, dict[str, Any]],
    ancestor_rows: list[tuple[int, int, int, int]],
    relationship_rows: list[tuple[int, str, int, bool]],
    set_root: tuple[int, int],
) -> None:
    root, child = set_root
    cases = [
        [atlas_item(root)],
        [atlas_item(root, descendants=True)],
        [atlas_item(root, descendants=True, mapped=True)],
        [atlas_item(root, descendants=True, mapped=True), atlas_item(child, excluded=True)],
        [
            atlas_item(root, descendants=True, mapped=True),
            atlas_item(child, excluded=True, descendants=True, mapped=True),
        ],
        [atlas_item(child, excluded=True, descendants=True)],
    ]
    counts = []
    for items in cases:
        payload = call(release, "concept_set_resolve", expression={"items": items}, limit=1000)
        expected = expected_set(items, concepts, ancestor_rows, relationship_rows)
        assert set(payload["concept_ids"]) == expected, items
        assert payload["count"] == len(expected)
        assert payload["concept_ids"] == sorted(payload["concept_ids"])
        counts.append(payload["count"])
    only, with_descendants, with_mapped, minus_child, minus_all_below, excluded_only = counts
    assert only == 1 < with_descendants < with_mapped
    assert minus_all_below < minus_child < with_mapped
    assert excluded_only == 0


def test_concept_set_accepts_a_whole_exported_set_and_text(release: Release) -> None:
    expression = {"items": [atlas_item(CONCUSSION, descendants=True)]}
    exported = {"id": 7, "name": "Concussion", "expression": expression}
    as_object = call(release, "concept_set_resolve", expression=exported)
    as_text = call(release, "concept_set_resolve", expression=json.dumps(expression))
    assert (
        as_object["concept_ids"]
        == as_text["concept_ids"]
        == sorted([CONCUSSION, CONCUSSION_LOC, CONCUSSION_NO_LOC])
    )
    assert [c["concept_id"] for c in as_object["concepts"]] == as_object["concept_ids"]


def test_concept_set_bad_expressions_are_refused(release: Release) -> None:
    bad = ({"items": [{"concept": {}}]}, {"items": [{"concept": {"CONCEPT_ID": -1}}]}, {})
    for expression in bad:
        error = error_of(release, "concept_set_resolve", expression=expression)
        assert error["code"] == "invalid_request" and "expression" in error["message"]


def test_concept_set_unknown_items_are_reported(release: Release) -> None:
    payload = call(release, "concept_set_resolve", expression={"items": [atlas_item(999_999_999)]})
    assert payload["count"] == 0 and payload["unknown_item_concept_ids"] == [999_999_999]


# -- embedding neighbours ----------------------------------------------------------------------


def test_embedding_neighbours_are_near_concepts_without_itself(
    release: Release, concepts: dict[int, dict[str, Any]]
) -> None:
    payload = call(release, "embedding_neighbours", concept_id=GI_BLEED, limit=5)
    found = [r["concept_id"] for r in payload["results"]]
    assert GI_BLEED not in found and len(found) == 5
    assert K92_2 in found  # same words, another vocabulary
    similarities = [r["similarity"] for r in payload["results"]]
    assert similarities == sorted(similarities, reverse=True)
    for item in payload["results"]:
        assert_concept(item, concepts)
    standard = call(release, "embedding_neighbours", concept_id=GI_BLEED, standard_only=True)
    assert all(r["standard_concept"] for r in standard["results"])


def test_graph_tools_refuse_out_of_range_ids(release: Release) -> None:
    for name, arguments in [
        ("concept_relationships", {"concept_id": 2**63}),
        ("concept_path", {"source_id": 0, "target_id": GI_BLEED}),
        ("concept_nearest_standard_ancestor", {"concept_id": -3}),
        ("embedding_neighbours", {"concept_id": "x"}),
    ]:
        payload = call_tool(release, name, arguments)
        assert payload["error"]["code"] == "invalid_request", (name, payload)
