"""Imaging Data Commons series attributes: the columns of ``idc_series`` that cohorts
filter on (``list_attributes``) and the values of any attribute, of ``idc_series`` or of
a specialized index, counted in series (``get_attribute_values``)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, StringConstraints

from metabundle.schemas.idc import IDC_SERIES
from metabundle.search.params import Params, clamp
from metabundle.search.registry import tool
from metabundle.search.release import Release
from metabundle.search.services.idc import queries
from metabundle.search.services.idc.filters import (
    ANALYSIS_NOTE,
    BODY_PART_NOTE,
    INDEX_NOTE,
    REFERENCE_COLUMNS,
    Attribute,
    Filters,
    compile_filters,
    is_numeric,
    require_loaded,
    resolve_attribute,
)
from metabundle.search.services.idc.indices import attribute_entry
from metabundle.search.services.idc.models import (
    IdcAttributeList,
    IdcAttributeValue,
    IdcAttributeValues,
    IdcValueRange,
)
from metabundle.search.services.idc.source import GROUP, Text, require_idc

ATTRIBUTES_NOTE = (
    "These are the columns of idc_series (one row per DICOM series) that build_cohort, "
    "get_attribute_values, get_cohort_urls, get_citations and get_licenses filter on. A "
    "property that is not listed here may live in another table: call list_tables "
    "before concluding it does not exist. Collection-level properties (cancer type, "
    "tumor location, species) are found with list_collections. The full IDC index names "
    "its specialized tables <modality>_index (ct_index, mr_index, sm_index, seg_index, "
    "rtstruct_index, ...): list_index_attributes has their columns, which filter too."
)
BODY_PART_COLUMNS = ("BodyPartExamined", "SegmentedPropertyType_CodeMeanings")
"""The attributes whose values come with :data:`BODY_PART_NOTE`."""


class NoParams(Params):
    pass


@tool(
    "list_attributes",
    "Call before build_cohort: the series attributes IDC filters on.",
    NoParams,
    GROUP,
    response=IdcAttributeList,
    guide=(
        "List the series attributes IDC cohorts filter on (columns of idc_series) with "
        "type and description. Call it before build_cohort, then get_attribute_values. "
        "A property not in this list may live elsewhere: check list_tables."
    ),
)
def list_attributes(release: Release, params: NoParams) -> IdcAttributeList:
    require_idc(release)
    return IdcAttributeList(
        table=IDC_SERIES.name,
        attributes=[attribute_entry(Attribute(c)) for c in IDC_SERIES.columns],
        notes=[ATTRIBUTES_NOTE, BODY_PART_NOTE, ANALYSIS_NOTE],
    )


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
    response=IdcAttributeValues,
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
def get_attribute_values(release: Release, params: AttributeValuesParams) -> IdcAttributeValues:
    """The distinct values of an attribute with the number of series holding each
    (list columns counted per element), among the series ``filters`` select."""
    require_idc(release)
    attribute = resolve_attribute(params.attribute, "attribute")
    require_loaded(release, attribute)
    selection = compile_filters(release, params.filters)
    summary, rows = queries.attribute_value_counts(
        release, attribute, selection, params.contains, params.limit
    )
    if attribute.index in REFERENCE_COLUMNS and INDEX_NOTE not in selection.notes:
        selection.notes.append(INDEX_NOTE)
    if attribute.column.name in BODY_PART_COLUMNS and BODY_PART_NOTE not in selection.notes:
        selection.notes.append(BODY_PART_NOTE)
    answer = IdcAttributeValues(
        **attribute_entry(attribute).model_dump(),
        values=[IdcAttributeValue(value=value, series=n) for value, n in rows],
        returned=len(rows),
        total_distinct=summary["total_distinct"],
        truncated=len(rows) < summary["total_distinct"],
        null_series=summary["null_series"],
        series=summary["series"],
        **selection.echo(),
    )
    if is_numeric(attribute.column):
        answer.range = IdcValueRange(min=summary["min"], max=summary["max"])
    return answer
