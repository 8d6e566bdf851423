"""Imaging Data Commons links: paged download prefixes and manifest commands for a
cohort of any size, and viewer links for a study or series.

The forms follow idc-index and the IDC portal: s5cmd series prefixes and manifest
lines ``cp s3://<bucket>/<crdc_series_uuid>/* .`` run against the AWS or Google Cloud
endpoint (both buckets are public, no sign-in), the ``idc`` command of idc-index, and
the viewer URLs ``IDCClient.get_viewer_URL`` builds (OHIF v3 for radiology, SLIM for
slide microscopy). Nothing is fetched: the links are built from the release.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache
from typing import Annotated, Any, Literal
from urllib.parse import quote

from pydantic import Field, StringConstraints

from metabundle.search.errors import RESULT_TOO_LARGE, ToolError, invalid, not_found
from metabundle.search.jsonsafe import check_size
from metabundle.search.params import Params, clamp
from metabundle.search.payload import to_payload
from metabundle.search.registry import call_tool, tool
from metabundle.search.release import Release
from metabundle.search.services.idc import queries
from metabundle.search.services.idc.blocks import human_size, page_block, series_bytes
from metabundle.search.services.idc.filters import (
    Filters,
    Selection,
    compile_filters,
    require_filters,
)
from metabundle.search.services.idc.manifest import (
    ENDPOINTS,
    download_block,
    file_url,
    manifest_lines,
    page_rows,
    scope,
    scope_counts,
    series_prefix,
)
from metabundle.search.services.idc.models import (
    IdcCohortUrls,
    IdcEndpoints,
    IdcProviderFiles,
    IdcScopeCounts,
    IdcSeriesUrls,
    IdcSize,
    IdcViewerLink,
)
from metabundle.search.services.idc.source import GROUP, Offset, require_idc

MAX_SERIES = 500_000
"""The largest selection get_cohort_urls pages through (its manifest is streamed)."""
DEFAULT_PAGE = 20
MAX_PAGE = 200
LARGE_BYTES = 10 * 10**9
VIEWER_BASE = "https://viewer.imaging.datacommons.cancer.gov"
URL_NOTE = (
    "aws and gcs are s5cmd series prefixes (s3://, gs://; public buckets, no account): "
    "`s5cmd --no-sign-request --endpoint-url <endpoint_url> cp '<prefix>*' DIR` fetches "
    "a series' DICOM files; they are not https links. files=true adds https_files, "
    "per-file https URLs, to series with instance-level data (slide microscopy)."
)


class CohortUrlsParams(Params):
    filters: Filters
    provider: Literal["aws", "gcs", "both"] = "both"
    limit: Annotated[int, clamp(0, MAX_PAGE), Field(description=f"0..{MAX_PAGE}.")] = DEFAULT_PAGE
    offset: Offset = 0
    files: Annotated[
        bool,
        Field(description="Per-file URLs (SM)."),
    ] = False
    idc_version: Annotated[
        int | None,
        Field(
            ge=1,
            le=1000,
            description="An earlier IDC version, e.g. 20.",
        ),
    ] = None


def _too_large(counts: IdcScopeCounts, size: IdcSize, selection: Selection) -> ToolError:
    return ToolError(
        RESULT_TOO_LARGE,
        f"get_cohort_urls pages through at most {MAX_SERIES:,} series and these filters "
        f"select {counts.series:,} ({size.human}); narrow the filters, or "
        "write the whole manifest with details.download.",
        cap=MAX_SERIES,
        counts=to_payload(counts),
        total_size=to_payload(size),
        download=to_payload(download_block(selection, ["aws"])),
    )


@lru_cache(maxsize=8)
def _current_version(release: Release) -> int:
    return queries.latest_version(release)["idc_version"]


@tool(
    "get_cohort_urls",
    "Call after build_cohort for download links of a selection, a page at a time.",
    CohortUrlsParams,
    GROUP,
    response=IdcCohortUrls,
    guide=(
        "Get download links for a filtered selection of series a page at a time (s5cmd "
        "s3:// and gs:// series prefixes, sizes, totals) with the commands for the whole "
        "selection. Call build_cohort first. "
        f"Pages through up to {MAX_SERIES:,} series (limit/offset); every page carries the "
        "commands that write and download the s5cmd manifest of the whole selection (s5cmd "
        "or idc-index's `idc download`); idc_version gives the manifest as of an earlier IDC "
        "release. The buckets are public: no account is needed."
        " provider picks which cloud's prefixes and manifest to return (both are free); "
        "files adds per-file https URLs where the release lists the files (SM); "
        "idc_version gives the series contents an earlier IDC data version served, from "
        "prior_versions_index."
    ),
)
def get_cohort_urls(release: Release, params: CohortUrlsParams) -> IdcCohortUrls:
    require_idc(release)
    selection = compile_filters(release, params.filters)
    require_filters(
        selection,
        "get_cohort_urls",
        "a manifest of all of IDC is refused; narrow with build_cohort first.",
    )
    version = params.idc_version
    if version is not None and version >= _current_version(release):
        version = None  # the current release: idc_series as it is
    rows = scope(selection, version)
    counts, size = scope_counts(release, rows)
    if counts.series > MAX_SERIES:
        raise _too_large(counts, size, selection)
    providers = ["aws", "gcs"] if params.provider == "both" else [params.provider]
    page = page_rows(release, rows, params.limit, params.offset)
    files = queries.instance_files(release, [row[0] for row in page]) if params.files else {}
    series = []
    for uid, bucket, uuid, size_mb in page:
        entry = IdcSeriesUrls(
            SeriesInstanceUID=uid,
            size_bytes=series_bytes(size_mb),
            **{p: series_prefix(p, bucket, uuid) for p in providers},
        )
        if uid in files:
            entry.https_files = IdcProviderFiles(
                **{
                    p: [file_url(p, bucket, uuid, instance) for instance in files[uid]]
                    for p in providers
                }
            )
        series.append(entry)
    warnings = list(selection.warnings)
    if size.bytes > LARGE_BYTES:
        warnings.append(
            f"This selection is {human_size(size.bytes)}: check disk space and confirm "
            "with the user before downloading."
        )
    answer = IdcCohortUrls(
        counts=counts,
        total_size=size,
        idc_version=f"v{version or _current_version(release)}",
        page=page_block(counts.series, params.limit, params.offset, len(series)),
        series=series,
        endpoint_urls=IdcEndpoints(**{p: ENDPOINTS[p] for p in providers}),
        download=download_block(selection, providers, version),
        filters_applied=selection.applied,
        warnings=warnings,
        notes=[*selection.notes, URL_NOTE],
    )
    check_size(to_payload(answer), "lower limit, pick one provider or drop files")
    return answer


def cohort_manifest(
    release: Release, filters: dict[str, Any], provider: str, idc_version: int | None = None
) -> Iterator[str]:
    """The s5cmd manifest lines of a whole selection, streamed; the arguments are
    checked by get_cohort_urls first, whose refusal is raised as a ToolError."""
    arguments = {"filters": filters, "provider": provider, "limit": 0}
    if idc_version is not None:
        arguments["idc_version"] = idc_version
    checked = call_tool(release, "get_cohort_urls", arguments)
    if "error" in checked:
        raise ToolError(checked["error"]["code"], checked["error"]["message"])
    selection = compile_filters(release, filters)
    version = int(checked["idc_version"].removeprefix("v"))
    current = version == _current_version(release)
    return manifest_lines(release, scope(selection, None if current else version), provider)


# -- viewer -----------------------------------------------------------------------------

Uid = Annotated[str, StringConstraints(min_length=1, max_length=200, strip_whitespace=True)]


class ViewerParams(Params):
    study_instance_uid: Annotated[Uid | None, Field(description="Optional with a series.")] = None
    series_instance_uid: Uid | None = None
    viewer: Literal["auto", "ohif_v3", "slim"] = "auto"


def _study_of(release: Release, series: str | None) -> str:
    """The study of a series given alone."""
    if series is None:
        raise invalid("get_viewer_url: pass series_instance_uid, study_instance_uid or both.")
    study = queries.study_of(release, series)
    if study is None:
        raise not_found(
            f"There is no series {series!r} in this IDC release; find series with build_cohort."
        )
    return study


def _unknown_study(release: Release, study: str) -> ToolError:
    its_study = queries.study_of(release, study)
    if its_study is not None:
        return not_found(
            f"{study!r} is a SeriesInstanceUID, not a StudyInstanceUID; its study is "
            f"{its_study!r}.",
            suggestions=[its_study],
        )
    return not_found(
        f"There is no study {study!r} in this IDC release; find studies with build_cohort."
    )


def _series_of(release: Release, rows: list[dict[str, Any]], study: str, uid: str) -> dict:
    for row in rows:
        if row["SeriesInstanceUID"] == uid:
            return row
    elsewhere = queries.study_of(release, uid)
    if elsewhere is not None:
        raise invalid(
            f"series_instance_uid {uid!r} belongs to study {elsewhere!r}, not to {study!r}."
        )
    raise not_found(f"There is no series {uid!r} in this IDC release.")


def viewer_url(viewer: str, study: str, series: str | None) -> str:
    """The URL idc-index's ``get_viewer_URL`` builds for ``viewer``."""
    study_q = quote(study, safe=".")
    series_q = quote(series, safe=".") if series else None
    if viewer == "slim":
        url = f"{VIEWER_BASE}/slim/studies/{study_q}"
        return f"{url}/series/{series_q}" if series_q else url
    url = f"{VIEWER_BASE}/v3/viewer/?StudyInstanceUIDs={study_q}"
    return f"{url}&SeriesInstanceUIDs={series_q}" if series_q else url


@tool(
    "get_viewer_url",
    "Call to let a user look at an IDC series or study in the web viewer.",
    ViewerParams,
    GROUP,
    response=IdcViewerLink,
    guide=(
        "Get a link opening a series or study in the IDC web viewer (SLIM for slides, "
        "OHIF for radiology). Call it to let a user look at images found with "
        "build_cohort. "
        "No download or account is needed."
        " A series' study is looked up; viewer auto opens SLIM for slide microscopy (SM),"
        " OHIF v3 otherwise."
    ),
)
def get_viewer_url(release: Release, params: ViewerParams) -> IdcViewerLink:
    require_idc(release)
    study = params.study_instance_uid or _study_of(release, params.series_instance_uid)
    rows = queries.study_series(release, study)
    if not rows:
        raise _unknown_study(release, study)
    series_uid = params.series_instance_uid
    chosen = [_series_of(release, rows, study, series_uid)] if series_uid else rows
    modalities = sorted({r["Modality"] for r in chosen if r["Modality"]})
    viewer = params.viewer
    if viewer == "auto":
        viewer = "slim" if "SM" in modalities else "ohif_v3"
    return IdcViewerLink(
        viewer=viewer,
        url=viewer_url(viewer, study, series_uid),
        study_instance_uid=study,
        series_instance_uid=series_uid,
        modalities=modalities,
        collection_id=rows[0]["collection_id"],
        note="The IDC viewer streams images through a quota-limited proxy; for "
        "analysis, download with get_cohort_urls.",
    )
