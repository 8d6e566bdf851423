"""Shared pieces of the Imaging Data Commons tools: the source guard, series counts,
page blocks, sizes, citation text cleaning and the per-DOI view of the collections'
``sources``.

Everything answers from the release's ``idc_*`` tables (copied from the installed
``idc-index-data`` Parquet at build time); nothing here reaches the network.
"""

from __future__ import annotations

import html
import re
from typing import Any

from metabundle.search.errors import not_found
from metabundle.search.release import Release

SOURCE = "idc"
GROUP = "idc"
BYTES_PER_MB = 1_000_000  # idc-index-data's series_size_MB is bytes / 10**6
# Total bytes of the series in scope: each series' size back in whole bytes, then an
# integer sum, so totals are exact and do not depend on summation order.
SIZE_BYTES_SQL = "coalesce(sum(CAST(round(series_size_MB * 1000000) AS BIGINT)), 0)"
PORTAL_URL = "https://portal.imaging.datacommons.cancer.gov/"

_TAG = re.compile(r"<[^>]+>")

# The fields of one element of idc_collection.sources (a JSON list) that tools read.
_SOURCES_SPEC = (
    '[{"source_doi":"VARCHAR","source_title":"VARCHAR","source_type":"VARCHAR",'
    '"source_url":"VARCHAR","modalities":"VARCHAR","citation":"VARCHAR",'
    '"license":{"license_short_name":"VARCHAR","license_long_name":"VARCHAR",'
    '"license_url":"VARCHAR"}}]'
)

# One row per data source (a DOI): collection sources first, analysis results as a
# fallback for any DOI no collection lists. ``min`` picks one value deterministically
# where several collections repeat the same source.
DOI_SOURCES_SQL = """
WITH listed AS (
    SELECT lower(s.source_doi) AS doi,
           min(s.source_title) AS title,
           min(s.source_type) AS source_type,
           min(s.source_url) AS url,
           min(s.modalities) AS modalities,
           min(s.citation) AS citation,
           min(s.license.license_short_name) AS license,
           min(s.license.license_long_name) AS license_long_name,
           min(s.license.license_url) AS license_url,
           list(DISTINCT c.collection_id ORDER BY c.collection_id) AS collections
    FROM idc_collection AS c, unnest(from_json(c.sources, ?)) AS u(s)
    WHERE s.source_doi IS NOT NULL
    GROUP BY 1
)
SELECT * FROM listed
UNION ALL
SELECT lower(source_DOI), analysis_result_title, 'analysis_result', canonical_url,
       modalities, citation, license_short_name, license_long_name, license_url,
       list_transform(string_split(collections, ','), lambda x: trim(x))
FROM idc_analysis_result
WHERE source_DOI IS NOT NULL AND lower(source_DOI) NOT IN (SELECT doi FROM listed)
"""


def require_idc(release: Release) -> None:
    """Refuse with ``not_found`` when the release was built without the IDC source."""
    if SOURCE not in release.manifest["sources"]:
        raise not_found(
            "This release has no Imaging Data Commons source; call get_release_info to "
            "see which sources it holds."
        )


def series_counts(
    release: Release, where: str = "TRUE", params: list[Any] | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The counts of the series ``where`` selects (distinct collections, analysis
    results, patients, studies; series and instances) and their total size block.
    Patients are distinct (collection_id, PatientID) pairs: PatientID is unique only
    within a collection."""
    counts = release.query_dicts(
        f"""
        SELECT count(DISTINCT collection_id) AS collections,
               count(DISTINCT analysis_result_id) AS analysis_results,
               count(DISTINCT (collection_id, PatientID)) AS patients,
               count(DISTINCT StudyInstanceUID) AS studies,
               count(*) AS series,
               coalesce(sum(instanceCount), 0) AS instances,
               {SIZE_BYTES_SQL} AS size_bytes
        FROM idc_series WHERE {where}
        """,
        params,
    )[0]
    return counts, size_block(counts.pop("size_bytes"))


def page_block(total: int, limit: int, offset: int, returned: int) -> dict[str, Any]:
    """The ``page`` of a listing: ``returned`` of ``total`` rows from ``offset``, and
    where the next page starts (None after the last)."""
    following = offset + returned
    return {
        "total": total,
        "limit": limit,
        "offset": offset,
        "returned": returned,
        "next_offset": following if returned and following < total else None,
    }


def size_block(size_bytes: int | None) -> dict[str, Any]:
    """A size in one unit, bytes, and a short human string (decimal units)."""
    size_bytes = int(size_bytes or 0)
    return {
        "bytes": size_bytes,
        "human": human_size(size_bytes),
    }


def series_bytes(size_mb: float | None) -> int:
    """One series' size in bytes (see :data:`SIZE_BYTES_SQL`)."""
    return round((size_mb or 0.0) * BYTES_PER_MB)


def human_size(size_bytes: int) -> str:
    """``1234567`` → ``"1.23 MB"`` (decimal units, as IDC reports sizes)."""
    value = float(size_bytes)
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if value < 1000 or unit == "TB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.2f} {unit}"
        value /= 1000
    raise AssertionError("unreachable")


def clean_citation(text: str | None) -> str | None:
    """The package's citation text as plain text: markup such as ``<i>`` removed, HTML
    entities (``&amp;``) decoded and the hard line wraps joined."""
    if text is None:
        return None
    return " ".join(html.unescape(_TAG.sub("", text)).split())


def split_list(text: str | None) -> list[str]:
    """``"Lung, Breast"`` → ``["Lung", "Breast"]`` (the collections' comma-separated lists)."""
    if not text:
        return []
    return [part.strip() for part in text.split(",") if part.strip()]


def doi_sources(release: Release, dois: list[str] | None = None) -> dict[str, dict[str, Any]]:
    """Every data source keyed by lower-cased DOI (only ``dois`` when given)."""
    rows = release.query_dicts(f"SELECT * FROM ({DOI_SOURCES_SQL}) ORDER BY doi", [_SOURCES_SPEC])
    wanted = None if dois is None else set(dois)
    return {row["doi"]: row for row in rows if wanted is None or row["doi"] in wanted}


def source_entry(row: dict[str, Any]) -> dict[str, Any]:
    """A data source as tools return it: DOI, title, type, license and citation."""
    return {
        "doi": row["doi"],
        "doi_url": f"https://doi.org/{row['doi']}",
        "title": row["title"],
        "source_type": row["source_type"],
        "modalities": split_list(row["modalities"]),
        "license": license_entry(row),
        "citation": clean_citation(row["citation"]),
    }


def license_entry(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "short_name": row["license"],
        "long_name": row["license_long_name"],
        "url": row["license_url"],
    }


def license_details(release: Release) -> dict[str, dict[str, Any]]:
    """Long name and URL of every license short name the sources mention."""
    details: dict[str, dict[str, Any]] = {}
    for row in doi_sources(release).values():
        if row["license"] and row["license"] not in details:
            details[row["license"]] = license_entry(row)
    return details
