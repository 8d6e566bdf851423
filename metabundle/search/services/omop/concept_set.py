"""``concept_set_resolve``: an ATLAS concept-set expression to its concept ids.

The expression is taken as ATLAS exports it, ``{"items": [{"concept": {"CONCEPT_ID":
…, …}, "isExcluded": …, "includeDescendants": …, "includeMapped": …}]}`` (or a
whole exported concept set, whose ``expression`` holds that), and resolved as OHDSI
Circe's ``ConceptSetExpressionQueryBuilder`` (behind WebAPI's
``/vocabulary/resolveConceptSetExpression`` and ATLAS's "Included Concepts") does:

* a set's concepts are its items' concepts present in ``concept`` (valid or not),
  plus, for items with descendants, every **valid** concept below them in
  ``concept_ancestor`` (whose self rows put the item itself in too, when valid);
* with ``includeMapped``, the set also holds every ``concept_id_1`` of a valid
  "Maps to" relationship into the concepts of the mapped items (those with
  descendants contributing their descendants), whatever ``concept_id_1`` is;
* the included set is built from the non-excluded items, the excluded set the same
  way from the excluded items, and the result is the first minus the second; with no
  included item the result is empty.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema, model_validator

from metabundle.search.params import Params, clamp
from metabundle.search.registry import tool
from metabundle.search.release import Release
from metabundle.search.services.omop.concepts import MAX_CONCEPT_ID
from metabundle.search.services.omop.models import Concept, ConceptSetAnswer, ConceptSetCounts
from metabundle.search.services.omop.queries import concepts_by_id, vocabulary_counts
from metabundle.search.services.omop.tools import GROUP

MAX_ITEMS = 1000
#: Concept ids listed at most (``count`` is always complete).
MAX_LISTED_IDS = 10_000


class SetConcept(BaseModel):
    """The ``concept`` of an item: ATLAS exports every concept column; only the id
    counts."""

    model_config = ConfigDict(extra="allow")
    CONCEPT_ID: Annotated[int, Field(ge=1, le=MAX_CONCEPT_ID)]


class SetItem(BaseModel):
    model_config = ConfigDict(extra="ignore")
    concept: SetConcept
    isExcluded: bool = False
    includeDescendants: bool = False
    includeMapped: bool = False


class Expression(BaseModel):
    model_config = ConfigDict(extra="ignore")
    items: Annotated[list[SetItem], Field(max_length=MAX_ITEMS)]

    @model_validator(mode="before")
    @classmethod
    def _unwrap_exported_set(cls, data: Any) -> Any:
        if (
            isinstance(data, dict)
            and "items" not in data
            and isinstance(data.get("expression"), dict)
        ):
            return data["expression"]
        return data


class ConceptSetParams(Params):
    expression: Annotated[
        Expression,
        Field(
            description='As ATLAS exports it: {"items": [{"concept": {"CONCEPT_ID": 201826}, '
            '"includeDescendants": true, "includeMapped": false, "isExcluded": false}]}.'
        ),
        WithJsonSchema({"type": "object"}),
    ]
    limit: Annotated[int, clamp(0, 1000), Field(description="0..1000.")] = 100


def _members(concepts: str, descendants: str) -> str:
    """SQL for the concepts of a list of items (Circe's conceptSetQuery UNION
    conceptSetDescendants); ``concepts``/``descendants`` name BIGINT[] columns of
    ``ids``."""
    return (
        f"SELECT concept_id FROM omop_concept WHERE concept_id IN "
        f"(SELECT unnest({concepts}) FROM ids) "
        "UNION SELECT c.concept_id FROM omop_concept c "
        "JOIN omop_concept_ancestor ca ON c.concept_id = ca.descendant_concept_id "
        f"WHERE c.invalid_reason IS NULL AND ca.ancestor_concept_id IN "
        f"(SELECT unnest({descendants}) FROM ids)"
    )


def _side(prefix: str) -> str:
    """SQL for the included (``prefix`` ``inc``) or excluded (``exc``) set."""
    mapped = (
        "SELECT DISTINCT cr.concept_id_1 FROM ("
        + _members(f"{prefix}_mapped", f"{prefix}_mapped_descendants")
        + ") m JOIN omop_concept_relationship cr ON m.concept_id = cr.concept_id_2 "
        "AND cr.relationship_id = 'Maps to' AND cr.invalid_reason IS NULL"
    )
    return (
        f"SELECT concept_id FROM ({_members(f'{prefix}_concepts', f'{prefix}_descendants')}) "
        f"WHERE len((SELECT {prefix}_concepts FROM ids)) > 0 "
        f"UNION SELECT concept_id_1 FROM ({mapped}) "
        f"WHERE len((SELECT {prefix}_concepts FROM ids)) > 0"
    )


RESOLVE_SQL = f"""
WITH ids AS (
    SELECT ?::BIGINT[] AS inc_concepts, ?::BIGINT[] AS inc_descendants,
           ?::BIGINT[] AS inc_mapped, ?::BIGINT[] AS inc_mapped_descendants,
           ?::BIGINT[] AS exc_concepts, ?::BIGINT[] AS exc_descendants,
           ?::BIGINT[] AS exc_mapped, ?::BIGINT[] AS exc_mapped_descendants
),
included AS ({_side("inc")}),
excluded AS ({_side("exc")})
SELECT DISTINCT i.concept_id, e.concept_id IS NOT NULL AS is_excluded
FROM included i LEFT JOIN excluded e ON e.concept_id = i.concept_id
ORDER BY 1
"""


def _lists(items: list[SetItem], excluded: bool) -> list[list[int]]:
    chosen = [i for i in items if i.isExcluded == excluded]
    return [
        [i.concept.CONCEPT_ID for i in chosen],
        [i.concept.CONCEPT_ID for i in chosen if i.includeDescendants],
        [i.concept.CONCEPT_ID for i in chosen if i.includeMapped],
        [i.concept.CONCEPT_ID for i in chosen if i.includeMapped and i.includeDescendants],
    ]


def resolve(release: Release, expression: Expression) -> tuple[list[int], int]:
    """The expression's concept ids, ascending, and how many included ids the
    exclusions removed."""
    rows = release.query(
        RESOLVE_SQL, [*_lists(expression.items, False), *_lists(expression.items, True)]
    )
    kept = [int(concept_id) for concept_id, is_excluded in rows if not is_excluded]
    return kept, len(rows) - len(kept)


@tool(
    "concept_set_resolve",
    "Call to resolve an ATLAS concept-set expression to concept ids as ATLAS does.",
    ConceptSetParams,
    GROUP,
    response=ConceptSetAnswer,
    guide=(
        "Resolve an ATLAS concept-set expression (as ATLAS exports it) to its concept ids"
        " exactly as ATLAS does: descendants, mapped source concepts, exclusions."
    ),
)
def concept_set_resolve(release: Release, params: ConceptSetParams) -> ConceptSetAnswer:
    items = params.expression.items
    concept_ids, removed = resolve(release, params.expression)
    item_ids = [i.concept.CONCEPT_ID for i in items]
    known_items = concepts_by_id(release, item_ids)
    listed = concepts_by_id(release, concept_ids[: params.limit])
    return ConceptSetAnswer(
        count=len(concept_ids),
        counts=ConceptSetCounts(
            items=len(items),
            excluded_items=sum(i.isExcluded for i in items),
            removed_by_exclusions=removed,
            by_vocabulary=vocabulary_counts(release, concept_ids),
        ),
        unknown_item_concept_ids=sorted({i for i in item_ids if i not in known_items}),
        concept_ids=concept_ids[:MAX_LISTED_IDS],
        concept_ids_truncated=len(concept_ids) > MAX_LISTED_IDS,
        concepts=[Concept.of(listed[i]) for i in concept_ids[: params.limit] if i in listed],
        truncated=len(concept_ids) > params.limit,
    )
