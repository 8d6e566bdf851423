"""Imaging Data Commons cohorts: counts, breakdowns and rows of a filtered selection of
series, and the licenses that cover it.

Both tools take the structured filters of :mod:`.filters` (bound
parameters over whitelisted ``idc_series`` columns) and answers from the release.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import Field

from metabundle.search.params import Params, clamp
from metabundle.search.registry import tool
from metabundle.search.release import Release
from metabundle.search.services.idc import queries
from metabundle.search.services.idc.blocks import (
    human_size,
    license_details,
    page_block,
    size_block,
)
from metabundle.search.services.idc.filters import (
    Filters,
    Selection,
    compile_filters,
    require_filters,
)
from metabundle.search.services.idc.manifest import download_block
from metabundle.search.services.idc.models import (
    IdcCohort,
    IdcLicenses,
    IdcLicenseUse,
    IdcValueSize,
)
from metabundle.search.services.idc.source import GROUP, Offset, require_idc

DEFAULT_PAGE = 10
MAX_PAGE = 100
TOP_COLLECTIONS = 10
NON_COMMERCIAL = re.compile(r"\bNC\b")


def _grouped(
    release: Release, selection: Selection, column: str, limit: int | None
) -> list[IdcValueSize]:
    rows = queries.grouped_sizes(release, selection, column, limit)
    return [IdcValueSize(value=v, series=n, size_bytes=b, size=human_size(b)) for v, n, b in rows]


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
    response=IdcCohort,
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
def build_cohort(release: Release, params: BuildCohortParams) -> IdcCohort:
    require_idc(release)
    selection = compile_filters(release, params.filters)
    require_filters(selection, "build_cohort", "call get_stats for the whole of IDC.")
    counts, size_bytes = queries.series_counts(release, selection.where, selection.params)
    rows = []
    if params.limit:
        rows = queries.cohort_series(release, selection, params.limit, params.offset)
    return IdcCohort.model_validate(
        {
            "counts": counts,
            "total_size": size_block(size_bytes),
            "by_modality": _grouped(release, selection, "Modality", None),
            "by_collection": _grouped(release, selection, "collection_id", TOP_COLLECTIONS),
            "page": page_block(counts["series"], params.limit, params.offset, len(rows)),
            "series": rows,
            "download": download_block(selection, ["aws"]),
            **selection.echo(),
        }
    )


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
    response=IdcLicenses,
    guide=(
        "Get the license breakdown (series, patients, size per license, with URL) of a "
        "selection or of all IDC. Call it before recommending data for reuse; flag "
        "non-commercial licenses."
    ),
)
def get_licenses(release: Release, params: LicensesParams) -> IdcLicenses:
    require_idc(release)
    selection = compile_filters(release, params.filters)
    details = license_details(release)
    licenses = []
    for name, series, patients, collections, size_bytes in queries.license_counts(
        release, selection
    ):
        known = details.get(name)
        licenses.append(
            IdcLicenseUse(
                license=name,
                long_name=known.long_name if known else None,
                url=known.url if known else None,
                non_commercial_only=bool(name and NON_COMMERCIAL.search(name)),
                series=series,
                patients=patients,
                collections=collections,
                size=size_block(size_bytes),
            )
        )
    return IdcLicenses(
        licenses=licenses,
        series=sum(item.series for item in licenses),
        **selection.echo(),
        note="Licenses attach to series; a selection can mix them. Read each license's "
        "terms (url) before reuse; non_commercial_only flags CC BY-NC licenses.",
    )
