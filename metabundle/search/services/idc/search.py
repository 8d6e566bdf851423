"""Ranked search over the Imaging Data Commons collections and analysis results
(``search_idc``), each result with the facts that tell them apart."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from metabundle.search.params import Explain, Method, Params, Query, clamp
from metabundle.search.payload import Retrieval, search_result
from metabundle.search.ranking.pipeline import rank
from metabundle.search.ranking.policies import IDC_SEARCH
from metabundle.search.registry import tool
from metabundle.search.release import Release
from metabundle.search.retrieval import documents, mask_from_sql
from metabundle.search.services.idc import queries
from metabundle.search.services.idc.blocks import split_list
from metabundle.search.services.idc.models import IdcSearchAnswer, IdcSearchResult
from metabundle.search.services.idc.source import GROUP, SOURCE, require_idc


class SearchIdcParams(Params):
    query: Query
    method: Method = "hybrid"
    kind: Literal["collection", "analysis_result"] | None = None
    limit: Annotated[int, clamp(1, 50), Field(description="1..50.")] = 10
    explain: Explain = False


SUMMARY_LIST_ITEMS = 8
"""A search hit lists at most this many cancer types or collections (a basket trial
such as EAY131 names dozens); ``<name>_total`` then counts them all, and
get_collection or list_analysis_results gives the whole list."""


def _summary_list(name: str, text: str | None) -> dict[str, Any]:
    """``{name: items}``, cut to :data:`SUMMARY_LIST_ITEMS` with ``<name>_total``."""
    items = split_list(text)
    if len(items) <= SUMMARY_LIST_ITEMS:
        return {name: items}
    return {name: items[:SUMMARY_LIST_ITEMS], f"{name}_total": len(items)}


def _facts(release: Release, rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per entity id, the :class:`IdcSearchResult` facts an agent needs to choose among
    results."""
    ids = [r["entity_id"] for r in rows]
    facts: dict[str, dict[str, Any]] = {}
    for r in queries.collection_facts(release, ids):
        facts[r["collection_id"]] = {
            **_summary_list("cancer_types", r["cancer_types"]),
            "tumor_locations": split_list(r["tumor_locations"]),
            "modalities": r["modalities"],
            "subjects": r["subjects"],
        }
    for r in queries.analysis_result_facts(release, ids):
        facts[r["analysis_result_id"]] = {
            **_summary_list("collections", r["collections"]),
            "modalities": split_list(r["modalities"]),
            "subjects": r["subjects"],
        }
    return facts


@tool(
    "search_idc",
    "Call when list_collections' filters are too narrow: searches IDC collections by meaning.",
    SearchIdcParams,
    GROUP,
    response=IdcSearchAnswer,
    guide=(
        "Search IDC collections and analysis results by meaning or keywords (disease, "
        "organ, modality, trial, DOI). Call it when list_collections' word filters are "
        "too narrow. "
        "Exact ids and DOIs rank first. Then call get_collection or list_analysis_results for "
        "details."
    ),
)
def search_idc(release: Release, params: SearchIdcParams) -> IdcSearchAnswer:
    require_idc(release)
    kinds = [params.kind] if params.kind else ["collection", "analysis_result"]
    mask = mask_from_sql(release, "source = ? AND list_contains(?, kind)", [SOURCE, kinds])
    hits, retrieval = rank(
        release,
        params.query,
        policy=IDC_SEARCH,
        method=params.method,
        mask=mask,
        limit=params.limit,
        explain=params.explain,
    )
    rows = documents(release, [h.docno for h in hits])
    facts = _facts(release, list(rows.values()))
    results = []
    for position, hit in enumerate(hits, start=1):
        row = rows[hit.docno]
        result = search_result(position, row, hit.scores())
        results.append(
            IdcSearchResult.model_validate(
                {**result.model_dump(exclude_unset=True), **facts.get(row["entity_id"], {})}
            )
        )
    return IdcSearchAnswer(
        query=params.query,
        retrieval=Retrieval.model_validate(retrieval.to_json()),
        results=results,
    )
