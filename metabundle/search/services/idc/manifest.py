"""Imaging Data Commons download manifests for a selection of any size.

The rows of a selection come from ``idc_series``, or, as of an earlier IDC data
version, from the series whose current content that version already served plus the
earlier contents ``prior_versions_index`` keeps. :func:`manifest_lines` streams the
s5cmd manifest of the whole selection in batches (constant memory), for
``metabundle idc-manifest``; tools return one page of rows and the command that writes
the manifest.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from metabundle.search.errors import invalid
from metabundle.search.release import Release
from metabundle.search.services.idc.blocks import size_block
from metabundle.search.services.idc.filters import Selection
from metabundle.search.services.idc.models import (
    IdcDownload,
    IdcManifestCommands,
    IdcScopeCounts,
    IdcSize,
)
from metabundle.search.services.idc.queries import SIZE_BYTES_SQL

BATCH_ROWS = 1_000
AWS_ENDPOINT = "https://s3.amazonaws.com"
GCS_ENDPOINT = "https://storage.googleapis.com"
# idc-index's fixed mapping of AWS buckets to their Google Cloud Storage twins
# (since IDC v20 idc-open-data has the same name on both).
GCS_BUCKETS = {
    "idc-open-data": "idc-open-data",
    "idc-open-data-two": "idc-open-idc1",
    "idc-open-data-cr": "idc-open-cr",
}
ENDPOINTS = {"aws": AWS_ENDPOINT, "gcs": GCS_ENDPOINT}
SCHEMES = {"aws": "s3", "gcs": "gs"}
DOWNLOAD_DIR = "./idc_data"
# build_cohort attributes that idc-index's download-from-selection accepts directly.
SELECTION_OPTIONS = {
    "collection_id": "--collection-id",
    "PatientID": "--patient-id",
    "StudyInstanceUID": "--study-instance-uid",
    "SeriesInstanceUID": "--series-instance-uid",
    "crdc_series_uuid": "--crdc-series-uuid",
}
ROW_COLUMNS = (
    "collection_id",
    "PatientID",
    "StudyInstanceUID",
    "SeriesInstanceUID",
    "aws_bucket",
    "crdc_series_uuid",
    "series_size_MB",
)
PRIOR_COLUMNS = frozenset({*ROW_COLUMNS, "Modality"})
"""The idc_series columns that prior_versions_index also has (filters as of a version)."""
ROW_ORDER = "SeriesInstanceUID, crdc_series_uuid"
"""A total order of a scope's rows (a series has one row per content version), and the
cheapest one to page by."""


def gcs_bucket(aws_bucket: str) -> str:
    return GCS_BUCKETS.get(aws_bucket, aws_bucket)


def series_prefix(provider: str, aws_bucket: str, uuid: str) -> str:
    """The s5cmd prefix of a series' files: ``s3://bucket/uuid/`` or ``gs://...``."""
    bucket = aws_bucket if provider == "aws" else gcs_bucket(aws_bucket)
    return f"{SCHEMES[provider]}://{bucket}/{uuid}/"


def file_url(provider: str, aws_bucket: str, series_uuid: str, instance_uuid: str) -> str:
    """The public https URL of one DICOM file (``<series uuid>/<instance uuid>.dcm``)."""
    if provider == "aws":
        return f"https://{aws_bucket}.s3.amazonaws.com/{series_uuid}/{instance_uuid}.dcm"
    return f"{GCS_ENDPOINT}/{gcs_bucket(aws_bucket)}/{series_uuid}/{instance_uuid}.dcm"


def manifest_line(provider: str, aws_bucket: str, uuid: str) -> str:
    """One s5cmd manifest line, as the IDC portal exports them (``cp s3://b/u/* .``)."""
    return f"cp {series_prefix(provider, aws_bucket, uuid)}* ."


def s5cmd_command(provider: str, file_name: str) -> str:
    return f"s5cmd --no-sign-request --endpoint-url {ENDPOINTS[provider]} run {file_name}"


def manifest_file(provider: str, idc_version: int | None = None) -> str:
    suffix = f"_v{idc_version}" if idc_version else ""
    return f"idc_manifest{suffix}_{provider}.s5cmd"


@dataclass(frozen=True)
class Scope:
    """The rows of a selection (as of ``idc_version`` when given) as one SQL source."""

    sql: str
    params: list[Any]
    idc_version: int | None = None


def scope(selection: Selection, idc_version: int | None = None) -> Scope:
    """The selection's series; as of an earlier version, the contents it served."""
    columns = ", ".join(ROW_COLUMNS)
    current = f"SELECT {columns} FROM idc_series WHERE {selection.where}"
    if idc_version is None:
        return Scope(current, list(selection.params))
    unsupported = [
        name for name in selection.applied if "." not in name and name not in PRIOR_COLUMNS
    ]
    if unsupported:
        raise invalid(
            f"filters: {unsupported[0]} is not recorded for earlier versions; as of an "
            f"idc_version, filter on {', '.join(sorted(PRIOR_COLUMNS - {'aws_bucket'}))} "
            "or on specialized-index attributes."
        )
    prior = (
        f"SELECT {columns} FROM idc_prior_version WHERE {selection.where} "
        "AND min_idc_version <= ? AND max_idc_version >= ?"
    )
    sql = f"{current} AND series_revised_idc_version <= ? UNION ALL {prior}"
    params = [*selection.params, idc_version, *selection.params, idc_version, idc_version]
    return Scope(sql, params, idc_version)


def scope_counts(release: Release, rows: Scope) -> tuple[IdcScopeCounts, IdcSize]:
    """Distinct collections, patients, studies and series of a scope, and its size
    (remembered per release and scope: every page of a selection repeats them)."""
    counts = dict(_counts(release, rows.sql, json.dumps(rows.params, default=str)))
    size = size_block(counts.pop("size_bytes"))
    return IdcScopeCounts(**counts), size


@lru_cache(maxsize=64)
def _counts(release: Release, sql: str, params: str) -> tuple[tuple[str, Any], ...]:
    counts = release.query_dicts(
        f"""
        SELECT count(DISTINCT collection_id) AS collections,
               count(DISTINCT (collection_id, PatientID)) AS patients,
               count(DISTINCT StudyInstanceUID) AS studies,
               count(*) AS series, {SIZE_BYTES_SQL} AS size_bytes
        FROM ({sql})
        """,
        json.loads(params),
    )[0]
    return tuple(counts.items())


def page_rows(release: Release, rows: Scope, limit: int, offset: int) -> list[tuple]:
    return release.query(
        f"SELECT SeriesInstanceUID, aws_bucket, crdc_series_uuid, series_size_MB "
        f"FROM ({rows.sql}) ORDER BY {ROW_ORDER} LIMIT ? OFFSET ?",
        [*rows.params, limit, offset],
    )


def manifest_lines(release: Release, rows: Scope, provider: str) -> Iterator[str]:
    """The s5cmd manifest of the whole scope, header first, one line per series,
    fetched in batches of :data:`BATCH_ROWS` (memory does not grow with the cohort)."""
    yield "# To download the files in this manifest, install s5cmd, then run:"
    yield f"# {s5cmd_command(provider, manifest_file(provider, rows.idc_version))}"
    with release.cursor() as cur:
        cur.execute(
            f"SELECT aws_bucket, crdc_series_uuid FROM ({rows.sql}) ORDER BY {ROW_ORDER}",
            rows.params,
        )
        while batch := cur.fetchmany(BATCH_ROWS):
            for bucket, uuid in batch:
                yield manifest_line(provider, bucket, uuid)


def manifest_command(filters: dict[str, Any], provider: str, idc_version: int | None = None) -> str:
    """The ``metabundle idc-manifest`` command that writes the whole manifest
    (``filters`` as a selection echoes them)."""
    text = json.dumps(filters, separators=(",", ":"), ensure_ascii=False)
    version = f" --idc-version {idc_version}" if idc_version else ""
    return (
        f"metabundle idc-manifest --provider {provider}{version} --filters {shlex.quote(text)}"
        f" > {manifest_file(provider, idc_version)}"
    )


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


def manifest_commands(
    selection: Selection, provider: str, idc_version: int | None = None
) -> IdcManifestCommands:
    """The commands that write the selection's manifest for ``provider`` and download it."""
    file_name = manifest_file(provider, idc_version)
    return IdcManifestCommands(
        write_manifest=manifest_command(selection.applied, provider, idc_version),
        s5cmd_command=s5cmd_command(provider, file_name),
        idc_download_command=f"idc download {file_name} --download-dir {DOWNLOAD_DIR}",
    )


def download_block(
    selection: Selection, providers: list[str], idc_version: int | None = None
) -> IdcDownload:
    """How to download the whole selection: write its s5cmd manifest with metabundle,
    then run s5cmd or idc-index's ``idc download`` on it."""
    return IdcDownload(
        how="Run write_manifest (it streams one line per series of the whole "
        "selection), then s5cmd_command, or idc_download_command after pip install "
        "idc-index (it lays files out as collection/patient/study/series).",
        selection_command=None if idc_version else selection_command(selection),
        **{p: manifest_commands(selection, p, idc_version) for p in providers},
    )
