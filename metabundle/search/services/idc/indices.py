"""Imaging Data Commons specialized indices: their columns as filter attributes
(``list_index_attributes``), and how the attribute tools describe an attribute.

The indices are ``seg_index``, ``rtstruct_index``, ``ann_index``/``ann_group_index``,
``ct_index``, ``mr_index``, ``pt_index``, ``contrast_index``,
``volume_geometry_index``, ``sm_index`` and ``sm_instance_index``, stored as
``idc_<index>`` tables; an index the build could not fetch is reported as missing.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from metabundle.schemas import duckdb_type
from metabundle.search.params import Params
from metabundle.search.registry import tool
from metabundle.search.release import Release
from metabundle.search.services.idc import queries
from metabundle.search.services.idc.filters import (
    INDEX_NOTE,
    REFERENCE_COLUMNS,
    SERIES_INDICES,
    Attribute,
    is_numeric,
)
from metabundle.search.services.idc.models import IdcAttribute, IdcIndex, IdcIndexList
from metabundle.search.services.idc.source import GROUP, require_idc

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


def attribute_entry(attribute: Attribute) -> IdcAttribute:
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
    return IdcAttribute(
        name=attribute.name,
        type=duckdb_type(column, attribute.table),
        filter=accepts,
        description=column.description,
    )


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
    response=IdcIndexList,
    guide=(
        "List the columns of Imaging Data Commons' specialized indices (seg_index, "
        "rtstruct_index, ann_index, ct_index, mr_index, pt_index, contrast_index, "
        "volume_geometry_index, sm_index, ...), which build_cohort and "
        "get_attribute_values filter on. Call it when a property (segmented anatomy, "
        "stain, slice thickness, field strength, contrast) is not in list_attributes."
    ),
)
def list_index_attributes(release: Release, params: IndexAttributesParams) -> IdcIndexList:
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
        entry = IdcIndex(
            index=name,
            table=table.name,
            loaded=name not in missing,
            rows=queries.row_count(release, table.name),
            attributes=(
                [attribute_entry(a) for a in attributes]
                if params.index
                else [a.name for a in attributes]
            ),
        )
        if REFERENCE_COLUMNS.get(name):
            entry.references = REFERENCE_COLUMNS[name]
        if params.index:
            entry.description = table.description
        indices.append(entry)
    return IdcIndexList(indices=indices, notes=[ROUTING_NOTE, INDEX_NOTE])
