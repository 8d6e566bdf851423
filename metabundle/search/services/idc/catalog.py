"""Imaging Data Commons catalog tools: the IDC data version and headline counts, the
collections (listed by cancer type, tumor location or modality, or one in full) and the
analysis results that annotate them."""

from __future__ import annotations

import difflib
import re
from typing import Annotated, Any

from pydantic import Field, StringConstraints

from metabundle.search.errors import not_found
from metabundle.search.params import Params, clamp
from metabundle.search.registry import tool
from metabundle.search.release import Release
from metabundle.search.services.idc import queries
from metabundle.search.services.idc.blocks import (
    page_block,
    size_block,
    source_entry,
    split_list,
)
from metabundle.search.services.idc.filters import ANALYSIS_NOTE
from metabundle.search.services.idc.models import (
    IdcAnalysisResult,
    IdcAnalysisResultList,
    IdcCollection,
    IdcCollectionDetails,
    IdcCollectionList,
    IdcPage,
    IdcSeriesCount,
    IdcStats,
    IdcVersion,
)
from metabundle.search.services.idc.source import (
    GROUP,
    PORTAL_URL,
    SOURCE,
    Offset,
    Text,
    require_idc,
)

DESCRIPTION_CHARS = 300


class NoParams(Params):
    pass


def _short(text: str | None) -> str | None:
    if text is None or len(text) <= DESCRIPTION_CHARS:
        return text
    return text[: DESCRIPTION_CHARS - 1] + "…"


def _page(rows: list[Any], limit: int, offset: int) -> IdcPage:
    return page_block(len(rows), limit, offset, len(rows[offset : offset + limit]))


def _series_counts(rows: list[tuple[Any, int]]) -> list[IdcSeriesCount]:
    return [IdcSeriesCount(value=value, series=n) for value, n in rows]


# -- version and stats ------------------------------------------------------------------


@tool(
    "get_idc_version",
    "Call first for IDC questions: the IDC data release held; cite it.",
    NoParams,
    GROUP,
    response=IdcVersion,
    guide=(
        "Call this first for Imaging Data Commons questions: the IDC data release this "
        "snapshot holds (e.g. v25) and its date. Cite the IDC version with any IDC "
        "answer. "
        "It also names the idc-index-data package version the data was read from."
    ),
)
def get_idc_version(release: Release, params: NoParams) -> IdcVersion:
    require_idc(release)
    latest = queries.latest_version(release)
    source = release.manifest["sources"][SOURCE]
    details = source.get("details") or {}
    return IdcVersion(
        idc_version=f"v{latest['idc_version']}",
        idc_version_number=latest["idc_version"],
        version_timestamp=latest["version_timestamp"],
        package=details.get("package", "idc-index-data"),
        package_version=details.get("package_version"),
        fetched_at=source.get("fetched_at"),
        release_version=release.version,
        portal=PORTAL_URL,
    )


@tool(
    "get_stats",
    "Call to size IDC as a whole (collections, patients, series, size).",
    NoParams,
    GROUP,
    response=IdcStats,
    guide=(
        "Headline counts of Imaging Data Commons (collections, patients, series, size, "
        "per modality and license). Call it to size IDC as a whole; use build_cohort for "
        "a selection."
    ),
)
def get_stats(release: Release, params: NoParams) -> IdcStats:
    require_idc(release)
    totals, size_bytes = queries.series_counts(release)
    return IdcStats(
        **totals,
        total_size=size_block(size_bytes),
        modalities=_series_counts(queries.series_breakdown(release, "Modality")),
        licenses=_series_counts(queries.series_breakdown(release, "license_short_name")),
        notes=[
            "patients counts distinct (collection_id, PatientID) pairs: PatientID is unique "
            "only within a collection.",
            "Sizes are in decimal units (1 MB = 10^6 bytes), from series_size_MB.",
        ],
    )


# -- collections ------------------------------------------------------------------------


class ListCollectionsParams(Params):
    cancer_type: Annotated[
        Text | None,
        Field(description="Text, e.g. lung."),
    ] = None
    tumor_location: Annotated[
        Text | None,
        Field(description="Text, e.g. breast."),
    ] = None
    modality: Annotated[
        Text | None,
        Field(description="E.g. CT, MR, SM."),
    ] = None
    limit: Annotated[int, clamp(1, 100), Field(description="1..100.")] = 20
    offset: Offset = 0


def _collection_fields(row: dict[str, Any]) -> dict[str, Any]:
    """The fields of :class:`IdcCollection` from a :func:`.queries.collections` row."""
    return {
        "collection_id": row["collection_id"],
        "collection_name": row["collection_name"],
        "cancer_types": split_list(row["cancer_types"]),
        "tumor_locations": split_list(row["tumor_locations"]),
        "species": split_list(row["species"]),
        "subjects": row["subjects"],
        "modalities": row["modalities"],
        "licenses": row["licenses"],
        "program_id": row["program_id"],
        "series": row["series"] or 0,
        "size": size_block(row["size_bytes"]),
        "canonical_url": row["canonical_url"],
    }


@tool(
    "list_collections",
    "Call to find IDC collections by cancer type, tumor location or modality.",
    ListCollectionsParams,
    GROUP,
    response=IdcCollectionList,
    guide=(
        "List IDC collections, optionally by cancer type, tumor location or modality; "
        "paged, with the total. Call it to find collections for a disease or body site; "
        "then get_collection. "
        "build_cohort with a collection_id filter counts a collection's series."
    ),
)
def list_collections(release: Release, params: ListCollectionsParams) -> IdcCollectionList:
    require_idc(release)
    rows = queries.collections(
        release,
        cancer_type=params.cancer_type,
        tumor_location=params.tumor_location,
        modality=params.modality,
    )
    answer = IdcCollectionList(
        page=_page(rows, params.limit, params.offset),
        collections=[
            IdcCollection(**_collection_fields(r))
            for r in rows[params.offset : params.offset + params.limit]
        ],
    )
    if not rows and (params.cancer_type or params.tumor_location or params.modality):
        answer.hint = _no_collection_hint(release, params)
    return answer


def _no_collection_hint(release: Release, params: ListCollectionsParams) -> str:
    """Close spellings of the words that matched nothing."""
    close: list[str] = []
    for value, column in (
        (params.cancer_type, "cancer_types"),
        (params.tumor_location, "tumor_locations"),
    ):
        if value:
            vocabulary = queries.collection_vocabulary(release, column)
            by_lower = {v.lower(): v for v in vocabulary}
            close += [
                by_lower[m]
                for m in difflib.get_close_matches(value.lower(), list(by_lower), n=5, cutoff=0.6)
            ]
    suggestion = f" Close values: {', '.join(close)}." if close else ""
    return (
        "No collection matches all the given criteria; loosen them (a word matches inside "
        f"a cancer type or location) or call search_idc.{suggestion}"
    )


class GetCollectionParams(Params):
    collection_id: Annotated[
        str,
        StringConstraints(min_length=1, max_length=200),
        Field(description="E.g. 'tcga_luad' or 'TCGA-LUAD'."),
    ]


def _normal(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


def resolve_collection(release: Release, given: str) -> str:
    """The collection_id for an id or a name, or ``not_found`` with suggestions."""
    rows = queries.collection_names(release)
    wanted = _normal(given)
    for collection_id, name in rows:
        if given == collection_id or wanted in (collection_id, _normal(name or "")):
            return collection_id
    choices = {cid: cid for cid, _ in rows} | {_normal(n or ""): cid for cid, n in rows}
    close = difflib.get_close_matches(wanted, list(choices), n=5, cutoff=0.6)
    suggestions = list(dict.fromkeys(choices[c] for c in close))
    raise not_found(
        f"There is no IDC collection {given!r}; call list_collections or search_idc.",
        suggestions=suggestions,
    )


@tool(
    "get_collection",
    "Call after list_collections or search_idc for one IDC collection's details.",
    GetCollectionParams,
    GROUP,
    response=IdcCollectionDetails,
    guide=(
        "Get one IDC collection: description, cancer types, sites, licenses, DOIs with "
        "citations, counts, size, modalities and analysis results. Call it after "
        "list_collections or search_idc. "
        "Then call build_cohort to select its series or get_citations to cite it."
    ),
)
def get_collection(release: Release, params: GetCollectionParams) -> IdcCollectionDetails:
    require_idc(release)
    collection_id = resolve_collection(release, params.collection_id.strip())
    row = queries.collections(release, collection_id=collection_id)[0]
    sources = queries.doi_sources(release)
    listed = [s for s in sources.values() if collection_id in (s["collections"] or [])]
    listed.sort(key=lambda s: (s["source_type"] != "original_data", s["doi"]))
    modalities = queries.series_breakdown(release, "Modality", "collection_id = ?", [collection_id])
    return IdcCollectionDetails.model_validate(
        {
            **_collection_fields(row),
            "description": row["description"],
            "supporting_data": split_list(row["supporting_data"]),
            "status": row["status"],
            "updated": row["updated"],
            "counts": queries.collection_counts(release, collection_id),
            "dois": [s["doi"] for s in listed],
            "sources": [source_entry(s) for s in listed],
            "series_by_modality": _series_counts(modalities),
            "analysis_results": queries.collection_analysis_results(release, collection_id),
            "notes": [ANALYSIS_NOTE],
        }
    )


# -- analysis results -------------------------------------------------------------------


class ListAnalysisResultsParams(Params):
    collection_id: Text | None = None
    modality: Annotated[Text | None, Field(description="E.g. SEG, SR.")] = None
    limit: Annotated[int, clamp(1, 100), Field(description="1..100.")] = 30
    offset: Offset = 0


@tool(
    "list_analysis_results",
    "Call to find IDC AI or expert annotations (segmentations, radiomics).",
    ListAnalysisResultsParams,
    GROUP,
    response=IdcAnalysisResultList,
    guide=(
        "List IDC analysis results (segmentations, annotations, radiomics) with DOI, "
        "license, modalities, annotated collections and series count. Call it to find AI "
        "or expert annotations. "
        "Filter a cohort with analysis_result_id in build_cohort."
        " collection_id keeps analysis results that annotate that collection."
    ),
)
def list_analysis_results(
    release: Release, params: ListAnalysisResultsParams
) -> IdcAnalysisResultList:
    require_idc(release)
    collection_id = None
    if params.collection_id:
        collection_id = resolve_collection(release, params.collection_id.strip())
    rows = queries.analysis_results(release, collection_id, params.modality)
    items = [
        IdcAnalysisResult(
            analysis_result_id=r["analysis_result_id"],
            title=r["analysis_result_title"],
            doi=r["source_DOI"],
            subjects=r["subjects"],
            collections=split_list(r["collections"]),
            modalities=split_list(r["modalities"]),
            license=r["license_short_name"],
            updated=r["updated"],
            series=r["series"] or 0,
            size=size_block(r["size_bytes"]),
            description=_short(r["description"]),
            citation=r["citation_text"],
            canonical_url=r["canonical_url"],
        )
        for r in rows[params.offset : params.offset + params.limit]
    ]
    return IdcAnalysisResultList(
        page=_page(rows, params.limit, params.offset), analysis_results=items
    )
