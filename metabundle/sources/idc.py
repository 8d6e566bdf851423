"""NCI Imaging Data Commons, read from the Parquet indices of ``idc-index-data``.

The installed package is the upstream snapshot of the indices it ships; its data
version (v25 for idc-index-data 25.x) is recorded as the source's upstream version.
The indices it only describes (the specialized ``<modality>_index`` tables and
``clinical_index``) and the clinical tables are fetched like any upstream file
(:mod:`.idc_indices`); a build without them succeeds and its coverage says so.
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
from metabundle.schemas.idc import IDC
from metabundle.schemas.idc_indices import INDEX_TABLES
from metabundle.sources.base import (
    HOUR_S,
    CoverageContext,
    FetchContext,
    ParseContext,
    RawSnapshot,
    SearchDocContext,
    SourceSpec,
    Tokens,
    UpstreamProbe,
    coverage_block,
    left_out,
)
from metabundle.sources.idc_citations import register_citation_functions
from metabundle.sources.idc_indices import CLINICAL_PREFIX, fetch_unshipped, parse_unshipped

NAME = IDC.name
INDICES = (
    "collections_index",
    "analysis_results_index",
    "idc_index",
    "version_metadata_index",
    "prior_versions_index",
)
"""The indices the package ships with their Parquet; every one is loaded."""
DATA_SOURCES_SQL = """
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
    FROM read_parquet('{collections}') AS c, unnest(c.sources) AS u(s)
    WHERE s.source_doi IS NOT NULL
    GROUP BY 1
), sources AS (
    SELECT * FROM listed
    UNION ALL
    SELECT lower(source_DOI), analysis_result_title, 'analysis_result',
           coalesce(source_url, 'https://doi.org/' || source_DOI), modalities, citation,
           license_short_name, license_long_name, license_url,
           list_transform(string_split(collections, ','), lambda x: trim(x))
    FROM read_parquet('{analysis}')
    WHERE source_DOI IS NOT NULL AND lower(source_DOI) NOT IN (SELECT doi FROM listed)
)
SELECT *, plain_citation(citation) AS citation_text, citation_title(citation) AS citation_title
FROM sources
"""
"""One row per data source (a DOI): collection sources first, analysis results for any
DOI no collection lists; ``min`` picks one value where several collections repeat the
same source."""
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
    missing = fetch_unshipped(ctx, data_version)
    return ctx.snapshot(
        upstream_version=data_version,
        details={"package": "idc-index-data", "package_version": installed, "missing": missing},
        upstream=f"idc-index-data {installed} (installed Python package) and "
        f"{ctx.upstream.describe()}",
    )


def parse(ctx: ParseContext) -> None:
    """Copy the indices into the registry's tables, adding URLs, DOIs and licenses."""
    con = ctx.con
    register_citation_functions(con)
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
               coalesce(source_url, 'https://doi.org/' || source_DOI) AS canonical_url,
               plain_citation(citation) AS citation_text
        FROM read_parquet('{files["analysis_results_index"]}')
        """
    )
    ctx.write("idc_analysis_result", analysis)
    sources = DATA_SOURCES_SQL.format(
        collections=files["collections_index"], analysis=files["analysis_results_index"]
    )
    ctx.write("idc_data_source", con.sql(sources))
    ctx.write("idc_series", con.read_parquet(str(files["idc_index"])))
    ctx.write("idc_version", con.read_parquet(str(files["version_metadata_index"])))
    ctx.write("idc_prior_version", con.read_parquet(str(files["prior_versions_index"])))
    parse_unshipped(ctx)


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
    "fetched from the idc-index-data release of the installed version and IDC's public "
    "clinical export; build with network access, or copy them into the --upstream "
    "mirror with `metabundle mirror --sources idc`"
)


def coverage(ctx: CoverageContext) -> dict[str, Any]:
    """Every index the package ships, and which of the ones it only describes (and
    which clinical tables) the build could fetch."""
    counts = {
        "collections": ctx.count("SELECT count(*) FROM idc_collection"),
        "series": ctx.count("SELECT count(*) FROM idc_series"),
        "analysis_results": ctx.count("SELECT count(*) FROM idc_analysis_result"),
        "prior_series_versions": ctx.count("SELECT count(*) FROM idc_prior_version"),
        "data_versions": ctx.count("SELECT count(*) FROM idc_version"),
        "clinical_tables": ctx.count(
            "SELECT count(DISTINCT short_table_name) FROM idc_clinical_value"
        ),
    }
    missing: dict[str, str] = dict(ctx.snapshot.details.get("missing") or {})
    indices = [name for name in INDEX_TABLES if name not in missing]
    counts["index_rows"] = {
        name: ctx.count(f"SELECT count(*) FROM {INDEX_TABLES[name].name}") for name in indices
    }
    absent = sorted(name for name in missing if not name.startswith(CLINICAL_PREFIX))
    clinical = sorted(name for name in missing if name.startswith(CLINICAL_PREFIX))
    gaps = []
    if absent:
        gaps.append(
            left_out(f"{len(absent)} indices: {', '.join(absent)}", UNSHIPPED_REMEDY, len(absent))
        )
    if clinical:
        shown = ", ".join(name.removeprefix(CLINICAL_PREFIX) for name in clinical[:10])
        more = f" and {len(clinical) - 10} more" if len(clinical) > 10 else ""
        gaps.append(
            left_out(
                f"{len(clinical)} clinical tables: {shown}{more}", UNSHIPPED_REMEDY, len(clinical)
            )
        )
    loaded = [*INDICES, *indices]
    summary = (
        f"{len(loaded)} of {len(INDICES) + len(INDEX_TABLES)} indices of idc-index-data "
        f"{ctx.snapshot.details.get('package_version')}: {counts['series']:,} series in "
        f"{counts['collections']} collections"
    )
    return coverage_block(
        selection="all",
        summary=summary,
        counts={**counts, "indices_loaded": loaded, "indices_missing": absent},
        left_out=gaps,
    )


def upstream_tokens(ctx: FetchContext) -> Tokens:
    """For the sensor: the installed idc-index-data version and the IDC data version it
    ships (no network: upgrading the package is the new upstream)."""
    path = index_parquet("version_metadata_index")
    with connect() as con:
        found = con.execute("SELECT max(idc_version) FROM read_parquet(?)", [str(path)]).fetchall()
    return {"package_version": package_version("idc-index-data"), "data_version": f"v{found[0][0]}"}


SOURCE = SourceSpec(
    descriptor=IDC,
    tables=(
        "idc_collection",
        "idc_analysis_result",
        "idc_data_source",
        "idc_series",
        "idc_version",
        "idc_prior_version",
        *(table.name for table in INDEX_TABLES.values()),
        "idc_clinical_value",
    ),
    fetch=fetch,
    parse=parse,
    search_docs=search_docs,
    coverage=coverage,
    probe=UpstreamProbe(upstream_tokens, HOUR_S, "the installed idc-index-data data version"),
    version="4",  # 3: the unshipped indices and the clinical tables; 4: idc_data_source
)
