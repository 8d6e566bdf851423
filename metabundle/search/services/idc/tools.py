"""NCI Imaging Data Commons discovery tools (the IDC API plan's discovery surface).

Version and headline counts, collections and analysis results, ranked search over
their descriptions, and the filterable series attributes with their values — all
answered offline from the release's ``idc_*`` tables. Cohorts, manifests, viewer
links, citations and licenses live in :mod:`.idc_cohort` and :mod:`.idc_urls`.
"""

from __future__ import annotations

import difflib
import re
from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints

from metabundle.schemas import quote_identifier
from metabundle.schemas.idc import IDC_SERIES
from metabundle.search.errors import not_found
from metabundle.search.params import Explain, Method, Params, Query, clamp
from metabundle.search.payload import search_result, to_payload
from metabundle.search.ranking.pipeline import rank
from metabundle.search.ranking.policies import IDC_SEARCH
from metabundle.search.registry import tool
from metabundle.search.release import Release
from metabundle.search.retrieval import documents, mask_from_sql
from metabundle.search.services.idc.common import (
    GROUP,
    PORTAL_URL,
    SIZE_BYTES_SQL,
    SOURCE,
    clean_citation,
    doi_sources,
    page_block,
    require_idc,
    series_counts,
    size_block,
    source_entry,
    split_list,
)
from metabundle.search.services.idc.filters import (
    ANALYSIS_NOTE,
    BODY_PART_NOTE,
    Attribute,
    Filters,
    resolve_attribute,
)
from metabundle.search.services.idc.indices import attribute_entry, attribute_values

Text = Annotated[str, StringConstraints(max_length=200)]
MAX_OFFSET = 1_000_000_000
Offset = Annotated[
    int,
    Field(ge=0),
    clamp(0, MAX_OFFSET),
]
DESCRIPTION_CHARS = 300
ATTRIBUTES_NOTE = (
    "These are the columns of idc_series (one row per DICOM series) that build_cohort, "
    "get_attribute_values, get_cohort_urls, get_citations and get_licenses filter on. A "
    "property that is not listed here may live in another table: call list_tables "
    "before concluding it does not exist. Collection-level properties (cancer type, "
    "tumor location, species) are found with list_collections. The full IDC index names "
    "its specialized tables <modality>_index (ct_index, mr_index, sm_index, seg_index, "
    "rtstruct_index, ...): list_index_attributes has their columns, which filter too."
)


class NoParams(Params):
    pass


def _short(text: str | None) -> str | None:
    if text is None or len(text) <= DESCRIPTION_CHARS:
        return text
    return text[: DESCRIPTION_CHARS - 1] + "…"


def _page(rows: list[Any], limit: int, offset: int) -> dict[str, Any]:
    return page_block(len(rows), limit, offset, len(rows[offset : offset + limit]))


# -- version and stats ------------------------------------------------------------------


@tool(
    "get_idc_version",
    "Call first for IDC questions: the IDC data release held; cite it.",
    NoParams,
    GROUP,
    guide=(
        "Call this first for Imaging Data Commons questions: the IDC data release this "
        "snapshot holds (e.g. v25) and its date. Cite the IDC version with any IDC "
        "answer. "
        "It also names the idc-index-data package version the data was read from."
    ),
)
def get_idc_version(release: Release, params: NoParams) -> dict[str, Any]:
    require_idc(release)
    latest = release.query_dicts(
        "SELECT idc_version, version_timestamp FROM idc_version ORDER BY idc_version DESC LIMIT 1"
    )[0]
    source = release.manifest["sources"][SOURCE]
    details = source.get("details") or {}
    return {
        "idc_version": f"v{latest['idc_version']}",
        "idc_version_number": latest["idc_version"],
        "version_timestamp": latest["version_timestamp"],
        "package": details.get("package", "idc-index-data"),
        "package_version": details.get("package_version"),
        "fetched_at": source.get("fetched_at"),
        "release_version": release.version,
        "portal": PORTAL_URL,
    }


def _breakdown(release: Release, column: str) -> list[dict[str, Any]]:
    name = quote_identifier(column)
    rows = release.query(
        f"SELECT {name}, count(*) AS n FROM idc_series GROUP BY 1 ORDER BY n DESC, 1"
    )
    return [{"value": value, "series": n} for value, n in rows]


@tool(
    "get_stats",
    "Call to size IDC as a whole (collections, patients, series, size).",
    NoParams,
    GROUP,
    guide=(
        "Headline counts of Imaging Data Commons (collections, patients, series, size, "
        "per modality and license). Call it to size IDC as a whole; use build_cohort for "
        "a selection."
    ),
)
def get_stats(release: Release, params: NoParams) -> dict[str, Any]:
    require_idc(release)
    totals, size = series_counts(release)
    return {
        **totals,
        "total_size": size,
        "modalities": _breakdown(release, "Modality"),
        "licenses": _breakdown(release, "license_short_name"),
        "notes": [
            "patients counts distinct (collection_id, PatientID) pairs: PatientID is unique "
            "only within a collection.",
            "Sizes are in decimal units (1 MB = 10^6 bytes), from series_size_MB.",
        ],
    }


# -- collections ------------------------------------------------------------------------

COLLECTIONS_SQL = f"""
WITH counts AS (
    SELECT collection_id, count(*) AS series, {SIZE_BYTES_SQL} AS size_bytes
    FROM idc_series GROUP BY collection_id
)
SELECT c.*, k.series, k.size_bytes
FROM idc_collection AS c LEFT JOIN counts AS k USING (collection_id)
"""

_ELEMENT_MATCH = (
    "len(list_filter(string_split(c.{column}, ','), "
    "lambda x: contains(lower(trim(x)), lower(?)))) > 0"
)


class ListCollectionsParams(Params):
    cancer_type: Annotated[
        Text | None,
        Field(description="Text, e.g. lung."),
    ] = None
    tumor_location: Annotated[
        Text | None,
        Field(description="Text, e.g. breast."),
    ] = None
    modality: Annotated[
        Text | None,
        Field(description="E.g. CT, MR, SM."),
    ] = None
    limit: Annotated[int, clamp(1, 100), Field(description="1..100.")] = 20
    offset: Offset = 0


def _collection_row(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "collection_id": row["collection_id"],
        "collection_name": row["collection_name"],
        "cancer_types": split_list(row["cancer_types"]),
        "tumor_locations": split_list(row["tumor_locations"]),
        "species": split_list(row["species"]),
        "subjects": row["subjects"],
        "modalities": row["modalities"],
        "licenses": row["licenses"],
        "program_id": row["program_id"],
        "series": row["series"] or 0,
        "size": size_block(row["size_bytes"]),
        "canonical_url": row["canonical_url"],
    }


def _collection_vocabulary(release: Release, column: str) -> list[str]:
    rows = release.query(
        f"SELECT DISTINCT trim(unnest(string_split({quote_identifier(column)}, ','))) "
        "FROM idc_collection ORDER BY 1"
    )
    return [r[0] for r in rows if r[0]]


@tool(
    "list_collections",
    "Call to find IDC collections by cancer type, tumor location or modality.",
    ListCollectionsParams,
    GROUP,
    guide=(
        "List IDC collections, optionally by cancer type, tumor location or modality; "
        "paged, with the total. Call it to find collections for a disease or body site; "
        "then get_collection. "
        "build_cohort with a collection_id filter counts a collection's series."
    ),
)
def list_collections(release: Release, params: ListCollectionsParams) -> dict[str, Any]:
    require_idc(release)
    conditions, args = [], []
    if params.cancer_type:
        conditions.append(_ELEMENT_MATCH.format(column="cancer_types"))
        args.append(params.cancer_type.strip())
    if params.tumor_location:
        conditions.append(_ELEMENT_MATCH.format(column="tumor_locations"))
        args.append(params.tumor_location.strip())
    if params.modality:
        conditions.append(
            "list_contains(list_transform(c.modalities, lambda m: lower(m)), lower(?))"
        )
        args.append(params.modality.strip())
    where = " AND ".join(conditions) or "TRUE"
    rows = release.query_dicts(
        f"SELECT * FROM ({COLLECTIONS_SQL}) AS c WHERE {where} ORDER BY collection_id", args
    )
    payload: dict[str, Any] = {
        "page": _page(rows, params.limit, params.offset),
        "collections": [
            _collection_row(r) for r in rows[params.offset : params.offset + params.limit]
        ],
    }
    if not rows and conditions:
        payload["hint"] = _no_collection_hint(release, params)
    return payload


def _no_collection_hint(release: Release, params: ListCollectionsParams) -> str:
    """Close spellings of the words that matched nothing."""
    close: list[str] = []
    for value, column in (
        (params.cancer_type, "cancer_types"),
        (params.tumor_location, "tumor_locations"),
    ):
        if value:
            vocabulary = _collection_vocabulary(release, column)
            by_lower = {v.lower(): v for v in vocabulary}
            close += [
                by_lower[m]
                for m in difflib.get_close_matches(value.lower(), list(by_lower), n=5, cutoff=0.6)
            ]
    suggestion = f" Close values: {', '.join(close)}." if close else ""
    return (
        "No collection matches all the given criteria; loosen them (a word matches inside "
        f"a cancer type or location) or call search_idc.{suggestion}"
    )


class GetCollectionParams(Params):
    collection_id: Annotated[
        str,
        StringConstraints(min_length=1, max_length=200),
        Field(description="E.g. 'tcga_luad' or 'TCGA-LUAD'."),
    ]


def _normal(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


def resolve_collection(release: Release, given: str) -> str:
    """The collection_id for an id or a name, or ``not_found`` with suggestions."""
    rows = release.query("SELECT collection_id, collection_name FROM idc_collection")
    wanted = _normal(given)
    for collection_id, name in rows:
        if given == collection_id or wanted in (collection_id, _normal(name or "")):
            return collection_id
    choices = {cid: cid for cid, _ in rows} | {_normal(n or ""): cid for cid, n in rows}
    close = difflib.get_close_matches(wanted, list(choices), n=5, cutoff=0.6)
    suggestions = list(dict.fromkeys(choices[c] for c in close))
    raise not_found(
        f"There is no IDC collection {given!r}; call list_collections or search_idc.",
        suggestions=suggestions,
    )


def _collection_series(release: Release, collection_id: str) -> dict[str, Any]:
    modalities = release.query(
        "SELECT Modality, count(*) AS n FROM idc_series WHERE collection_id = ? "
        "GROUP BY 1 ORDER BY n DESC, 1",
        [collection_id],
    )
    analysis = release.query_dicts(
        """
        SELECT s.analysis_result_id, a.analysis_result_title AS title, count(*) AS series
        FROM idc_series AS s LEFT JOIN idc_analysis_result AS a USING (analysis_result_id)
        WHERE s.collection_id = ? AND s.analysis_result_id IS NOT NULL
        GROUP BY 1, 2 ORDER BY series DESC, 1
        """,
        [collection_id],
    )
    return {
        "series_by_modality": [{"value": m, "series": n} for m, n in modalities],
        "analysis_results": analysis,
    }


@tool(
    "get_collection",
    "Call after list_collections or search_idc for one IDC collection's details.",
    GetCollectionParams,
    GROUP,
    guide=(
        "Get one IDC collection: description, cancer types, sites, licenses, DOIs with "
        "citations, counts, size, modalities and analysis results. Call it after "
        "list_collections or search_idc. "
        "Then call build_cohort to select its series or get_citations to cite it."
    ),
)
def get_collection(release: Release, params: GetCollectionParams) -> dict[str, Any]:
    require_idc(release)
    collection_id = resolve_collection(release, params.collection_id.strip())
    row = release.query_dicts(
        f"SELECT * FROM ({COLLECTIONS_SQL}) WHERE collection_id = ?", [collection_id]
    )[0]
    counts = release.query_dicts(
        """
        SELECT count(DISTINCT PatientID) AS patients, count(DISTINCT StudyInstanceUID) AS studies,
               count(*) AS series, coalesce(sum(instanceCount), 0) AS instances
        FROM idc_series WHERE collection_id = ?
        """,
        [collection_id],
    )[0]
    sources = doi_sources(release)
    listed = [s for s in sources.values() if collection_id in (s["collections"] or [])]
    listed.sort(key=lambda s: (s["source_type"] != "original_data", s["doi"]))
    return {
        **_collection_row(row),
        "description": row["description"],
        "supporting_data": split_list(row["supporting_data"]),
        "status": row["status"],
        "updated": row["updated"],
        "counts": counts,
        "dois": [s["doi"] for s in listed],
        "sources": [source_entry(s) for s in listed],
        **_collection_series(release, collection_id),
        "notes": [ANALYSIS_NOTE],
    }


# -- analysis results -------------------------------------------------------------------


class ListAnalysisResultsParams(Params):
    collection_id: Text | None = None
    modality: Annotated[Text | None, Field(description="E.g. SEG, SR.")] = None
    limit: Annotated[int, clamp(1, 100), Field(description="1..100.")] = 30
    offset: Offset = 0


@tool(
    "list_analysis_results",
    "Call to find IDC AI or expert annotations (segmentations, radiomics).",
    ListAnalysisResultsParams,
    GROUP,
    guide=(
        "List IDC analysis results (segmentations, annotations, radiomics) with DOI, "
        "license, modalities, annotated collections and series count. Call it to find AI "
        "or expert annotations. "
        "Filter a cohort with analysis_result_id in build_cohort."
        " collection_id keeps analysis results that annotate that collection."
    ),
)
def list_analysis_results(release: Release, params: ListAnalysisResultsParams) -> dict[str, Any]:
    require_idc(release)
    conditions, args = [], []
    if params.collection_id:
        collection_id = resolve_collection(release, params.collection_id.strip())
        conditions.append(
            "list_contains(list_transform(string_split(a.collections, ','), lambda x: trim(x)), ?)"
        )
        args.append(collection_id)
    if params.modality:
        conditions.append(
            "list_contains(list_transform(string_split(a.modalities, ','), "
            "lambda x: lower(trim(x))), lower(?))"
        )
        args.append(params.modality.strip())
    where = " AND ".join(conditions) or "TRUE"
    rows = release.query_dicts(
        f"""
        WITH counts AS (
            SELECT analysis_result_id, count(*) AS series, {SIZE_BYTES_SQL} AS size_bytes
            FROM idc_series WHERE analysis_result_id IS NOT NULL GROUP BY 1
        )
        SELECT a.*, k.series, k.size_bytes
        FROM idc_analysis_result AS a LEFT JOIN counts AS k USING (analysis_result_id)
        WHERE {where} ORDER BY a.analysis_result_id
        """,
        args,
    )
    items = [
        {
            "analysis_result_id": r["analysis_result_id"],
            "title": r["analysis_result_title"],
            "doi": r["source_DOI"],
            "subjects": r["subjects"],
            "collections": split_list(r["collections"]),
            "modalities": split_list(r["modalities"]),
            "license": r["license_short_name"],
            "updated": r["updated"],
            "series": r["series"] or 0,
            "size": size_block(r["size_bytes"]),
            "description": _short(r["description"]),
            "citation": clean_citation(r["citation"]),
            "canonical_url": r["canonical_url"],
        }
        for r in rows[params.offset : params.offset + params.limit]
    ]
    return {"page": _page(rows, params.limit, params.offset), "analysis_results": items}


# -- search -----------------------------------------------------------------------------


class SearchIdcParams(Params):
    query: Query
    method: Method = "hybrid"
    kind: Literal["collection", "analysis_result"] | None = None
    limit: Annotated[int, clamp(1, 50), Field(description="1..50.")] = 10
    explain: Explain = False


SUMMARY_LIST_ITEMS = 8
"""A search hit lists at most this many cancer types or collections (a basket trial
such as EAY131 names dozens); ``<name>_total`` then counts them all, and
get_collection or list_analysis_results gives the whole list."""


def _summary_list(name: str, text: str | None) -> dict[str, Any]:
    """``{name: items}``, cut to :data:`SUMMARY_LIST_ITEMS` with ``<name>_total``."""
    items = split_list(text)
    if len(items) <= SUMMARY_LIST_ITEMS:
        return {name: items}
    return {name: items[:SUMMARY_LIST_ITEMS], f"{name}_total": len(items)}


def _details(release: Release, rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per entity id, the facts an agent needs to choose among results."""
    ids = [r["entity_id"] for r in rows]
    details: dict[str, dict[str, Any]] = {}
    for r in release.query_dicts(
        "SELECT collection_id, cancer_types, tumor_locations, modalities, subjects "
        "FROM idc_collection WHERE list_contains(?, collection_id)",
        [ids],
    ):
        details[r["collection_id"]] = {
            **_summary_list("cancer_types", r["cancer_types"]),
            "tumor_locations": split_list(r["tumor_locations"]),
            "modalities": r["modalities"],
            "subjects": r["subjects"],
        }
    for r in release.query_dicts(
        "SELECT analysis_result_id, collections, modalities, subjects "
        "FROM idc_analysis_result WHERE list_contains(?, analysis_result_id)",
        [ids],
    ):
        details[r["analysis_result_id"]] = {
            **_summary_list("collections", r["collections"]),
            "modalities": split_list(r["modalities"]),
            "subjects": r["subjects"],
        }
    return details


@tool(
    "search_idc",
    "Call when list_collections' filters are too narrow: searches IDC collections by meaning.",
    SearchIdcParams,
    GROUP,
    guide=(
        "Search IDC collections and analysis results by meaning or keywords (disease, "
        "organ, modality, trial, DOI). Call it when list_collections' word filters are "
        "too narrow. "
        "Exact ids and DOIs rank first. Then call get_collection or list_analysis_results for "
        "details."
    ),
)
def search_idc(release: Release, params: SearchIdcParams) -> dict[str, Any]:
    require_idc(release)
    kinds = [params.kind] if params.kind else ["collection", "analysis_result"]
    mask = mask_from_sql(release, "source = ? AND list_contains(?, kind)", [SOURCE, kinds])
    hits, retrieval = rank(
        release,
        params.query,
        policy=IDC_SEARCH,
        method=params.method,
        mask=mask,
        limit=params.limit,
        explain=params.explain,
    )
    rows = documents(release, [h.docno for h in hits])
    details = _details(release, list(rows.values()))
    results = []
    for position, hit in enumerate(hits, start=1):
        row = rows[hit.docno]
        item = to_payload(search_result(position, row, hit.scores()))
        item.update(details.get(row["entity_id"], {}))
        results.append(item)
    return {"query": params.query, "retrieval": retrieval.to_json(), "results": results}


# -- attributes -------------------------------------------------------------------------


@tool(
    "list_attributes",
    "Call before build_cohort: the series attributes IDC filters on.",
    NoParams,
    GROUP,
    guide=(
        "List the series attributes IDC cohorts filter on (columns of idc_series) with "
        "type and description. Call it before build_cohort, then get_attribute_values. "
        "A property not in this list may live elsewhere: check list_tables."
    ),
)
def list_attributes(release: Release, params: NoParams) -> dict[str, Any]:
    require_idc(release)
    return {
        "table": IDC_SERIES.name,
        "attributes": [attribute_entry(Attribute(c)) for c in IDC_SERIES.columns],
        "notes": [ATTRIBUTES_NOTE, BODY_PART_NOTE, ANALYSIS_NOTE],
    }


class AttributeValuesParams(Params):
    attribute: Annotated[
        str,
        StringConstraints(min_length=1, max_length=100),
        Field(description="E.g. Modality, from list_attributes."),
    ]
    limit: Annotated[int, clamp(1, 500), Field(description="1..500.")] = 50
    contains: Annotated[
        Text | None,
        Field(description="Case-insensitive substring."),
    ] = None
    filters: Filters | None = None


@tool(
    "get_attribute_values",
    "Call before filtering so build_cohort uses an attribute's values as stored.",
    AttributeValuesParams,
    GROUP,
    guide=(
        "Get the distinct values of one series attribute with series counts, most "
        "frequent first. Call it before filtering so build_cohort uses values spelled and"
        " cased as stored. "
        "Optionally within a selection (filters) or containing a word (contains); the total "
        "number of distinct values is given."
        " attribute comes from list_attributes or list_index_attributes (e.g. "
        "SegmentedPropertyType_CodeMeanings); filters count only the series they select."
    ),
)
def get_attribute_values(release: Release, params: AttributeValuesParams) -> dict[str, Any]:
    require_idc(release)
    attribute = resolve_attribute(params.attribute, "attribute")
    return attribute_values(release, attribute, params.filters, params.contains, params.limit)
