"""Imaging Data Commons cohorts: counts and rows of a filtered selection of series,
and the citations and licenses that come with it.

Every tool here takes the structured filters of :mod:`.idc_filters` (bound
parameters over whitelisted ``idc_series`` columns) and answers from the release.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import Field

from metabundle.search.params import Params, clamp
from metabundle.search.registry import tool
from metabundle.search.release import Release
from metabundle.search.services.idc.common import (
    GROUP,
    SIZE_BYTES_SQL,
    human_size,
    license_details,
    page_block,
    require_idc,
    series_counts,
    size_block,
)
from metabundle.search.services.idc.filters import (
    Filters,
    Selection,
    compile_filters,
    require_filters,
)
from metabundle.search.services.idc.manifest import download_block
from metabundle.search.services.idc.tools import Offset

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
    "Call to select IDC series with filters and count patients, studies, series and size.",
    BuildCohortParams,
    GROUP,
    guide=(
        "Select IDC series with filters and get patient, study and series counts, size, "
        "breakdowns and a page of series. Call list_attributes and get_attribute_values "
        "first; heed warnings. "
        "Filters map an attribute to a list of values (ORed; null = missing) or, for a numeric "
        "or date attribute, a {min, max} range (numbers; dates YYYY-MM-DD); attributes come "
        "from list_attributes and list_index_attributes, values from get_attribute_values. "
        "Warnings flag, e.g., a value whose case differs from the stored one. Then call "
        "get_cohort_urls for paged download manifests, get_citations and get_licenses; the "
        "answer carries the download commands of the whole selection."
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
        "download": download_block(selection, ["aws"]),
        **selection.echo(),
    }


# -- licenses ---------------------------------------------------------------------------


class LicensesParams(Params):
    filters: Annotated[
        Filters | None,
        Field(description="Omit for all of IDC."),
    ] = None


@tool(
    "get_licenses",
    "Call before recommending IDC data for reuse: license breakdown of a selection.",
    LicensesParams,
    GROUP,
    guide=(
        "Get the license breakdown (series, patients, size per license, with URL) of a "
        "selection or of all IDC. Call it before recommending data for reuse; flag "
        "non-commercial licenses."
    ),
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
