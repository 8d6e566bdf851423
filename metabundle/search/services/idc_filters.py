"""Structured filters over ``idc_series`` (one row per DICOM series).

A filter maps an attribute (a column of ``idc_series`` in the schema registry) to a list
of values (``null`` matches a missing value) or, for numeric columns, to a range
``{"min": .., "max": ..}``. Filters are ANDed; the values of one attribute are ORed.

Safety: column names come only from the registry's whitelist and are quoted; every
value is a bound parameter, so a value such as ``x' OR '1'='1`` is just a string that
matches nothing. Values are case-sensitive, as in idc-index; a value that matches
nothing only because of its case earns a warning that names the right spelling.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Annotated, Any

from pydantic import BeforeValidator, Field, StringConstraints, WithJsonSchema

from metabundle.schemas import quote_identifier
from metabundle.schemas.idc import IDC_COLLECTION, IDC_SERIES
from metabundle.schemas.model import Column, ColumnType
from metabundle.search.errors import invalid
from metabundle.search.release import Release

MAX_ATTRIBUTES = 20
MAX_VALUES = 1000
NUMERIC_TYPES = frozenset(
    {ColumnType.INT32, ColumnType.INT64, ColumnType.FLOAT32, ColumnType.FLOAT64}
)
COLUMNS: dict[str, Column] = {c.name: c for c in IDC_SERIES.columns}

BODY_PART_NOTE = (
    "BodyPartExamined describes the source acquisition; for derived series (SEG, "
    "RTSTRUCT) it is not the segmented anatomy, which lives in seg_index "
    "(SegmentedPropertyType_CodeMeanings) and rtstruct_index of the full IDC index - "
    "tables this release does not hold."
)
ANALYSIS_NOTE = (
    "Analysis-result series (segmentations, annotations) share the collection_id of the "
    "collection they analyze; add analysis_result_id: [null] to keep original data only."
)

MAX_VALUE_CHARS = 1000
SCALAR_SCHEMA: dict[str, Any] = {"type": ["string", "number", "null"]}
FILTER_VALUE_SCHEMA: dict[str, Any] = {
    "type": ["array", "object", "string", "number", "null"],
    "items": SCALAR_SCHEMA,
}
"""A list of values, one value or a ``{"min", "max"}`` range (validated by the core)."""


@dataclass(frozen=True)
class RangeFilter:
    """A numeric range; either bound may be omitted (both are inclusive)."""

    min: float | None = None
    max: float | None = None

    def echo(self) -> dict[str, float]:
        return {k: v for k, v in (("min", self.min), ("max", self.max)) if v is not None}


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _scalar(value: Any) -> Any:
    if value is None or _is_number(value):
        return value
    if isinstance(value, str):
        if len(value) > MAX_VALUE_CHARS:
            raise ValueError(f"a value is longer than {MAX_VALUE_CHARS} characters")
        return value
    raise ValueError(f"values must be strings, numbers or null, not {type(value).__name__}")


def _range(raw: dict[Any, Any]) -> RangeFilter:
    if not raw or set(raw) - {"min", "max"}:
        raise ValueError('a range is {"min": number, "max": number} (either may be omitted)')
    bounds = [raw.get("min"), raw.get("max")]
    if not all(b is None or _is_number(b) for b in bounds) or bounds == [None, None]:
        raise ValueError("range bounds min and max must be numbers")
    low, high = bounds
    if low is not None and high is not None and low > high:
        raise ValueError("range min is greater than max")
    return RangeFilter(low, high)


def _filter_value(raw: Any) -> list[Any] | RangeFilter:
    """One attribute's filter: a list of values, one value, or a numeric range."""
    if isinstance(raw, dict):
        return _range(raw)
    if isinstance(raw, list):
        if len(raw) > MAX_VALUES:
            raise ValueError(f"at most {MAX_VALUES} values per attribute")
        return [_scalar(v) for v in raw]
    return [_scalar(raw)]


FilterValue = Annotated[Any, BeforeValidator(_filter_value), WithJsonSchema(FILTER_VALUE_SCHEMA)]

Filters = Annotated[
    dict[Annotated[str, StringConstraints(max_length=100)], FilterValue],
    Field(
        max_length=MAX_ATTRIBUTES,
        description=(
            'Attribute -> list of values (ORed) or {"min", "max"}, e.g. {"Modality": '
            '["CT"]}; attributes from list_attributes, values from get_attribute_values.'
        ),
    ),
]


@dataclass
class Selection:
    """Compiled filters: a WHERE clause over idc_series with its bound parameters."""

    where: str = "TRUE"
    params: list[Any] = field(default_factory=list)
    applied: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not self.applied

    def echo(self) -> dict[str, Any]:
        """``filters_applied`` / ``warnings`` / ``notes`` for a response."""
        return {"filters_applied": self.applied, "warnings": self.warnings, "notes": self.notes}


def is_numeric(column: Column) -> bool:
    return column.type in NUMERIC_TYPES


def resolve_attribute(name: str, parameter: str = "filters") -> Column:
    """The ``idc_series`` column called ``name``, or an ``invalid_request`` that routes."""
    if name in COLUMNS:
        return COLUMNS[name]
    by_case = [c for c in COLUMNS if c.lower() == name.lower()]
    if by_case:
        raise invalid(
            f"{parameter}: unknown attribute {name!r}; attribute names are case-sensitive - "
            f"did you mean {by_case[0]!r}?",
            suggestions=by_case,
        )
    if name in IDC_COLLECTION.column_names:
        raise invalid(
            f"{parameter}: {name!r} is a collection-level property (idc_collection), not a "
            "series attribute; call list_collections to find collections by it, then "
            "filter on collection_id.",
            suggestions=["collection_id"],
        )
    suggestions = difflib.get_close_matches(name, list(COLUMNS), n=5, cutoff=0.5)
    raise invalid(
        f"{parameter}: unknown attribute {name!r}; call list_attributes for the filterable "
        "attributes, and list_tables when a property is not among them.",
        suggestions=suggestions,
    )


def _values(column: Column, raw: list[Any]) -> list[Any]:
    """The values of a list filter, converted to the column's kind and deduplicated."""
    if not raw:
        raise invalid(f"filters: {column.name} needs at least one value.")
    converted: list[Any] = []
    for value in raw:
        if value is None:
            item: Any = None
        elif is_numeric(column):
            item = _number(column, value)
        else:
            item = str(value)
        if item not in converted:
            converted.append(item)
    return converted


def _number(column: Column, value: Any) -> int | float:
    """A numeric filter value; numeric strings such as ``"25"`` are accepted."""
    if isinstance(value, int | float):
        return value
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            continue
    raise invalid(f"filters: {column.name} is numeric; {value!r} is not a number.")


def _list_condition(column: Column, values: list[Any], params: list[Any]) -> str:
    name = quote_identifier(column.name)
    present = [v for v in values if v is not None]
    parts = []
    if present:
        cast = "DOUBLE[]" if is_numeric(column) else "VARCHAR[]"
        parts.append(f"{name} IN (SELECT unnest(?::{cast}))")
        params.append(present)
    if None in values:
        parts.append(f"{name} IS NULL")
    return "(" + " OR ".join(parts) + ")"


def _range_condition(column: Column, bounds: RangeFilter, params: list[Any]) -> str:
    if not is_numeric(column):
        raise invalid(f"filters: {column.name} is text, so it takes a list of values, not a range.")
    name = quote_identifier(column.name)
    parts = []
    if bounds.min is not None:
        parts.append(f"{name} >= ?")
        params.append(float(bounds.min))
    if bounds.max is not None:
        parts.append(f"{name} <= ?")
        params.append(float(bounds.max))
    return "(" + " AND ".join(parts) + ")"


def _unmatched_warnings(release: Release, column: Column, values: list[Any]) -> list[str]:
    """Warnings for values that match no series at all, naming case variants that do."""
    present = [v for v in values if v is not None]
    if not present:
        return []
    name = quote_identifier(column.name)
    cast = "DOUBLE[]" if is_numeric(column) else "VARCHAR[]"
    found = {
        row[0]
        for row in release.query(
            f"SELECT DISTINCT {name} FROM idc_series WHERE {name} IN (SELECT unnest(?::{cast}))",
            [present],
        )
    }
    missing = [v for v in present if v not in found]
    if not missing:
        return []
    variants: dict[str, list[str]] = {}
    if not is_numeric(column):
        rows = release.query(
            f"SELECT DISTINCT {name} FROM idc_series "
            f"WHERE lower({name}) IN (SELECT lower(unnest(?::VARCHAR[]))) ORDER BY 1",
            [missing],
        )
        for (actual,) in rows:
            variants.setdefault(actual.lower(), []).append(actual)
    warnings = []
    for value in missing:
        spelled = variants.get(str(value).lower())
        if spelled:
            options = ", ".join(repr(s) for s in spelled)
            warnings.append(
                f"{column.name} value {value!r} matches no series because values are "
                f"case-sensitive; use {options}."
            )
        else:
            warnings.append(
                f"{column.name} value {value!r} matches no series; call get_attribute_values "
                f"for {column.name}'s values."
            )
    return warnings


def compile_filters(release: Release, filters: dict[str, Any] | None) -> Selection:
    """Validate ``filters`` against the registry and compile them to bound SQL."""
    selection = Selection()
    conditions: list[str] = []
    for attribute, raw in (filters or {}).items():
        column = resolve_attribute(attribute)
        if isinstance(raw, RangeFilter):
            conditions.append(_range_condition(column, raw, selection.params))
            selection.applied[column.name] = raw.echo()
            continue
        values = _values(column, raw)
        conditions.append(_list_condition(column, values, selection.params))
        selection.applied[column.name] = values
        selection.warnings += _unmatched_warnings(release, column, values)
    if conditions:
        selection.where = " AND ".join(conditions)
    if "BodyPartExamined" in selection.applied:
        selection.notes.append(BODY_PART_NOTE)
    if "collection_id" in selection.applied and "analysis_result_id" not in selection.applied:
        selection.notes.append(ANALYSIS_NOTE)
    return selection


def require_filters(selection: Selection, tool: str, hint: str) -> None:
    """Refuse an unfiltered request (the whole of IDC) with ``invalid_request``."""
    if selection.empty:
        raise invalid(f"{tool}: filters must name at least one attribute; {hint}")
