"""Imaging Data Commons links: download manifests and URLs for a cohort, and viewer
links for a study or series.

The forms follow idc-index and the IDC portal: s5cmd manifest lines
``cp s3://<bucket>/<crdc_series_uuid>/* .`` run against the AWS or Google Cloud
endpoint (both buckets are public, no sign-in), the ``idc`` command of idc-index, and
the viewer URLs ``IDCClient.get_viewer_URL`` builds (OHIF v3 for radiology, SLIM for
slide microscopy). Nothing is fetched: the links are built from the release.
"""

from __future__ import annotations

import shlex
from typing import Annotated, Any, Literal
from urllib.parse import quote

from pydantic import Field, StringConstraints

from metabundle.search.errors import RESULT_TOO_LARGE, ToolError, invalid, not_found
from metabundle.search.jsonsafe import check_size
from metabundle.search.params import Params
from metabundle.search.release import Release
from metabundle.search.services.idc_cohort import cohort_counts
from metabundle.search.services.idc_common import GROUP, human_size, require_idc, series_bytes
from metabundle.search.services.idc_filters import (
    Filters,
    Selection,
    compile_filters,
    require_filters,
)
from metabundle.search.tools import tool

URL_CAP = 500
LARGE_BYTES = 10 * 10**9
AWS_ENDPOINT = "https://s3.amazonaws.com"
GCS_ENDPOINT = "https://storage.googleapis.com"
# idc-index's fixed mapping of AWS buckets to their Google Cloud Storage twins
# (since IDC v20 idc-open-data has the same name on both).
GCS_BUCKETS = {
    "idc-open-data": "idc-open-data",
    "idc-open-data-two": "idc-open-idc1",
    "idc-open-data-cr": "idc-open-cr",
}
MANIFEST_FILES = {"aws": "idc_manifest_aws.s5cmd", "gcs": "idc_manifest_gcs.s5cmd"}
ENDPOINTS = {"aws": AWS_ENDPOINT, "gcs": GCS_ENDPOINT}
DOWNLOAD_DIR = "./idc_data"
# build_cohort attributes that idc-index's download-from-selection accepts directly.
SELECTION_OPTIONS = {
    "collection_id": "--collection-id",
    "PatientID": "--patient-id",
    "StudyInstanceUID": "--study-instance-uid",
    "SeriesInstanceUID": "--series-instance-uid",
    "crdc_series_uuid": "--crdc-series-uuid",
}
VIEWER_BASE = "https://viewer.imaging.datacommons.cancer.gov"
FOLDER_NOTE = (
    "Each URL is a series folder (a prefix): its files are the series' DICOM instances, "
    "which this release does not list; s5cmd or idc-index expand it."
)


def gcs_bucket(aws_bucket: str) -> str:
    return GCS_BUCKETS.get(aws_bucket, aws_bucket)


def manifest_line(bucket: str, uuid: str) -> str:
    """One s5cmd manifest line, as the IDC portal exports them."""
    return f"cp s3://{bucket}/{uuid}/* ."


def _manifest(provider: str, lines: list[str]) -> dict[str, Any]:
    file_name = MANIFEST_FILES[provider]
    command = f"s5cmd --no-sign-request --endpoint-url {ENDPOINTS[provider]} run {file_name}"
    return {
        "endpoint_url": ENDPOINTS[provider],
        "file_name": file_name,
        "s5cmd_command": command,
        "header": [
            "# To download the files in this manifest, first install s5cmd "
            "(https://github.com/peak/s5cmd),",
            "# then run the following command:",
            f"# {command}",
        ],
        "lines": lines,
    }


def selection_command(selection: Selection) -> str | None:
    """An ``idc download-from-selection`` command equivalent to the filters, when one
    attribute idc-index selects by is the only filter (idc-index applies just the most
    specific of several)."""
    if len(selection.applied) != 1:
        return None
    ((attribute, values),) = selection.applied.items()
    option = SELECTION_OPTIONS.get(attribute)
    if option is None or not isinstance(values, list) or None in values:
        return None
    joined = ",".join(str(v) for v in values)
    return (
        f"idc download-from-selection --download-dir {DOWNLOAD_DIR} {option} {shlex.quote(joined)}"
    )


class CohortUrlsParams(Params):
    filters: Filters
    provider: Annotated[
        Literal["aws", "gcs", "both"],
        Field(description="Which cloud's manifest and URLs to return (both are free)."),
    ] = "both"


def _too_large(summary: dict[str, Any], selection: Selection) -> ToolError:
    series = summary["counts"]["series"]
    details: dict[str, Any] = {
        "series": series,
        "cap": URL_CAP,
        "total_size": summary["total_size"],
    }
    command = selection_command(selection)
    if command:
        details["download_command"] = command
    return ToolError(
        RESULT_TOO_LARGE,
        f"get_cohort_urls lists at most {URL_CAP:,} series and these filters select "
        f"{series:,} ({summary['total_size']['human']}); narrow the filters (build_cohort "
        "shows counts) or download the selection with idc-index"
        + (" (details.download_command)." if command else "."),
        **details,
    )


@tool(
    "get_cohort_urls",
    "Get download links (s5cmd manifests for AWS and Google Cloud, per-series URLs, the idc "
    "download command) for a small filtered selection. Call build_cohort first to check its size.",
    CohortUrlsParams,
    GROUP,
    guide=(
        f"Selections of more than {URL_CAP:,} series are refused with their size; a warning "
        "flags downloads over 10 GB. The buckets are public: no account is needed."
    ),
)
def get_cohort_urls(release: Release, params: CohortUrlsParams) -> dict[str, Any]:
    require_idc(release)
    selection = compile_filters(release, params.filters)
    require_filters(
        selection,
        "get_cohort_urls",
        "a manifest of all of IDC is refused; narrow with build_cohort first.",
    )
    summary = cohort_counts(release, selection)
    if summary["counts"]["series"] > URL_CAP:
        raise _too_large(summary, selection)
    rows = release.query(
        f"""
        SELECT SeriesInstanceUID, aws_bucket, crdc_series_uuid, series_size_MB
        FROM idc_series WHERE {selection.where}
        ORDER BY collection_id, PatientID, StudyInstanceUID, SeriesInstanceUID
        """,
        selection.params,
    )
    providers = ["aws", "gcs"] if params.provider == "both" else [params.provider]
    series = []
    lines: dict[str, list[str]] = {p: [] for p in providers}
    for uid, bucket, uuid, size_mb in rows:
        buckets = {"aws": bucket, "gcs": gcs_bucket(bucket)}
        entry: dict[str, Any] = {
            "SeriesInstanceUID": uid,
            "crdc_series_uuid": uuid,
            "size_bytes": series_bytes(size_mb),
        }
        if "aws" in providers:
            entry["aws_url"] = f"https://{bucket}.s3.amazonaws.com/{uuid}/"
        if "gcs" in providers:
            entry["gcs_url"] = f"{GCS_ENDPOINT}/{buckets['gcs']}/{uuid}/"
        for provider in providers:
            lines[provider].append(manifest_line(buckets[provider], uuid))
        series.append(entry)
    warnings = list(selection.warnings)
    total_bytes = summary["total_size"]["bytes"]
    if total_bytes > LARGE_BYTES:
        warnings.append(
            f"This selection is {human_size(total_bytes)}: check disk space and confirm "
            "with the user before downloading."
        )
    manifest_for_idc = MANIFEST_FILES["aws" if "aws" in providers else "gcs"]
    payload = {
        **summary,
        "series": series,
        "manifests": {p: _manifest(p, lines[p]) for p in providers},
        "idc_download": {
            "command": f"idc download {manifest_for_idc} --download-dir {DOWNLOAD_DIR}",
            "selection_command": selection_command(selection),
            "how": f"pip install idc-index; save the manifest lines to {manifest_for_idc}; "
            "run the command (it lays files out as collection/patient/study/series).",
        },
        "filters_applied": selection.applied,
        "warnings": warnings,
        "notes": [*selection.notes, FOLDER_NOTE],
    }
    return check_size(payload, "narrow the filters or pick one provider")


# -- viewer -----------------------------------------------------------------------------

Uid = Annotated[str, StringConstraints(min_length=1, max_length=200, strip_whitespace=True)]


class ViewerParams(Params):
    study_instance_uid: Annotated[Uid, Field(description="The DICOM StudyInstanceUID.")]
    series_instance_uid: Annotated[
        Uid | None, Field(description="A SeriesInstanceUID of that study, to open it.")
    ] = None
    viewer: Annotated[
        Literal["auto", "ohif_v3", "slim"],
        Field(description="auto: SLIM for slide microscopy (SM), OHIF v3 otherwise."),
    ] = "auto"


def _study_series(release: Release, study: str) -> list[dict[str, Any]]:
    return release.query_dicts(
        "SELECT SeriesInstanceUID, Modality, collection_id FROM idc_series "
        "WHERE StudyInstanceUID = ? ORDER BY SeriesInstanceUID",
        [study],
    )


def _unknown_study(release: Release, study: str) -> ToolError:
    as_series = release.query(
        "SELECT StudyInstanceUID FROM idc_series WHERE SeriesInstanceUID = ?", [study]
    )
    if as_series:
        return not_found(
            f"{study!r} is a SeriesInstanceUID, not a StudyInstanceUID; its study is "
            f"{as_series[0][0]!r}.",
            suggestions=[as_series[0][0]],
        )
    return not_found(
        f"There is no study {study!r} in this IDC release; find studies with build_cohort."
    )


def _series_of(release: Release, rows: list[dict[str, Any]], study: str, uid: str) -> dict:
    for row in rows:
        if row["SeriesInstanceUID"] == uid:
            return row
    elsewhere = release.query(
        "SELECT StudyInstanceUID FROM idc_series WHERE SeriesInstanceUID = ?", [uid]
    )
    if elsewhere:
        raise invalid(
            f"series_instance_uid {uid!r} belongs to study {elsewhere[0][0]!r}, not to {study!r}."
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
    "Get a link opening a study or series in the IDC web viewer (SLIM for slides, OHIF for "
    "radiology). Call it to let a user look at images found with build_cohort.",
    ViewerParams,
    GROUP,
    guide=("No download or account is needed."),
)
def get_viewer_url(release: Release, params: ViewerParams) -> dict[str, Any]:
    require_idc(release)
    study = params.study_instance_uid
    rows = _study_series(release, study)
    if not rows:
        raise _unknown_study(release, study)
    series_uid = params.series_instance_uid
    chosen = [_series_of(release, rows, study, series_uid)] if series_uid else rows
    modalities = sorted({r["Modality"] for r in chosen if r["Modality"]})
    viewer = params.viewer
    if viewer == "auto":
        viewer = "slim" if "SM" in modalities else "ohif_v3"
    return {
        "viewer": viewer,
        "url": viewer_url(viewer, study, series_uid),
        "study_instance_uid": study,
        "series_instance_uid": series_uid,
        "modalities": modalities,
        "collection_id": rows[0]["collection_id"],
        "note": "The IDC viewer streams images through a quota-limited proxy; for "
        "analysis, download with get_cohort_urls.",
    }
