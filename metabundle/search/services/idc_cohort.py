"""Imaging Data Commons cohorts: counts and rows of a filtered selection of series,
and the citations and licenses that come with it.

Every tool here takes the structured filters of :mod:`.idc_filters` (bound
parameters over whitelisted ``idc_series`` columns) and answers from the release.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import Field

from metabundle.search.errors import invalid
from metabundle.search.params import Params, clamp
from metabundle.search.release import Release
from metabundle.search.services.idc import Offset, Text, resolve_collection
from metabundle.search.services.idc_common import (
    GROUP,
    SIZE_BYTES_SQL,
    doi_sources,
    human_size,
    license_details,
    page_block,
    require_idc,
    series_counts,
    size_block,
    source_entry,
)
from metabundle.search.services.idc_filters import (
    Filters,
    Selection,
    compile_filters,
    require_filters,
)
from metabundle.search.tools import tool

DEFAULT_PAGE = 10
MAX_PAGE = 100
TOP_COLLECTIONS = 10
ROW_COLUMNS = (
    "collection_id",
    "analysis_result_id",
    "PatientID",
    "StudyInstanceUID",
    "SeriesInstanceUID",
    "Modality",
    "BodyPartExamined",
    "SeriesDescription",
    "instanceCount",
    "series_size_MB",
    "license_short_name",
    "source_DOI",
)
ROW_ORDER = "collection_id, PatientID, StudyInstanceUID, SeriesInstanceUID"
NON_COMMERCIAL = re.compile(r"\bNC\b")


def cohort_counts(release: Release, selection: Selection) -> dict[str, Any]:
    """Distinct collections, patients, studies and series, instances and total size."""
    counts, size = series_counts(release, selection.where, selection.params)
    return {"counts": counts, "total_size": size}


def _grouped(release: Release, selection: Selection, column: str, limit: int | None) -> list:
    rows = release.query(
        f"SELECT {column}, count(*) AS n, {SIZE_BYTES_SQL} FROM idc_series "
        f"WHERE {selection.where} GROUP BY 1 ORDER BY n DESC, 1" + (" LIMIT ?" if limit else ""),
        selection.params + ([limit] if limit else []),
    )
    return [{"value": v, "series": n, "size_bytes": b, "size": human_size(b)} for v, n, b in rows]


class BuildCohortParams(Params):
    filters: Filters
    limit: Annotated[
        int,
        clamp(0, MAX_PAGE),
        Field(description=f"Series rows to return, 0..{MAX_PAGE} (0: counts only)."),
    ] = DEFAULT_PAGE
    offset: Offset = 0


@tool(
    "build_cohort",
    "Select IDC series with filters and get patient, study and series counts, size, breakdowns "
    "and a page of series. Call list_attributes and get_attribute_values first; heed warnings.",
    BuildCohortParams,
    GROUP,
    guide=(
        "Filters map an attribute to a list of values or, for a numeric attribute, a {min, max} "
        "range. Warnings flag, e.g., a value whose case differs from the stored one. Then call "
        "get_cohort_urls for download manifests, get_citations and get_licenses."
    ),
)
def build_cohort(release: Release, params: BuildCohortParams) -> dict[str, Any]:
    require_idc(release)
    selection = compile_filters(release, params.filters)
    require_filters(selection, "build_cohort", "call get_stats for the whole of IDC.")
    summary = cohort_counts(release, selection)
    total = summary["counts"]["series"]
    rows = []
    if params.limit:
        rows = release.query_dicts(
            f"SELECT {', '.join(ROW_COLUMNS)} FROM idc_series WHERE {selection.where} "
            f"ORDER BY {ROW_ORDER} LIMIT ? OFFSET ?",
            [*selection.params, params.limit, params.offset],
        )
    return {
        **summary,
        "by_modality": _grouped(release, selection, "Modality", None),
        "by_collection": _grouped(release, selection, "collection_id", TOP_COLLECTIONS),
        "page": page_block(total, params.limit, params.offset, len(rows)),
        "series": rows,
        **selection.echo(),
    }


# -- citations --------------------------------------------------------------------------


class CitationsParams(Params):
    collection_id: Annotated[
        Text | None,
        Field(description="Cite one collection (all its series, analysis results included)."),
    ] = None
    filters: Annotated[
        Filters | None,
        Field(description="Cite the sources of the series matching these build_cohort filters."),
    ] = None
    limit: Annotated[int, clamp(1, 300), Field(description="Citations to return, 1..300.")] = 50


def _citation_selection(release: Release, params: CitationsParams) -> Selection:
    if params.collection_id and params.filters:
        raise invalid("get_citations: pass collection_id or filters, not both.")
    filters = params.filters
    if params.collection_id:
        filters = {"collection_id": [resolve_collection(release, params.collection_id.strip())]}
    selection = compile_filters(release, filters)
    require_filters(selection, "get_citations", "pass collection_id or filters.")
    return selection


@tool(
    "get_citations",
    "Get the citations (APA text, DOI, license) of a collection or filtered selection, most-used "
    "first. Call it whenever you report or hand over IDC data.",
    CitationsParams,
    GROUP,
    guide=("The text comes from idc-index-data, so the user can credit the data providers."),
)
def get_citations(release: Release, params: CitationsParams) -> dict[str, Any]:
    require_idc(release)
    selection = _citation_selection(release, params)
    used = release.query(
        f"SELECT lower(source_DOI) AS doi, count(*) AS n FROM idc_series "
        f"WHERE {selection.where} GROUP BY 1 ORDER BY n DESC, 1",
        selection.params,
    )
    sources = doi_sources(release, [doi for doi, _ in used if doi])
    citations = []
    for doi, series in used[: params.limit]:
        known = sources.get(doi)
        entry = source_entry(known) if known else {"doi": doi, "citation": None}
        citations.append({**entry, "series": series})
    return {
        "citations": citations,
        "total": len(used),
        "returned": len(citations),
        "truncated": len(used) > len(citations),
        **selection.echo(),
        "format_note": (
            "Only the APA-style text that idc-index-data ships is available offline; for "
            "BibTeX or CSL-JSON, request https://doi.org/<doi> with an Accept header "
            "(application/x-bibtex, application/vnd.citationstyles.csl+json)."
        ),
    }


# -- licenses ---------------------------------------------------------------------------


class LicensesParams(Params):
    filters: Annotated[
        Filters | None,
        Field(description="build_cohort filters; omit for the whole of IDC."),
    ] = None


@tool(
    "get_licenses",
    "Get the license breakdown (series, patients, size per license, with URL) of a selection or "
    "of all IDC. Call it before recommending data for reuse; flag non-commercial licenses.",
    LicensesParams,
    GROUP,
)
def get_licenses(release: Release, params: LicensesParams) -> dict[str, Any]:
    require_idc(release)
    selection = compile_filters(release, params.filters)
    rows = release.query(
        f"""
        SELECT license_short_name, count(*) AS n,
               count(DISTINCT (collection_id, PatientID)),
               count(DISTINCT collection_id), {SIZE_BYTES_SQL}
        FROM idc_series WHERE {selection.where} GROUP BY 1 ORDER BY n DESC, 1
        """,
        selection.params,
    )
    details = license_details(release)
    licenses = [
        {
            "license": name,
            "long_name": details.get(name, {}).get("long_name"),
            "url": details.get(name, {}).get("url"),
            "non_commercial_only": bool(name and NON_COMMERCIAL.search(name)),
            "series": series,
            "patients": patients,
            "collections": collections,
            "size": size_block(size_bytes),
        }
        for name, series, patients, collections, size_bytes in rows
    ]
    return {
        "licenses": licenses,
        "series": sum(item["series"] for item in licenses),
        **selection.echo(),
        "note": "Licenses attach to series; a selection can mix them. Read each license's "
        "terms (url) before reuse; non_commercial_only flags CC BY-NC licenses.",
    }
