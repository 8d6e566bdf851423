"""All of Us tools: ``search_aou_catalog`` and ``get_aou_item``.

They follow the All of Us part of the QueryGaP retrieval contract: search the public
Data Browser catalogue (``aou_item`` and its search documents), then fetch one item by
its opaque ``result_id`` for identifiers, links, answer choices, scale membership and
concept relationships. Ranking goes through :mod:`.ranking`, SQL through :mod:`.queries`.
Navigation (modules, topics, domains) and support (answers) hits carry
``is_variable: false`` and must not be described as variables. Every list of an item is
capped (:data:`.queries.LIST_CAP`) and carries its total.

The contract gives no limit range for All of Us search; ``limit`` is clamped to
1..20 so that a page of items with subtitles and scores stays small.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import Field

from metabundle.search.errors import invalid, not_found
from metabundle.search.params import Explain, Method, Params, Query, clamp
from metabundle.search.payload import Retrieval
from metabundle.search.registry import tool
from metabundle.search.release import Release
from metabundle.search.retrieval import Hit
from metabundle.search.services.aou import queries
from metabundle.search.services.aou.identifiers import resolve_identifier
from metabundle.search.services.aou.models import (
    CappedList,
    CatalogResult,
    CatalogScores,
    CatalogSearchAnswer,
    IdentifierResolution,
    ItemAnswer,
    ItemRef,
    Membership,
    Relationship,
)
from metabundle.search.services.aou.ranking import AouFilters, rank_items
from metabundle.search.services.omop.crosswalk import linked_concepts

GROUP = "aou"
MAX_LIMIT = 20
RESULT_PREFIX = "aou.doc."
RESULT_ID = re.compile(r"aou\.doc\.[0-9a-f]{24}")
EHR_FILTERS = ("ehr_domain", "ehr_role", "ehr_vocabulary")
COVERAGE_NOTICE = (
    "All of Us coverage is public Data Browser metadata: a hit does not establish that a "
    "variable has data for a participant, a workspace or a controlled dataset. Items with "
    "is_variable false are navigation (modules, topics, domains) or support (answers) "
    "hits, not variables."
)

VariableType = Literal["ehr", "survey", "physical_measurement", "fitbit"]
EhrRole = Literal["standard", "source", "classification"]


class SearchAouParams(Params):
    query: Query
    method: Method = "hybrid"
    limit: Annotated[int, clamp(1, MAX_LIMIT), Field(description=f"1..{MAX_LIMIT}.")] = 10
    variable_type: VariableType | None = None
    ehr_domain: Annotated[
        str | None,
        Field(
            max_length=100,
            description="Needs variable_type=ehr.",
        ),
    ] = None
    ehr_role: Annotated[
        EhrRole | None,
        Field(description="Needs variable_type=ehr."),
    ] = None
    ehr_vocabulary: Annotated[
        str | None,
        Field(
            max_length=100,
            description="Needs variable_type=ehr.",
        ),
    ] = None
    explain: Explain = False


class GetAouItemParams(Params):
    result_id: Annotated[
        str,
        Field(
            max_length=100,
            description="A result_id, OMOP concept id, concept or question code, or "
            "vocabulary:code.",
        ),
    ]


# -- search -----------------------------------------------------------------------------


def _canonical(release: Release, column: str, name: str, value: str | None) -> str | None:
    """``value`` spelt as the release spells it among EHR items, or ``invalid_request``."""
    if value is None:
        return None
    known = queries.ehr_values(release, column)
    for candidate in known:
        if candidate.lower() == value.strip().lower():
            return candidate
    raise invalid(f"Unknown {name} {value!r}; this release has {', '.join(known)}.")


def _filters(release: Release, params: SearchAouParams) -> AouFilters:
    """Validated filters: EHR filters need variable_type=ehr, values must exist."""
    if params.variable_type != "ehr":
        for name in EHR_FILTERS:
            if getattr(params, name) is not None:
                raise invalid(f"{name} requires variable_type='ehr'.")
    return AouFilters(
        variable_type=params.variable_type,
        ehr_domain=_canonical(release, "domain", "ehr_domain", params.ehr_domain),
        ehr_role=params.ehr_role,
        ehr_vocabulary=_canonical(release, "vocabulary", "ehr_vocabulary", params.ehr_vocabulary),
    )


def _result(position: int, hit: Hit, row: dict[str, Any]) -> CatalogResult:
    """The hit at rank ``position`` with its item's :data:`.queries.ITEM_COLUMNS`."""
    signals = hit.breakdown()
    scores = CatalogScores.model_validate(
        {
            **hit.scores(),
            **{name: signals[name] for name in ("title_similarity", "via_answers", "intent")},
        }
    )
    return CatalogResult.model_validate({"rank": position, **row, "scores": scores})


@tool(
    "search_aou_catalog",
    "Call for any All of Us question: searches the Data Browser catalogue; then get_aou_item.",
    SearchAouParams,
    GROUP,
    response=CatalogSearchAnswer,
    guide=(
        "Search the All of Us Data Browser catalogue: survey questions and answers, "
        "modules, physical measurements and EHR concepts. Call it for any All of Us "
        "question (codes such as loinc:8462-4 resolve first); then get_aou_item. "
        "Narrow with variable_type (ehr, survey, physical_measurement, fitbit); ehr_domain, "
        "ehr_role and ehr_vocabulary require variable_type=ehr. get_aou_item gives identifiers, "
        "links, answer choices, module and topic membership and concept relationships. Preserve "
        "is_variable: navigation and support hits are not variables. Hits show public metadata, "
        "not data availability for a participant or workspace."
        " method semantic does not resolve codes; ehr_domain (an OMOP domain, e.g. "
        "Condition), ehr_role and ehr_vocabulary (e.g. LOINC) need variable_type=ehr."
    ),
)
def search_aou_catalog(release: Release, params: SearchAouParams) -> CatalogSearchAnswer:
    filters = _filters(release, params)
    hits, rows, retrieval = rank_items(
        release,
        params.query,
        method=params.method,
        filters=filters,
        limit=params.limit,
        explain=params.explain,
    )
    return CatalogSearchAnswer(
        query=params.query,
        filters=filters.describe(),
        retrieval=Retrieval.model_validate(retrieval.to_json()),
        results=[_result(i, h, rows[h.docno]) for i, h in enumerate(hits, start=1)],
        coverage_notice=COVERAGE_NOTICE,
    )


# -- one item ---------------------------------------------------------------------------


def _membership(release: Release, item: dict[str, Any]) -> Membership:
    """Where the item sits: its parent, survey module and survey topic (or null)."""
    found = queries.membership(release, item)
    roles = ("parent", "module", "topic")
    return Membership.model_validate({role: found.get(role) for role in roles})


def _relationship(row: dict[str, Any]) -> Relationship:
    via = None
    if row["via_result_id"] is not None:
        via = ItemRef(
            result_id=row["via_result_id"],
            kind=row["via_kind"],
            title=row["via_title"],
            is_variable=row["via_is_variable"],
        )
    return Relationship(
        edge_kind=row["edge_kind"],
        direction=row["direction"],
        qualifier=row["qualifier"] or None,
        item=ItemRef(
            result_id=row["result_id"],
            kind=row["kind"],
            title=row["title"],
            is_variable=row["is_variable"],
        ),
        via=via,
    )


def _relationships(release: Release, result_id: str) -> CappedList[Relationship]:
    """Edges other than answers and topic membership, both ways, with the item at the
    other end and the answer they go through (``via``)."""
    capped = queries.relationships(release, result_id)
    return CappedList[Relationship](
        total=capped["total"], items=[_relationship(row) for row in capped["items"]]
    )


def _item(release: Release, result_id: str) -> tuple[dict[str, Any], IdentifierResolution | None]:
    """The item ``result_id`` names (an opaque result id, or an identifier
    :func:`resolve_identifier` resolves) and the resolution block, if one was needed."""
    text = result_id.strip().lower()
    resolution = None
    if not text or (text.startswith(RESULT_PREFIX) and not RESULT_ID.fullmatch(text)):
        raise invalid(
            "result_id must be an All of Us result id ('aou.doc.' and 24 hex digits, as "
            "search_aou_catalog returns it) or an item's concept id, concept code or "
            "question code."
        )
    if not RESULT_ID.fullmatch(text):
        text, resolution = resolve_identifier(release, result_id)
    row = queries.item(release, text)
    if row is None:
        raise not_found(
            f"There is no All of Us item {text} in release {release.version}; "
            "call search_aou_catalog to find one."
        )
    return row, resolution


@tool(
    "get_aou_item",
    "Call before citing an All of Us item (a search_aou_catalog result_id or a code).",
    GetAouItemParams,
    GROUP,
    response=ItemAnswer,
    guide=(
        "Get one All of Us item (by the result_id search_aou_catalog returned, or an OMOP"
        " concept id, concept code or question code) with its codes, links, answer "
        "choices, membership and relationships. Call it before citing an item. "
        "The record holds the question text, codes, domain, vocabulary and participant count (or "
        "why it is null), identifiers and aliases, public links (Data Browser page, survey PDFs, "
        "Athena), the answer choices of a question, the members of a module, topic or domain, "
        "where the item belongs (parent, survey module, topic) and its relationships (branching "
        "questions, family history answers, OMOP Maps to and Subsumes). Lists are capped and give"
        " their totals."
        " result_id is a result_id (aou.doc.<hex>), an OMOP concept id, a concept or "
        "question code, or vocabulary:code."
    ),
)
def get_aou_item(release: Release, params: GetAouItemParams) -> ItemAnswer:
    item, resolution = _item(release, params.result_id)
    result_id = item["result_id"]
    payload: dict[str, Any] = {
        **({"resolution": resolution} if resolution is not None else {}),
        "item": {k: v for k, v in item.items() if k not in ("parent_result_id",)},
        "membership": _membership(release, item),
        "identifiers": queries.identifiers(release, result_id),
        "links": queries.links(release, result_id),
    }
    if item["kind"] == "question":
        payload["answers"] = queries.answers(release, result_id)
    if item["search_role"] == "navigation":
        payload["members"] = queries.members(release, result_id)
    payload["relationships"] = _relationships(release, result_id)
    payload["linked_concepts"] = linked_concepts(release, "aou", result_id)
    payload["coverage_notice"] = COVERAGE_NOTICE
    return ItemAnswer.model_validate(payload)
