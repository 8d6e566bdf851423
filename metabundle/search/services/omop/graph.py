"""OMOP concept-graph tools over ``omop_concept_ancestor`` and
``omop_concept_relationship``, in the style of ``seeds/omop-search-tools.md``.

* ``concept_ancestors`` / ``concept_descendants``: the transitive hierarchy of
  ``omop_concept_ancestor`` between ``min_depth`` and ``max_depth`` levels (the
  ``min_levels_of_separation`` of each row), with both levels on each result;
* ``concept_relationships``: outbound (``concept_id_1``) and inbound
  (``concept_id_2``) rows of ``omop_concept_relationship``, optionally of one
  relationship id or of hierarchical relationships only;
* ``concept_path``: a shortest path between two concepts over valid relationships
  (bidirectional breadth-first search, one SQL query per level);
* ``concept_by_code``: every concept holding a code in a vocabulary, non-standard and
  invalid ones included;
* ``concept_nearest_standard_ancestor``: the closest valid standard concepts reached
  by walking up valid "Is a" edges, a non-standard concept standing for its valid
  standard "Maps to" targets at its own level;
* ``embedding_neighbours``: the concepts whose embeddings are nearest a concept's.

Parameters are validated (ids in ``1..2^63-1``), depths and limits clamped (the
reference tool's defaults); related concepts missing from the release are omitted
and counted; every concept carries ``standard_concept`` (a boolean) and
``athena_url``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import numpy as np
from pydantic import Field, model_validator

from metabundle.index.ann import filtered_search
from metabundle.search.coverage import missing
from metabundle.search.errors import EMBEDDINGS_UNAVAILABLE, ToolError, invalid
from metabundle.search.params import Params, clamp
from metabundle.search.registry import tool
from metabundle.search.release import Release
from metabundle.search.services.omop.concepts import (
    CONCEPT_COLUMNS,
    MAPS_TO,
    SELF,
    ConceptFilter,
    cached,
    concept_doc_mask,
    concept_item,
    concepts_by_docno,
    concepts_by_id,
    is_standard,
    lookup_table,
    standard_targets,
)
from metabundle.search.services.omop.tools import GROUP, ConceptId, MapParams, concepts_with_code

#: Concepts visited per side before ``concept_path`` gives up (reported).
MAX_PATH_NODES = 200_000
IS_A = "Is a"


def concept_or_missing(release: Release, concept_id: int) -> dict[str, Any]:
    """The concept row of ``concept_id``, or ``not_found`` naming the search tools."""
    row = concepts_by_id(release, [concept_id]).get(concept_id)
    if row is None:
        raise missing(
            release,
            "omop",
            f"There is no OMOP concept {concept_id} in this release; find ids with "
            "concept_search_exact, concept_by_code or concept_ground.",
        )
    return row


# -- ancestors and descendants ---------------------------------------------------------


class HierarchyParams(Params):
    concept_id: ConceptId
    min_depth: Annotated[int, Field(ge=0, le=100, description="0 includes itself.")] = 1
    limit: Annotated[int, clamp(1, 1000), Field(description="1..1000.")] = 200
    max_depth: int  # each tool sets its own default and clamp

    @model_validator(mode="after")
    def _depths_ordered(self) -> HierarchyParams:
        if self.min_depth > self.max_depth:
            raise ValueError(f"min_depth ({self.min_depth}) exceeds max_depth ({self.max_depth})")
        return self


class AncestorParams(HierarchyParams):
    max_depth: Annotated[int, clamp(1, 20), Field(description="1..20.")] = 5


class DescendantParams(HierarchyParams):
    max_depth: Annotated[int, clamp(1, 10), Field(description="1..10.")] = 3


def _hierarchy(release: Release, params: HierarchyParams, direction: str) -> dict[str, Any]:
    this, other = (
        ("descendant", "ancestor") if direction == "ancestors" else ("ancestor", "descendant")
    )
    concept = concept_or_missing(release, params.concept_id)
    table = lookup_table(release, "omop_concept_ancestor", by_other_key=direction == "ancestors")
    where = f"a.{this}_concept_id = ? AND a.min_levels_of_separation BETWEEN ? AND ?"
    args = [params.concept_id, params.min_depth, params.max_depth]
    ((total, known),) = release.query(
        f"SELECT count(*), count(c.concept_id) FROM {table} a "
        f"LEFT JOIN omop_concept c ON c.concept_id = a.{other}_concept_id WHERE {where}",
        args,
    )
    rows = release.query_dicts(
        f"SELECT {CONCEPT_COLUMNS}, a.min_levels_of_separation, a.max_levels_of_separation "
        f"FROM {table} a JOIN omop_concept c ON c.concept_id = a.{other}_concept_id "
        f"WHERE {where} ORDER BY a.min_levels_of_separation, c.concept_id LIMIT ?",
        [*args, params.limit],
    )
    results = [
        {
            **concept_item(row),
            "min_levels_of_separation": int(row["min_levels_of_separation"]),
            "max_levels_of_separation": int(row["max_levels_of_separation"]),
        }
        for row in rows
    ]
    payload: dict[str, Any] = {
        "concept": concept_item(concept),
        "total": int(known),
        "truncated": int(known) > len(results),
        "omitted_not_in_release": int(total) - int(known),
        direction: results,
    }
    if not total and not is_standard(concept):
        payload["hint"] = (
            "Only standard and classification concepts have a hierarchy; call "
            "concept_nearest_standard_ancestor or concept_navigate_to_standard."
        )
    return payload


@tool(
    "concept_ancestors",
    "Call for an OMOP concept's ancestors, nearest first.",
    AncestorParams,
    GROUP,
    guide=(
        "Ancestors of an OMOP concept from omop_concept_ancestor, nearest first, each "
        "with its min/max levels of separation; min_depth/max_depth bound the levels."
    ),
)
def concept_ancestors(release: Release, params: AncestorParams) -> dict[str, Any]:
    return _hierarchy(release, params, "ancestors")


@tool(
    "concept_descendants",
    "Call for an OMOP concept's descendants, nearest first.",
    DescendantParams,
    GROUP,
    guide=(
        "Descendants of an OMOP concept from omop_concept_ancestor, nearest first, each "
        "with its min/max levels of separation; min_depth/max_depth bound the levels."
    ),
)
def concept_descendants(release: Release, params: DescendantParams) -> dict[str, Any]:
    return _hierarchy(release, params, "descendants")


# -- relationships ----------------------------------------------------------------------


def _relationship_ids(release: Release) -> dict[str, str]:
    """Lower-cased relationship id → as the release spells it."""

    def compute() -> dict[str, str]:
        rows = release.query(
            "SELECT relationship_id FROM omop_relationship UNION "
            "SELECT DISTINCT relationship_id FROM omop_concept_relationship"
        )
        return {str(r[0]).lower(): str(r[0]) for r in rows}

    return cached(release, "relationship_ids", compute)


def canonical_relationship(release: Release, value: str | None) -> str | None:
    if value is None:
        return None
    known = _relationship_ids(release)
    canonical = known.get(value.strip().lower())
    if canonical is None:
        raise invalid(
            f"Parameter 'relationship_id': unknown relationship {value!r}; see "
            "omop_relationship for the relationship_id values."
        )
    return canonical


class RelationshipParams(Params):
    concept_id: ConceptId
    direction: Literal["out", "in", "both"] = "both"
    relationship_id: Annotated[str | None, Field(max_length=64, description="E.g. 'Maps to'.")] = (
        None
    )
    hierarchical_only: bool = False
    active_only: bool = False
    limit: Annotated[int, clamp(1, 200), Field(description="Per direction, 1..200.")] = 50


def _edges(
    release: Release, params: RelationshipParams, relationship_id: str | None, inbound: bool
) -> dict[str, Any]:
    here, there = ("concept_id_2", "concept_id_1") if inbound else ("concept_id_1", "concept_id_2")
    table = lookup_table(release, "omop_concept_relationship", by_other_key=inbound)
    clauses, args = [f"r.{here} = ?"], [params.concept_id]
    if relationship_id is not None:
        clauses.append("r.relationship_id = ?")
        args.append(relationship_id)
    if params.hierarchical_only:
        clauses.append(
            "r.relationship_id IN (SELECT relationship_id FROM omop_relationship "
            "WHERE is_hierarchical = '1')"
        )
    if params.active_only:
        clauses.append("r.invalid_reason IS NULL")
    where = " AND ".join(clauses)
    ((total, known),) = release.query(
        f"SELECT count(*), count(c.concept_id) FROM {table} r "
        f"LEFT JOIN omop_concept c ON c.concept_id = r.{there} WHERE {where}",
        args,
    )
    rows = release.query_dicts(
        f"SELECT r.relationship_id, r.invalid_reason AS relationship_invalid_reason, "
        f"{CONCEPT_COLUMNS} FROM {table} r "
        f"JOIN omop_concept c ON c.concept_id = r.{there} WHERE {where} "
        "ORDER BY r.relationship_id, c.concept_id LIMIT ?",
        [*args, params.limit],
    )
    counts = release.query(
        f"SELECT r.relationship_id, count(*) FROM {table} r "
        f"JOIN omop_concept c ON c.concept_id = r.{there} WHERE {where} GROUP BY 1 ORDER BY 1",
        args,
    )
    items = [
        {
            "relationship_id": row.pop("relationship_id"),
            "valid": row.pop("relationship_invalid_reason") is None,
            "concept": concept_item(row),
        }
        for row in rows
    ]
    return {
        "total": int(known),
        "truncated": int(known) > len(items),
        "omitted_not_in_release": int(total) - int(known),
        "by_relationship": {k: int(v) for k, v in counts},
        "items": items,
    }


@tool(
    "concept_relationships",
    "Call for an OMOP concept's relationships, outbound and inbound.",
    RelationshipParams,
    GROUP,
    guide=(
        "Relationships of an OMOP concept from omop_concept_relationship: outbound (this "
        "concept is concept_id_1) and inbound, optionally of one relationship_id."
        " direction 'out' lists relationships where concept_id_1 is this concept; "
        "hierarchical_only keeps hierarchical relationships (omop_relationship); "
        "active_only keeps valid ones (invalid_reason is null)."
    ),
)
def concept_relationships(release: Release, params: RelationshipParams) -> dict[str, Any]:
    concept = concept_or_missing(release, params.concept_id)
    relationship_id = canonical_relationship(release, params.relationship_id)
    payload: dict[str, Any] = {"concept": concept_item(concept)}
    if params.direction in ("out", "both"):
        payload["outbound"] = _edges(release, params, relationship_id, inbound=False)
    if params.direction in ("in", "both"):
        payload["inbound"] = _edges(release, params, relationship_id, inbound=True)
    return payload


# -- shortest path ------------------------------------------------------------------------


class PathParams(Params):
    source_id: ConceptId
    target_id: ConceptId
    max_depth: Annotated[int, clamp(2, 15), Field(description="2..15.")] = 8
    within_domain: bool = True


Step = tuple[int, str]  # (neighbour, relationship_id) on the way back to the start


def _expand(
    release: Release, frontier: list[int], forward: bool, within_domain: bool
) -> list[tuple[int, str, int]]:
    """Valid edges ``(from, relationship_id, to)`` leaving ``frontier`` (or, backward,
    entering it), between concepts of the release."""
    near, far = ("concept_id_1", "concept_id_2") if forward else ("concept_id_2", "concept_id_1")
    domain = "AND a.domain_id = b.domain_id" if within_domain else ""
    table = lookup_table(release, "omop_concept_relationship", by_other_key=not forward)
    rows = release.query(
        f"SELECT r.{near}, r.relationship_id, r.{far} FROM {table} r "
        f"JOIN omop_concept a ON a.concept_id = r.{near} "
        f"JOIN omop_concept b ON b.concept_id = r.{far} "
        f"WHERE r.{near} IN (SELECT unnest(?::BIGINT[])) AND r.invalid_reason IS NULL "
        f"AND r.{near} <> r.{far} {domain} ORDER BY r.{far}, r.{near}, r.relationship_id",
        [frontier],
    )
    return [(int(a), str(rel), int(b)) for a, rel, b in rows]


def shortest_path(
    release: Release, source: int, target: int, max_depth: int, within_domain: bool
) -> tuple[list[tuple[int, str, int]] | None, bool]:
    """Edges of a shortest path from ``source`` to ``target`` (None when none within
    ``max_depth``) and whether the search stopped at :data:`MAX_PATH_NODES`. Among
    equally short paths the one through the smallest meeting concept id is kept."""
    back: dict[int, Step | None] = {source: None}  # forward side: node → step toward source
    ahead: dict[int, Step | None] = {target: None}  # backward side: node → step toward target
    front, rear = [source], [target]
    depth = 0
    while front and rear and depth < max_depth:
        forward = len(front) <= len(rear)
        seen, other = (back, ahead) if forward else (ahead, back)
        new: list[int] = []
        for near, relationship_id, far in _expand(
            release, front if forward else rear, forward, within_domain
        ):
            if far not in seen:
                seen[far] = (near, relationship_id)
                new.append(far)
        depth += 1
        meeting = sorted(n for n in new if n in other)
        if meeting:
            return _join(back, ahead, meeting[0]), False
        if len(seen) > MAX_PATH_NODES:
            return None, True
        if forward:
            front = new
        else:
            rear = new
    return None, False


def _join(
    back: dict[int, Step | None], ahead: dict[int, Step | None], meeting: int
) -> list[tuple[int, str, int]]:
    edges: list[tuple[int, str, int]] = []
    node = meeting
    while (step := back[node]) is not None:
        edges.insert(0, (step[0], step[1], node))
        node = step[0]
    node = meeting
    while (step := ahead[node]) is not None:
        edges.append((node, step[1], step[0]))
        node = step[0]
    return edges


@tool(
    "concept_path",
    "Call to find a shortest relationship path between two OMOP concepts.",
    PathParams,
    GROUP,
    guide=(
        "A shortest path between two OMOP concepts over valid relationships of any kind "
        "(each step: subject, relationship, object); found false when none within "
        "max_depth."
        " within_domain keeps edges between concepts of one domain."
    ),
)
def concept_path(release: Release, params: PathParams) -> dict[str, Any]:
    source = concept_or_missing(release, params.source_id)
    target = concept_or_missing(release, params.target_id)
    if params.source_id == params.target_id:
        edges: list[tuple[int, str, int]] | None = []
        stopped = False
    else:
        edges, stopped = shortest_path(
            release, params.source_id, params.target_id, params.max_depth, params.within_domain
        )
    payload: dict[str, Any] = {
        "source": concept_item(source),
        "target": concept_item(target),
        "found": edges is not None,
        "paths": [],
    }
    if stopped:
        payload["terminated_reason"] = f"visited more than {MAX_PATH_NODES} concepts"
    if edges is not None:
        rows = concepts_by_id(release, [e[0] for e in edges] + [e[2] for e in edges])
        steps = [
            {
                "subject_id": a,
                "subject_name": rows[a]["concept_name"],
                "predicate": relationship_id,
                "object_id": b,
                "object_name": rows[b]["concept_name"],
            }
            for a, relationship_id, b in edges
        ]
        ids = [params.source_id] + [e[2] for e in edges]
        payload["paths"] = [
            {
                "length": len(steps),
                "steps": steps,
                "concepts": [concept_item(rows.get(i) or source) for i in ids],
            }
        ]
    return payload


# -- by code ------------------------------------------------------------------------------


@tool(
    "concept_by_code",
    "Call for every OMOP concept with a code in a vocabulary, standard or not.",
    MapParams,
    GROUP,
    guide=(
        "Every OMOP concept with this code in this vocabulary (exact, else ignoring "
        "case), standard or not, valid or not; map them with "
        "concept_navigate_to_standard."
    ),
)
def concept_by_code(release: Release, params: MapParams) -> dict[str, Any]:
    vocabulary_id, rows = concepts_with_code(release, params)
    return {
        "vocabulary_id": vocabulary_id,
        "concept_code": params.concept_code.strip(),
        "concepts": [
            {
                **concept_item(row),
                "valid_start_date": row["valid_start_date"].isoformat(),
                "valid_end_date": row["valid_end_date"].isoformat(),
            }
            for row in rows
        ],
    }


# -- nearest standard ancestor --------------------------------------------------------------


class NearestParams(Params):
    concept_id: ConceptId
    include_self: bool = True
    max_depth: Annotated[int, clamp(1, 20), Field(description="1..20.")] = 10


def _parents(release: Release, ids: list[int]) -> list[tuple[int, int]]:
    """Valid ``(child, parent)`` "Is a" edges of ``ids`` to concepts of the release."""
    rows = release.query(
        "SELECT r.concept_id_1, r.concept_id_2 FROM omop_concept_relationship r "
        "JOIN omop_concept c ON c.concept_id = r.concept_id_2 "
        "WHERE r.concept_id_1 IN (SELECT unnest(?::BIGINT[])) AND r.relationship_id = ? "
        "AND r.invalid_reason IS NULL ORDER BY 2, 1",
        [ids, IS_A],
    )
    return [(int(a), int(b)) for a, b in rows]


def _standard_at_level(
    release: Release,
    level_ids: list[int],
    path_to: dict[int, list[int]],
    level: int,
    include_self: bool,
) -> list[dict[str, Any]]:
    """The valid standard concepts among ``level_ids``, and the standard "Maps to"
    targets of the others, each with ``via`` and the ``path`` that reached it."""
    rows = concepts_by_id(release, level_ids)
    candidates = [rows[i] for i in level_ids if i in rows]
    if level == 0 and not include_self:
        candidates = [r for r in candidates if not is_standard(r)]
    found: dict[int, dict[str, Any]] = {}
    for row in candidates:
        if is_standard(row):
            concept_id = int(row["concept_id"])
            via = SELF if level == 0 else IS_A
            found[concept_id] = {**concept_item(row), "via": via, "path": path_to[concept_id]}
    unmapped = [int(r["concept_id"]) for r in candidates if not is_standard(r)]
    for source_id, targets in standard_targets(release, unmapped).items():
        for target in targets:
            target_id = int(target["concept_id"])
            path = [*path_to[source_id], target_id]
            found.setdefault(target_id, {**concept_item(target), "via": MAPS_TO, "path": path})
    return [{**item, "levels_of_separation": level} for _, item in sorted(found.items())]


@tool(
    "concept_nearest_standard_ancestor",
    "Call for the nearest standard concepts above a non-standard OMOP concept.",
    NearestParams,
    GROUP,
    guide=(
        "The nearest valid standard concepts above an OMOP concept: itself when standard,"
        " else its 'Maps to' targets, else those of its nearest 'Is a' ancestors."
        " include_self lets a standard concept answer itself (level 0)."
    ),
)
def concept_nearest_standard_ancestor(release: Release, params: NearestParams) -> dict[str, Any]:
    concept = concept_or_missing(release, params.concept_id)
    path_to: dict[int, list[int]] = {params.concept_id: [params.concept_id]}
    level_ids = [params.concept_id]
    results: list[dict[str, Any]] = []
    for level in range(params.max_depth + 1):
        results = _standard_at_level(release, level_ids, path_to, level, params.include_self)
        if results:
            break
        next_ids: list[int] = []
        for child, parent in _parents(release, level_ids):
            if parent not in path_to:
                path_to[parent] = [*path_to[child], parent]
                next_ids.append(parent)
        if not next_ids:
            break
        level_ids = next_ids
    return {"concept": concept_item(concept), "results": results}


# -- embedding neighbours --------------------------------------------------------------------


class NeighbourParams(Params):
    concept_id: ConceptId
    limit: Annotated[int, clamp(1, 50), Field(description="1..50.")] = 10
    standard_only: bool = False


@tool(
    "embedding_neighbours",
    "Call for OMOP concepts whose embeddings are nearest a given concept's.",
    NeighbourParams,
    GROUP,
    guide=(
        "OMOP concepts whose embeddings are nearest a given concept's (cosine "
        "similarity), for related wording across vocabularies; embeddings_unavailable "
        "without embeddings."
        " standard_only keeps standard concepts."
    ),
)
def embedding_neighbours(release: Release, params: NeighbourParams) -> dict[str, Any]:
    concept = concept_or_missing(release, params.concept_id)
    vectors, index = release.vectors, release.ann_index("omop")
    if vectors is None or index is None:
        raise ToolError(
            EMBEDDINGS_UNAVAILABLE,
            "This release was built without embeddings, so embedding_neighbours cannot "
            "answer; call concept_relationships or concept_ancestors instead.",
        )
    docnos = release.query(
        "SELECT docno FROM search_doc WHERE source = 'omop' AND kind = 'concept' AND entity_id = ?",
        [str(params.concept_id)],
    )
    if not docnos:
        raise missing(release, "omop", f"Concept {params.concept_id} has no embedding.")
    docno = int(docnos[0][0])
    mask = concept_doc_mask(release).copy()
    if params.standard_only:
        mask &= _standard_doc_mask(release)
    mask[docno] = False
    keys, scores = filtered_search(
        index, vectors, np.asarray(vectors[docno]), params.limit, np.flatnonzero(mask)
    )
    by_docno = concepts_by_docno(release, [int(k) for k in keys])
    results = [
        {**concept_item(by_docno[int(k)]), "similarity": round(float(s), 6)}
        for k, s in zip(keys, scores, strict=True)
        if int(k) in by_docno
    ]
    return {"concept": concept_item(concept), "results": results}


def _standard_doc_mask(release: Release) -> np.ndarray:
    return cached(
        release, "standard_mask", lambda: ConceptFilter(standard_only=True).doc_mask(release)
    )
