"""Imaging Data Commons attributes: the columns of the specialized indices
(``list_index_attributes``) and the values of any attribute, of ``idc_series`` or of an
index (behind ``get_attribute_values``), counted in series.

The indices are ``seg_index``, ``rtstruct_index``, ``ann_index``/``ann_group_index``,
``ct_index``, ``mr_index``, ``pt_index``, ``contrast_index``,
``volume_geometry_index``, ``sm_index`` and ``sm_instance_index``, stored as
``idc_<index>`` tables; an index the build could not fetch is reported as missing.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from metabundle.schemas import duckdb_type
from metabundle.search.params import Params
from metabundle.search.registry import tool
from metabundle.search.release import Release
from metabundle.search.services.idc.common import GROUP, require_idc
from metabundle.search.services.idc.filters import (
    BODY_PART_NOTE,
    INDEX_NOTE,
    REFERENCE_COLUMNS,
    SERIES_INDICES,
    Attribute,
    compile_filters,
    is_numeric,
    require_loaded,
)

IndexName = Literal[tuple(SERIES_INDICES)]  # type: ignore[valid-type]
ROUTING_NOTE = (
    "Filter build_cohort and get_attribute_values with these columns as "
    "'<index>.<column>' (or the bare column where one index has it). Segmented anatomy "
    "is seg_index.SegmentedPropertyType_CodeMeanings; stains are "
    "sm_index.staining_usingSubstance_CodeMeaning; slice thickness is per modality "
    "(ct_index, mr_index, pt_index)."
)


def missing_indices(release: Release) -> dict[str, str]:
    details = release.manifest["sources"]["idc"].get("details") or {}
    return dict(details.get("missing") or {})


def attribute_entry(attribute: Attribute) -> dict[str, Any]:
    """An attribute as the attribute tools describe it."""
    column = attribute.column
    if is_numeric(column):
        accepts = "list of values or {min, max} range"
    elif attribute.is_date:
        accepts = "list of values or {min, max} range of YYYY-MM-DD dates"
    elif column.type.value == "json":
        accepts = "not filterable (use run_sql)"
    elif attribute.is_list:
        accepts = "list of values (a series matches when its list holds any of them)"
    else:
        accepts = "list of values"
    return {
        "name": attribute.name,
        "type": duckdb_type(column, attribute.table),
        "filter": accepts,
        "description": column.description,
    }


class IndexAttributesParams(Params):
    index: Annotated[
        IndexName | None,
        Field(description="Omit for all."),
    ] = None


@tool(
    "list_index_attributes",
    "Call when a property is not in list_attributes: columns of IDC's specialized indices.",
    IndexAttributesParams,
    GROUP,
    guide=(
        "List the columns of Imaging Data Commons' specialized indices (seg_index, "
        "rtstruct_index, ann_index, ct_index, mr_index, pt_index, contrast_index, "
        "volume_geometry_index, sm_index, ...), which build_cohort and "
        "get_attribute_values filter on. Call it when a property (segmented anatomy, "
        "stain, slice thickness, field strength, contrast) is not in list_attributes."
    ),
)
def list_index_attributes(release: Release, params: IndexAttributesParams) -> dict[str, Any]:
    require_idc(release)
    missing = missing_indices(release)
    indices = []
    for name, table in SERIES_INDICES.items():
        if params.index not in (None, name):
            continue
        attributes = [
            Attribute(column, name)
            for column in table.columns
            if column.name != "SeriesInstanceUID"
        ]
        entry: dict[str, Any] = {
            "index": name,
            "table": table.name,
            "loaded": name not in missing,
            "rows": release.query(f"SELECT count(*) FROM {table.name}")[0][0],
        }
        if REFERENCE_COLUMNS.get(name):
            entry["references"] = REFERENCE_COLUMNS[name]
        if params.index:
            entry["description"] = table.description
            entry["attributes"] = [attribute_entry(a) for a in attributes]
        else:
            entry["attributes"] = [a.name for a in attributes]
        indices.append(entry)
    return {"indices": indices, "notes": [ROUTING_NOTE, INDEX_NOTE]}


def attribute_values(
    release: Release,
    attribute: Attribute,
    filters: dict[str, Any] | None,
    contains: str | None,
    limit: int,
) -> dict[str, Any]:
    """The distinct values of an attribute with the number of series holding each
    (list columns counted per element), among the series ``filters`` select."""
    require_loaded(release, attribute)
    selection = compile_filters(release, filters)
    where, args = selection.where, list(selection.params)
    series = "count(*)"  # idc_series has one row per series
    if attribute.index:
        series = "count(DISTINCT SeriesInstanceUID)"
        where = f"SeriesInstanceUID IN (SELECT SeriesInstanceUID FROM idc_series WHERE {where})"
    if contains:
        where += " AND contains(lower(CAST(v AS VARCHAR)), lower(?))"
        args.append(contains)
    values = f"({attribute.values_sql()})"
    summary = release.query_dicts(
        f"""
        SELECT count(DISTINCT v) AS total_distinct,
               {series} FILTER (WHERE v IS NULL) AS null_series,
               {series} AS series, min(v) AS min, max(v) AS max
        FROM {values} WHERE {where}
        """,
        args,
    )[0]
    rows = release.query(
        f"SELECT v, {series} AS n FROM {values} "
        f"WHERE {where} AND v IS NOT NULL GROUP BY 1 ORDER BY n DESC, 1 LIMIT ?",
        [*args, limit],
    )
    payload: dict[str, Any] = {
        **attribute_entry(attribute),
        "values": [{"value": value, "series": n} for value, n in rows],
        "returned": len(rows),
        "total_distinct": summary["total_distinct"],
        "truncated": len(rows) < summary["total_distinct"],
        "null_series": summary["null_series"],
        "series": summary["series"],
        **selection.echo(),
    }
    if is_numeric(attribute.column):
        payload["range"] = {"min": summary["min"], "max": summary["max"]}
    if attribute.index in REFERENCE_COLUMNS and INDEX_NOTE not in payload["notes"]:
        payload["notes"].append(INDEX_NOTE)
    body_part = ("BodyPartExamined", "SegmentedPropertyType_CodeMeanings")
    if attribute.column.name in body_part and BODY_PART_NOTE not in payload["notes"]:
        payload["notes"].append(BODY_PART_NOTE)
    return payload
