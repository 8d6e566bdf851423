"""``search_dbgap_catalog``: search inside one dbGaP study version, its variables,
datasets or documents.

Ranking follows the QueryGaP contract through the ``dbgap_catalog`` and
``dbgap_documents`` policies of :mod:`metabundle.search.ranking.policies`: variables
and datasets by BM25 keyword, semantic (description embeddings, name fallback) or
hybrid 0.3 keyword / 0.7 semantic; documents by a case-insensitive title substring
(keyword) and title-only embeddings (semantic). The study scope is a mask over
``search_doc.study_id``, applied before any candidate limit. The result items are
:mod:`.catalog_items`, their statistics :mod:`.stats`.
"""

from __future__ import annotations

from typing import Annotated, Literal

import numpy as np
from pydantic import Field

from metabundle.search.params import Explain, Method, Params, Query, clamp
from metabundle.search.payload import Retrieval
from metabundle.search.ranking.pipeline import rank
from metabundle.search.ranking.policies import DBGAP_DOCUMENTS, DBGAP_VARIABLES
from metabundle.search.registry import tool
from metabundle.search.release import Release
from metabundle.search.retrieval import Hit, mask_from_sql
from metabundle.search.services.dbgap.catalog_items import result_items
from metabundle.search.services.dbgap.models import CatalogAnswer
from metabundle.search.services.dbgap.resolution import versioned_study
from metabundle.search.services.dbgap.studies import scope_for
from metabundle.search.services.dbgap.study_tools import GROUP, STUDY_ID


def scope_mask(release: Release, kind: str, study_id: str) -> np.ndarray:
    """The ``kind`` documents of one study version."""
    return mask_from_sql(
        release, "source = 'dbgap' AND kind = ? AND study_id = ?", [kind, study_id]
    )


def rank_in_study(
    release: Release,
    kind: str,
    study_id: str,
    query: str,
    method: str,
    limit: int,
    explain: bool = False,
) -> tuple[list[Hit], Retrieval]:
    """Hits of ``kind`` in ``study_id`` and the retrieval block."""
    hits, retrieval = rank(
        release,
        query,
        policy=DBGAP_DOCUMENTS if kind == "document" else DBGAP_VARIABLES,
        method=method,
        mask=scope_mask(release, kind, study_id),
        limit=limit,
        explain=explain,
    )
    return hits, Retrieval.model_validate(retrieval.to_json())


class CatalogParams(Params):
    study_id: STUDY_ID
    query: Query
    kind: Literal["variable", "dataset", "document"] = "variable"
    method: Method = "hybrid"
    limit: Annotated[int, clamp(1, 20), Field(description="1..20.")] = 10
    include_stats: bool = False
    explain: Explain = False


@tool(
    "search_dbgap_catalog",
    "Call with a versioned study_id to search one dbGaP study's variables or documents.",
    CatalogParams,
    GROUP,
    response=CatalogAnswer,
    guide=(
        "Search one dbGaP study version's variables (default), datasets or documents. "
        "Call it with the full versioned study_id from resolve_dbgap_study; cite "
        "canonical_url and the exact accessions. "
        "method: hybrid (default; 0.3 keyword + 0.7 semantic), keyword or semantic. Documents are"
        " matched by title only (keyword: the title contains the query; their contents are not "
        "indexed). include_stats=true adds variables' summary statistics. A match documents a "
        "variable; it does not establish data access or availability."
        " include_stats adds variables' summary statistics from their variable reports."
    ),
)
def search_dbgap_catalog(release: Release, params: CatalogParams) -> CatalogAnswer:
    study = versioned_study(release, params.study_id, "search_dbgap_catalog")
    searched, in_scope = scope_for(release, study, params.kind)
    hits, retrieval = rank_in_study(
        release, params.kind, searched, params.query, params.method, params.limit, params.explain
    )
    results = result_items(release, params.kind, hits, include_stats=params.include_stats)
    answer = CatalogAnswer(
        query=params.query,
        study_id=study.study_id,
        searched_study_id=searched,
        metadata_scope="exact" if searched == study.study_id else "base",
        kind=params.kind,
        in_scope=in_scope,
        retrieval=retrieval,
        results=results,
    )
    if searched != study.study_id:
        answer.scope_note = (
            f"{study.study_id} has no {params.kind} metadata in this release; the "
            f"{params.kind}s of {searched}, another version of the same study, were searched."
        )
    elif in_scope == 0:
        answer.scope_note = f"No version of {study.base} has {params.kind} metadata here."
    if params.kind == "document":
        answer.content_indexed = False
    if params.include_stats and params.kind != "variable":
        answer.stats_note = "include_stats applies to variables only."
    return answer
