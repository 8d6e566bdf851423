"""NCI Imaging Data Commons, read from the Parquet indices of ``idc-index-data``.

No network and no idc-index client: the installed package *is* the upstream
snapshot. Its data version (v25 for idc-index-data 25.x) is recorded as the source's
upstream version.
"""

from __future__ import annotations

from datetime import UTC, datetime
from importlib.metadata import version as package_version
from pathlib import Path
from typing import Any

import duckdb
import idc_index_data

from metabundle.db import connect
from metabundle.digest import sha256_file
from metabundle.sources.base import (
    CoverageContext,
    FetchContext,
    ParseContext,
    RawSnapshot,
    SearchDocContext,
    SourceSpec,
    coverage_block,
    left_out,
)

NAME = "idc"
INDICES = (
    "collections_index",
    "analysis_results_index",
    "idc_index",
    "version_metadata_index",
    "prior_versions_index",
)
"""The indices the package ships with their Parquet; every one is loaded."""
PORTAL_COLLECTION_URL = (
    "https://portal.imaging.datacommons.cancer.gov/explore/filters/?collection_id="
)


def index_parquet(name: str) -> Path:
    path = idc_index_data.INDEX_METADATA[name]["parquet_filepath"]
    if not isinstance(path, Path):
        raise FileNotFoundError(f"idc-index-data ships no {name}.parquet")
    return path


def fetch(ctx: FetchContext) -> RawSnapshot:
    """Record the package's Parquet files (hashes, package version, IDC data version)."""
    for name in INDICES:
        path = index_parquet(name)
        mtime = datetime.fromtimestamp(path.stat().st_mtime, UTC).isoformat(timespec="seconds")
        ctx.add_local(f"idc_index_data/{name}.parquet", path, sha256_file(path), mtime)
    with connect() as con:
        versions = con.sql(
            "SELECT max(idc_version) FROM read_parquet("
            f"'{index_parquet('version_metadata_index')}')"
        ).fetchall()
    data_version = f"v{versions[0][0]}" if versions[0][0] is not None else None
    installed = package_version("idc-index-data")
    return ctx.snapshot(
        upstream_version=data_version,
        details={"package": "idc-index-data", "package_version": installed},
        upstream=f"idc-index-data {installed} (installed Python package)",
    )


def parse(ctx: ParseContext) -> None:
    """Copy the indices into the registry's tables, adding URLs, DOIs and licenses."""
    con = ctx.con
    files = {name: ctx.snapshot.file(f"idc_index_data/{name}.parquet").path for name in INDICES}
    collections = con.sql(
        f"""
        SELECT * EXCLUDE (sources),
               CAST(to_json(sources) AS VARCHAR) AS sources,
               '{PORTAL_COLLECTION_URL}' || collection_id AS canonical_url,
               list_sort(list_distinct(list_transform(sources, lambda s: lower(s.source_doi))))
                   AS source_dois,
               list_sort(list_distinct(list_transform(sources,
                   lambda s: s.license.license_short_name))) AS licenses,
               list_sort(list_distinct(flatten(list_transform(sources,
                   lambda s: list_transform(string_split(s.modalities, ','), lambda m: trim(m))))))
                   AS modalities
        FROM read_parquet('{files["collections_index"]}')
        """
    )
    ctx.write("idc_collection", collections)
    analysis = con.sql(
        f"""
        SELECT * EXCLUDE (provenance),
               CAST(to_json(provenance) AS VARCHAR) AS provenance,
               coalesce(source_url, 'https://doi.org/' || source_DOI) AS canonical_url
        FROM read_parquet('{files["analysis_results_index"]}')
        """
    )
    ctx.write("idc_analysis_result", analysis)
    ctx.write("idc_series", con.read_parquet(str(files["idc_index"])))
    ctx.write("idc_version", con.read_parquet(str(files["version_metadata_index"])))
    ctx.write("idc_prior_version", con.read_parquet(str(files["prior_versions_index"])))


def search_docs(ctx: SearchDocContext) -> duckdb.DuckDBPyRelation:
    """Collections and analysis results, described by their text and cancer types."""
    return ctx.sql(
        """
        SELECT 'idc:collection:' || collection_id AS doc_id,
               'collection' AS kind,
               collection_id AS entity_id,
               collection_name AS title,
               concat_ws(' | ', cancer_types, tumor_locations, species, supporting_data,
                         array_to_string(modalities, ', '), description) AS body,
               concat_ws('. ', collection_name, cancer_types, tumor_locations, description)
                   AS embed_text,
               canonical_url,
               NULL AS parent_id,
               [lower(collection_id)] || source_dois AS identifiers
        FROM idc_collection
        UNION ALL
        SELECT 'idc:analysis_result:' || analysis_result_id,
               'analysis_result',
               analysis_result_id,
               analysis_result_title,
               concat_ws(' | ', modalities, collections, description),
               concat_ws('. ', analysis_result_title, description),
               canonical_url,
               NULL,
               [lower(analysis_result_id), lower(source_DOI)]
        FROM idc_analysis_result
        """
    )


UNSHIPPED_REMEDY = (
    "not loaded by this metabundle version: idc-index-data describes these indices but "
    "ships no Parquet for them (idc-index fetches them on demand)"
)


def unshipped_indices() -> list[str]:
    """Indices the installed package describes but ships without their Parquet."""
    return sorted(
        name
        for name, meta in idc_index_data.INDEX_METADATA.items()
        if not isinstance(meta.get("parquet_filepath"), Path)
    )


def coverage(ctx: CoverageContext) -> dict[str, Any]:
    """Every index the package ships; the ones it only describes are left out."""
    counts = {
        "collections": ctx.count("SELECT count(*) FROM idc_collection"),
        "series": ctx.count("SELECT count(*) FROM idc_series"),
        "analysis_results": ctx.count("SELECT count(*) FROM idc_analysis_result"),
        "prior_series_versions": ctx.count("SELECT count(*) FROM idc_prior_version"),
        "data_versions": ctx.count("SELECT count(*) FROM idc_version"),
    }
    missing = unshipped_indices()
    gaps = (
        [left_out(f"{len(missing)} indices: {', '.join(missing)}", UNSHIPPED_REMEDY, len(missing))]
        if missing
        else []
    )
    summary = (
        f"every index idc-index-data {ctx.snapshot.details.get('package_version')} ships "
        f"({', '.join(INDICES)}): {counts['series']:,} series in "
        f"{counts['collections']} collections"
    )
    return coverage_block(
        selection="all",
        summary=summary,
        counts={**counts, "indices_loaded": list(INDICES)},
        left_out=gaps,
    )


SOURCE = SourceSpec(
    name=NAME,
    title="NCI Imaging Data Commons",
    homepage="https://portal.imaging.datacommons.cancer.gov/",
    tables=(
        "idc_collection",
        "idc_analysis_result",
        "idc_series",
        "idc_version",
        "idc_prior_version",
    ),
    fetch=fetch,
    parse=parse,
    search_docs=search_docs,
    coverage=coverage,
    version="2",  # 2: prior_versions_index loaded
)
