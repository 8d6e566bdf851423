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

from typing import Annotated, Any, Literal, TypeVar

import numpy as np
from pydantic import Field, model_validator

from metabundle.index.ann import filtered_search
from metabundle.search.coverage import missing
from metabundle.search.errors import EMBEDDINGS_UNAVAILABLE, ToolError
from metabundle.search.params import Params, clamp
from metabundle.search.registry import tool
from metabundle.search.release import Release
from metabundle.search.services.omop import queries
from metabundle.search.services.omop.concepts import IS_A, MAPS_TO, SELF, is_standard
from metabundle.search.services.omop.filters import (
    canonical_relationship,
    concept_doc_mask,
    standard_doc_mask,
)
from metabundle.search.services.omop.models import (
    AncestorsAnswer,
    Concept,
    ConceptPath,
    ConceptsWithCode,
    DescendantsAnswer,
    Edge,
    EdgePage,
    HierarchyMember,
    NearestStandard,
    NearestStandardAnswer,
    NeighboursAnswer,
    PathAnswer,
    PathStep,
    RelationshipsAnswer,
    SimilarConcept,
)
from metabundle.search.services.omop.tools import (
    GROUP,
    ConceptId,
    MapParams,
    concepts_with_code,
    dated_concept,
)

#: Concepts visited per side before ``concept_path`` gives up (reported).
MAX_PATH_NODES = 200_000


def concept_or_missing(release: Release, concept_id: int) -> dict[str, Any]:
    """The concept row of ``concept_id``, or ``not_found`` naming the search tools."""
    row = queries.concepts_by_id(release, [concept_id]).get(concept_id)
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


Answer = TypeVar("Answer", AncestorsAnswer, DescendantsAnswer)


def _hierarchy(
    release: Release, params: HierarchyParams, answer: type[Answer], direction: str
) -> Answer:
    """The ``answer`` listing the concept's ``direction`` (ancestors or descendants)."""
    concept = concept_or_missing(release, params.concept_id)
    listing = queries.hierarchy_listing(
        release,
        params.concept_id,
        params.min_depth,
        params.max_depth,
        params.limit,
        ancestors=direction == "ancestors",
    )
    payload: dict[str, Any] = {
        "concept": Concept.of(concept),
        "total": listing.total,
        "truncated": listing.truncated,
        "omitted_not_in_release": listing.not_in_release,
        direction: [
            HierarchyMember.of(
                row,
                min_levels_of_separation=int(row["min_levels_of_separation"]),
                max_levels_of_separation=int(row["max_levels_of_separation"]),
            )
            for row in listing.rows
        ],
    }
    if not listing.total + listing.not_in_release and not is_standard(concept):
        payload["hint"] = (
            "Only standard and classification concepts have a hierarchy; call "
            "concept_nearest_standard_ancestor or concept_navigate_to_standard."
        )
    return answer.model_validate(payload)


@tool(
    "concept_ancestors",
    "Call for an OMOP concept's ancestors, nearest first.",
    AncestorParams,
    GROUP,
    response=AncestorsAnswer,
    guide=(
        "Ancestors of an OMOP concept from omop_concept_ancestor, nearest first, each "
        "with its min/max levels of separation; min_depth/max_depth bound the levels."
    ),
)
def concept_ancestors(release: Release, params: AncestorParams) -> AncestorsAnswer:
    return _hierarchy(release, params, AncestorsAnswer, "ancestors")


@tool(
    "concept_descendants",
    "Call for an OMOP concept's descendants, nearest first.",
    DescendantParams,
    GROUP,
    response=DescendantsAnswer,
    guide=(
        "Descendants of an OMOP concept from omop_concept_ancestor, nearest first, each "
        "with its min/max levels of separation; min_depth/max_depth bound the levels."
    ),
)
def concept_descendants(release: Release, params: DescendantParams) -> DescendantsAnswer:
    return _hierarchy(release, params, DescendantsAnswer, "descendants")


# -- relationships ----------------------------------------------------------------------


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
) -> EdgePage:
    listing = queries.edge_listing(
        release,
        params.concept_id,
        inbound=inbound,
        relationship_id=relationship_id,
        hierarchical_only=params.hierarchical_only,
        active_only=params.active_only,
        limit=params.limit,
    )
    return EdgePage(
        total=listing.total,
        truncated=listing.truncated,
        omitted_not_in_release=listing.not_in_release,
        by_relationship=listing.by_relationship,
        items=[
            Edge(
                relationship_id=row["relationship_id"],
                valid=row["relationship_invalid_reason"] is None,
                concept=Concept.of(row),
            )
            for row in listing.rows
        ],
    )


@tool(
    "concept_relationships",
    "Call for an OMOP concept's relationships, outbound and inbound.",
    RelationshipParams,
    GROUP,
    response=RelationshipsAnswer,
    guide=(
        "Relationships of an OMOP concept from omop_concept_relationship: outbound (this "
        "concept is concept_id_1) and inbound, optionally of one relationship_id."
        " direction 'out' lists relationships where concept_id_1 is this concept; "
        "hierarchical_only keeps hierarchical relationships (omop_relationship); "
        "active_only keeps valid ones (invalid_reason is null)."
    ),
)
def concept_relationships(release: Release, params: RelationshipParams) -> RelationshipsAnswer:
    concept = concept_or_missing(release, params.concept_id)
    relationship_id = canonical_relationship(release, params.relationship_id)
    answer = RelationshipsAnswer(concept=Concept.of(concept))
    if params.direction in ("out", "both"):
        answer.outbound = _edges(release, params, relationship_id, inbound=False)
    if params.direction in ("in", "both"):
        answer.inbound = _edges(release, params, relationship_id, inbound=True)
    return answer


# -- shortest path ------------------------------------------------------------------------


class PathParams(Params):
    source_id: ConceptId
    target_id: ConceptId
    max_depth: Annotated[int, clamp(2, 15), Field(description="2..15.")] = 8
    within_domain: bool = True


Step = tuple[int, str]  # (neighbour, relationship_id) on the way back to the start


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
        for near, relationship_id, far in queries.valid_edges(
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
    response=PathAnswer,
    guide=(
        "A shortest path between two OMOP concepts over valid relationships of any kind "
        "(each step: subject, relationship, object); found false when none within "
        "max_depth."
        " within_domain keeps edges between concepts of one domain."
    ),
)
def concept_path(release: Release, params: PathParams) -> PathAnswer:
    source = concept_or_missing(release, params.source_id)
    target = concept_or_missing(release, params.target_id)
    if params.source_id == params.target_id:
        edges: list[tuple[int, str, int]] | None = []
        stopped = False
    else:
        edges, stopped = shortest_path(
            release, params.source_id, params.target_id, params.max_depth, params.within_domain
        )
    answer = PathAnswer(
        source=Concept.of(source), target=Concept.of(target), found=edges is not None, paths=[]
    )
    if stopped:
        answer.terminated_reason = f"visited more than {MAX_PATH_NODES} concepts"
    if edges is not None:
        rows = queries.concepts_by_id(release, [e[0] for e in edges] + [e[2] for e in edges])
        steps = [
            PathStep(
                subject_id=a,
                subject_name=rows[a]["concept_name"],
                predicate=relationship_id,
                object_id=b,
                object_name=rows[b]["concept_name"],
            )
            for a, relationship_id, b in edges
        ]
        ids = [params.source_id] + [e[2] for e in edges]
        answer.paths = [
            ConceptPath(
                length=len(steps),
                steps=steps,
                concepts=[Concept.of(rows.get(i) or source) for i in ids],
            )
        ]
    return answer


# -- by code ------------------------------------------------------------------------------


@tool(
    "concept_by_code",
    "Call for every OMOP concept with a code in a vocabulary, standard or not.",
    MapParams,
    GROUP,
    response=ConceptsWithCode,
    guide=(
        "Every OMOP concept with this code in this vocabulary (exact, else ignoring "
        "case), standard or not, valid or not; map them with "
        "concept_navigate_to_standard."
    ),
)
def concept_by_code(release: Release, params: MapParams) -> ConceptsWithCode:
    vocabulary_id, rows = concepts_with_code(release, params)
    return ConceptsWithCode(
        vocabulary_id=vocabulary_id,
        concept_code=params.concept_code.strip(),
        concepts=[dated_concept(row) for row in rows],
    )


# -- nearest standard ancestor --------------------------------------------------------------


class NearestParams(Params):
    concept_id: ConceptId
    include_self: bool = True
    max_depth: Annotated[int, clamp(1, 20), Field(description="1..20.")] = 10


def _standard_at_level(
    release: Release,
    level_ids: list[int],
    path_to: dict[int, list[int]],
    level: int,
    include_self: bool,
) -> list[NearestStandard]:
    """The valid standard concepts among ``level_ids``, and the standard "Maps to"
    targets of the others, each with ``via`` and the ``path`` that reached it."""
    rows = queries.concepts_by_id(release, level_ids)
    candidates = [rows[i] for i in level_ids if i in rows]
    if level == 0 and not include_self:
        candidates = [r for r in candidates if not is_standard(r)]
    found: dict[int, tuple[dict[str, Any], str, list[int]]] = {}
    for row in candidates:
        if is_standard(row):
            concept_id = int(row["concept_id"])
            via = SELF if level == 0 else IS_A
            found[concept_id] = (row, via, path_to[concept_id])
    unmapped = [int(r["concept_id"]) for r in candidates if not is_standard(r)]
    for source_id, targets in queries.standard_targets(release, unmapped).items():
        for target in targets:
            target_id = int(target["concept_id"])
            found.setdefault(target_id, (target, MAPS_TO, [*path_to[source_id], target_id]))
    return [
        NearestStandard.of(row, via=via, path=path, levels_of_separation=level)
        for _, (row, via, path) in sorted(found.items())
    ]


@tool(
    "concept_nearest_standard_ancestor",
    "Call for the nearest standard concepts above a non-standard OMOP concept.",
    NearestParams,
    GROUP,
    response=NearestStandardAnswer,
    guide=(
        "The nearest valid standard concepts above an OMOP concept: itself when standard,"
        " else its 'Maps to' targets, else those of its nearest 'Is a' ancestors."
        " include_self lets a standard concept answer itself (level 0)."
    ),
)
def concept_nearest_standard_ancestor(
    release: Release, params: NearestParams
) -> NearestStandardAnswer:
    concept = concept_or_missing(release, params.concept_id)
    path_to: dict[int, list[int]] = {params.concept_id: [params.concept_id]}
    level_ids = [params.concept_id]
    results: list[NearestStandard] = []
    for level in range(params.max_depth + 1):
        results = _standard_at_level(release, level_ids, path_to, level, params.include_self)
        if results:
            break
        next_ids: list[int] = []
        for child, parent in queries.is_a_parents(release, level_ids):
            if parent not in path_to:
                path_to[parent] = [*path_to[child], parent]
                next_ids.append(parent)
        if not next_ids:
            break
        level_ids = next_ids
    return NearestStandardAnswer(concept=Concept.of(concept), results=results)


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
    response=NeighboursAnswer,
    guide=(
        "OMOP concepts whose embeddings are nearest a given concept's (cosine "
        "similarity), for related wording across vocabularies; embeddings_unavailable "
        "without embeddings."
        " standard_only keeps standard concepts."
    ),
)
def embedding_neighbours(release: Release, params: NeighbourParams) -> NeighboursAnswer:
    concept = concept_or_missing(release, params.concept_id)
    vectors, index = release.vectors, release.ann_index("omop")
    if vectors is None or index is None:
        raise ToolError(
            EMBEDDINGS_UNAVAILABLE,
            "This release was built without embeddings, so embedding_neighbours cannot "
            "answer; call concept_relationships or concept_ancestors instead.",
        )
    docno = queries.concept_docno(release, params.concept_id)
    if docno is None:
        raise missing(release, "omop", f"Concept {params.concept_id} has no embedding.")
    mask = concept_doc_mask(release).copy()
    if params.standard_only:
        mask &= standard_doc_mask(release)
    mask[docno] = False
    keys, scores = filtered_search(
        index, vectors, np.asarray(vectors[docno]), params.limit, np.flatnonzero(mask)
    )
    by_docno = queries.concepts_by_docno(release, [int(k) for k in keys])
    results = [
        SimilarConcept.of(by_docno[int(k)], similarity=round(float(s), 6))
        for k, s in zip(keys, scores, strict=True)
        if int(k) in by_docno
    ]
    return NeighboursAnswer(concept=Concept.of(concept), results=results)
