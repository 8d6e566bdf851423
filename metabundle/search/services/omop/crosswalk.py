"""``concept_crosswalk``: what in every source records an OMOP concept (and, by
default, its descendants), from the release's ``concept_crosswalk`` table.

Links are grouped by source; curated links (the sources' own codes and OHDSI's
mappings) come first, then similarity links (``link_type`` ``similarity``, best
cosine first), which are never presented as curated mappings.
:func:`linked_concepts` gives the entity tools (``get_ukb_field``,
``get_aou_item``) the concepts one entity links to.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from metabundle.search.coverage import missing
from metabundle.search.params import Params, clamp
from metabundle.search.registry import tool
from metabundle.search.release import Release
from metabundle.search.services.omop.concepts import athena_url
from metabundle.search.services.omop.models import (
    Concept,
    CrosswalkAnswer,
    CrosswalkLink,
    CrosswalkSource,
    LinkedConcept,
    UnlistedConcept,
)
from metabundle.search.services.omop.queries import (
    concept_links,
    concepts_by_id,
    entity_links,
    is_linked,
)
from metabundle.search.services.omop.tools import GROUP, ConceptId


class CrosswalkParams(Params):
    concept_id: ConceptId
    include_descendants: bool = True
    include_similarity: Annotated[bool, Field(description="Also uncurated similarity links.")] = (
        True
    )
    limit: Annotated[int, clamp(1, 500), Field(description="Per source, 1..500.")] = 50


def _link(row: dict[str, Any], names: dict[int, str]) -> CrosswalkLink:
    """One link as returned: the concept with its name and Athena page; the source
    concept (absent from similarity links) with its own."""
    concept_id = int(row["concept_id"])
    link = {
        **row,
        "concept_id": concept_id,
        "concept_name": names.get(concept_id),
        "athena_url": athena_url(concept_id),
        "score": None if row["score"] is None else round(float(row["score"]), 4),
    }
    if row["source_concept_id"] is None:
        for key in ("source_concept_id", "source_vocabulary_id", "source_code"):
            del link[key]
    else:
        link["source_concept_id"] = int(row["source_concept_id"])
        link["source_athena_url"] = athena_url(row["source_concept_id"])
    return CrosswalkLink.model_validate(link)


@tool(
    "concept_crosswalk",
    "Call to find what in All of Us, UK Biobank and dbGaP records an OMOP concept.",
    CrosswalkParams,
    GROUP,
    response=CrosswalkAnswer,
    guide=(
        "What in every source (All of Us items, UK Biobank codings and fields, dbGaP "
        "variables) records an OMOP concept and, by default, its descendants, grouped by "
        "source; similarity links are labelled, never curated."
        " include_descendants also lists entities linked to the concept's descendants; "
        "include_similarity also lists links made by embedding similarity (not curated)."
    ),
)
def concept_crosswalk(release: Release, params: CrosswalkParams) -> CrosswalkAnswer:
    concept = concepts_by_id(release, [params.concept_id]).get(params.concept_id)
    if concept is None and not is_linked(release, params.concept_id):
        raise missing(
            release,
            "omop",
            f"Concept {params.concept_id} is neither in this release's vocabulary nor "
            "linked by any source; find ids with concept_search_exact or concept_ground.",
        )
    counts, rows = concept_links(
        release,
        params.concept_id,
        include_descendants=params.include_descendants,
        include_similarity=params.include_similarity,
        limit=params.limit,
    )
    names = {
        k: v["concept_name"]
        for k, v in concepts_by_id(release, {int(r["concept_id"]) for r in rows}).items()
    }
    by_source: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_source.setdefault(row.pop("source"), []).append(row)
    sources: dict[str, CrosswalkSource] = {}
    for source, links, entities in counts:
        listed = [_link(r, names) for r in by_source.get(source, [])]
        sources[source] = CrosswalkSource(
            links=links, entities=entities, truncated=links > len(listed), items=listed
        )
    return CrosswalkAnswer(
        concept=Concept.of(concept)
        if concept
        else UnlistedConcept(
            concept_id=params.concept_id,
            athena_url=athena_url(params.concept_id),
            in_vocabulary=False,
        ),
        include_descendants=params.include_descendants,
        sources=sources,
    )


def linked_concepts(release: Release, source: str, entity_id: str) -> list[LinkedConcept]:
    """The standard concepts one entity links to, curated first, with method and
    provenance (empty when the release has no crosswalk)."""
    rows = entity_links(release, source, entity_id)
    names = concepts_by_id(release, {int(r["concept_id"]) for r in rows})
    return [
        LinkedConcept(
            **r,
            concept_name=(names.get(int(r["concept_id"])) or {}).get("concept_name"),
            athena_url=athena_url(r["concept_id"]),
        )
        for r in rows
    ]
