"""The payload blocks several Imaging Data Commons tools share (a page, a size, a
license, a data source) and the text helpers that fill them."""

from __future__ import annotations

from typing import Any

from metabundle.search.release import Release
from metabundle.search.services.idc.models import IdcDataSource, IdcLicense, IdcPage, IdcSize
from metabundle.search.services.idc.queries import doi_sources

BYTES_PER_MB = 1_000_000  # idc-index-data's series_size_MB is bytes / 10**6


def page_block(total: int, limit: int, offset: int, returned: int) -> IdcPage:
    """The ``page`` of a listing: ``returned`` of ``total`` rows from ``offset``, and
    where the next page starts (None after the last)."""
    following = offset + returned
    return IdcPage(
        total=total,
        limit=limit,
        offset=offset,
        returned=returned,
        next_offset=following if returned and following < total else None,
    )


def size_block(size_bytes: int | None) -> IdcSize:
    """A size in one unit, bytes, and a short human string (decimal units)."""
    size_bytes = int(size_bytes or 0)
    return IdcSize(bytes=size_bytes, human=human_size(size_bytes))


def series_bytes(size_mb: float | None) -> int:
    """One series' size in bytes (see :data:`.queries.SIZE_BYTES_SQL`)."""
    return round((size_mb or 0.0) * BYTES_PER_MB)


def human_size(size_bytes: int) -> str:
    """``1234567`` → ``"1.23 MB"`` (decimal units, as IDC reports sizes)."""
    value = float(size_bytes)
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if value < 1000 or unit == "TB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.2f} {unit}"
        value /= 1000
    raise AssertionError("unreachable")


def split_list(text: str | None) -> list[str]:
    """``"Lung, Breast"`` → ``["Lung", "Breast"]`` (the collections' comma-separated lists)."""
    if not text:
        return []
    return [part.strip() for part in text.split(",") if part.strip()]


def source_entry(row: dict[str, Any]) -> IdcDataSource:
    """A data source (a :func:`.queries.doi_sources` row) as tools return it: DOI,
    title, type, license and citation."""
    return IdcDataSource(
        doi=row["doi"],
        doi_url=f"https://doi.org/{row['doi']}",
        title=row["title"],
        source_type=row["source_type"],
        modalities=split_list(row["modalities"]),
        license=license_entry(row),
        citation=row["citation_text"],
    )


def license_entry(row: dict[str, Any]) -> IdcLicense:
    """The license of a :func:`.queries.doi_sources` row."""
    return IdcLicense(
        short_name=row["license"], long_name=row["license_long_name"], url=row["license_url"]
    )


def license_details(release: Release) -> dict[str, IdcLicense]:
    """Long name and URL of every license short name the sources mention."""
    details: dict[str, IdcLicense] = {}
    for row in doi_sources(release).values():
        if row["license"] and row["license"] not in details:
            details[row["license"]] = license_entry(row)
    return details
