"""Structured filters over ``idc_series`` (one row per DICOM series).

A filter maps an attribute to a list of values (``null`` matches a missing value) or,
for numeric and date columns, to a range ``{"min": .., "max": ..}`` (dates as ISO
``YYYY-MM-DD``). Filters are ANDed; the values of one attribute are ORed. An attribute
is a column of ``idc_series`` or of a specialized index (``seg_index.AlgorithmName``,
or unqualified where only one index has the column): it keeps the series the index
describes, and for ``seg_index``, ``rtstruct_index`` and ``ann_index`` also the series
they segment or annotate, so ``Modality`` then chooses between the two.

Safety: column names come only from the registry's whitelist and are quoted; every
value is a bound parameter, so a value such as ``x' OR '1'='1`` is just a string that
matches nothing. Values are case-sensitive, as in idc-index; a value that matches
nothing only because of its case earns a warning that names the right spelling.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from datetime import date
from functools import lru_cache
from typing import Annotated, Any

from pydantic import BeforeValidator, Field, StringConstraints, WithJsonSchema

from metabundle.schemas import quote_identifier
from metabundle.schemas.idc import IDC_COLLECTION, IDC_SERIES
from metabundle.schemas.idc_indices import INDEX_TABLES
from metabundle.schemas.model import Column, ColumnType, Table
from metabundle.search.errors import invalid, not_found
from metabundle.search.release import Release

MAX_ATTRIBUTES = 20
MAX_VALUES = 1000
NUMERIC_TYPES = frozenset(
    {ColumnType.INT32, ColumnType.INT64, ColumnType.FLOAT32, ColumnType.FLOAT64}
)
COLUMNS: dict[str, Column] = {c.name: c for c in IDC_SERIES.columns}
SERIES_INDICES: dict[str, Table] = {
    name: table for name, table in INDEX_TABLES.items() if name != "clinical_index"
}
"""The specialized indices keyed by series, whose columns are filter attributes."""
REFERENCE_COLUMNS = {
    "seg_index": "segmented_SeriesInstanceUID",
    "rtstruct_index": "referenced_SeriesInstanceUID",
    "ann_index": "referenced_SeriesInstanceUID",
}
"""The column naming the series a derived series segments or annotates."""
SUB_SERIES_INDICES = ("sm_instance_index", "ann_group_index")
"""Indices with several rows per series; a bare column name prefers a series-level one."""
INDEX_COLUMNS: dict[str, list[str]] = {}
for _index, _table in SERIES_INDICES.items():
    for _column in _table.columns:
        if _column.name != "SeriesInstanceUID":
            INDEX_COLUMNS.setdefault(_column.name, []).append(_index)

BODY_PART_NOTE = (
    "BodyPartExamined describes the source acquisition; for derived series (SEG, "
    "RTSTRUCT) it is not the segmented anatomy, which lives in seg_index "
    "(SegmentedPropertyType_CodeMeanings) and rtstruct_index (ROINames): call "
    "get_attribute_values on those and filter build_cohort with them."
)
INDEX_NOTE = (
    "A seg_index, rtstruct_index or ann_index criterion keeps the derived series and the "
    "series they segment or annotate; add Modality (e.g. CT, or SEG) to keep one side."
)
ANALYSIS_NOTE = (
    "Analysis-result series (segmentations, annotations) share the collection_id of the "
    "collection they analyze; add analysis_result_id: [null] to keep original data only."
)

MAX_VALUE_CHARS = 1000
FILTER_VALUE_SCHEMA: dict[str, Any] = {"type": ["array", "object", "string", "number", "null"]}
"""A list of values, one value or a ``{"min", "max"}`` range (validated by the core)."""


@dataclass(frozen=True)
class RangeFilter:
    """A numeric or ISO date range; either bound may be omitted (both are inclusive)."""

    min: float | str | None = None
    max: float | str | None = None

    def echo(self) -> dict[str, float | str]:
        return {k: v for k, v in (("min", self.min), ("max", self.max)) if v is not None}

    @property
    def is_date(self) -> bool:
        return isinstance(self.min, str) or isinstance(self.max, str)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_date(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    try:
        date.fromisoformat(value)
    except ValueError:
        return False
    return len(value) == 10


def _scalar(value: Any) -> Any:
    if value is None or _is_number(value) or isinstance(value, bool):
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
    given = [b for b in bounds if b is not None]
    if not given or not (all(map(_is_number, given)) or all(map(_is_date, given))):
        raise ValueError(
            "range bounds min and max must be numbers, or ISO dates (YYYY-MM-DD) for dates"
        )
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
            'Attribute -> list of values (ORed) or {"min", "max"}, e.g. {"Modality": ["CT"]}.'
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


@dataclass(frozen=True)
class Attribute:
    """A filterable column: of ``idc_series`` (``index`` None) or of a specialized index."""

    column: Column
    index: str | None = None

    @property
    def name(self) -> str:
        """The name filters echo: qualified for an index column (``seg_index.X``)."""
        return f"{self.index}.{self.column.name}" if self.index else self.column.name

    @property
    def table(self) -> Table:
        return SERIES_INDICES[self.index] if self.index else IDC_SERIES

    @property
    def is_list(self) -> bool:
        return self.column.type is ColumnType.STRING_LIST

    @property
    def is_date(self) -> bool:
        return self.column.type is ColumnType.STRING and self.column.name.endswith("Date")

    def values_sql(self) -> str:
        """One row per value of the attribute (list elements unnested), as ``v``, with
        the row's columns (so a selection's WHERE applies to it)."""
        name = quote_identifier(self.column.name)
        value = f"unnest({name})" if self.is_list else name
        return f"SELECT *, {value} AS v FROM {self.table.name}"


def _qualified(name: str, parameter: str) -> Attribute:
    index, _, column = name.partition(".")
    index = index.removeprefix("idc_")
    if index not in SERIES_INDICES:
        raise invalid(
            f"{parameter}: unknown index {index!r} in {name!r}; the specialized indices are "
            f"{', '.join(SERIES_INDICES)} (list_index_attributes has their columns).",
            suggestions=difflib.get_close_matches(index, list(SERIES_INDICES), n=3, cutoff=0.5),
        )
    names = [c.name for c in SERIES_INDICES[index].columns if c.name != "SeriesInstanceUID"]
    if column not in names:
        raise invalid(
            f"{parameter}: {index} has no attribute {column!r}; call list_index_attributes "
            f"with index {index!r}.",
            suggestions=[
                f"{index}.{c}" for c in difflib.get_close_matches(column, names, n=5, cutoff=0.5)
            ],
        )
    return Attribute(SERIES_INDICES[index].column(column), index)


def resolve_attribute(name: str, parameter: str = "filters") -> Attribute:
    """The attribute called ``name``, or an ``invalid_request`` that routes."""
    if name in COLUMNS:
        return Attribute(COLUMNS[name])
    if "." in name:
        return _qualified(name, parameter)
    if name in INDEX_COLUMNS:
        indices = INDEX_COLUMNS[name]
        series_level = [i for i in indices if i not in SUB_SERIES_INDICES]
        if len(series_level) == 1:
            indices = series_level
        if len(indices) == 1:
            return Attribute(SERIES_INDICES[indices[0]].column(name), indices[0])
        options = [f"{index}.{name}" for index in indices]
        raise invalid(
            f"{parameter}: {name!r} is a column of several indices; name one of "
            f"{', '.join(options)}.",
            suggestions=options,
        )
    known = [*COLUMNS, *INDEX_COLUMNS]
    by_case = [c for c in known if c.lower() == name.lower()]
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
    suggestions = difflib.get_close_matches(name, known, n=5, cutoff=0.5)
    raise invalid(
        f"{parameter}: unknown attribute {name!r}; call list_attributes and "
        "list_index_attributes for the filterable attributes, and list_tables when a "
        "property is not among them.",
        suggestions=suggestions,
    )


def require_loaded(release: Release, attribute: Attribute) -> None:
    """Refuse an attribute of an index this release could not fetch."""
    if attribute.index is None:
        return
    details = release.manifest["sources"]["idc"].get("details") or {}
    if attribute.index in (details.get("missing") or {}):
        raise not_found(
            f"{attribute.index} is not in this release (its build could not fetch it), so "
            f"{attribute.name} cannot be queried.",
            reason="not_in_release",
            remedy="rebuild with network access or with the index in the --upstream mirror",
        )


def _values(attribute: Attribute, raw: list[Any]) -> list[Any]:
    """The values of a list filter, converted to the column's kind and deduplicated."""
    column = attribute.column
    if not raw:
        raise invalid(f"filters: {attribute.name} needs at least one value.")
    if column.type is ColumnType.JSON:
        raise invalid(
            f"filters: {attribute.name} holds lists of numbers and cannot be filtered; "
            "use run_sql for it."
        )
    converted: list[Any] = []
    for value in raw:
        if value is None:
            item: Any = None
        elif isinstance(value, bool) and column.type is not ColumnType.BOOL:
            raise invalid(
                f"filters: {attribute.name} is not a true/false attribute; {value!r} matches "
                "nothing."
            )
        elif is_numeric(column):
            item = _number(attribute, value)
        elif column.type is ColumnType.BOOL:
            item = _boolean(attribute, value)
        else:
            item = str(value)
        if item not in converted:
            converted.append(item)
    return converted


def _number(attribute: Attribute, value: Any) -> int | float:
    """A numeric filter value; numeric strings such as ``"25"`` are accepted."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value
    for kind in (int, float):
        try:
            return kind(value)
        except (TypeError, ValueError):
            continue
    raise invalid(f"filters: {attribute.name} is numeric; {value!r} is not a number.")


def _boolean(attribute: Attribute, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if str(value).lower() in ("true", "false"):
        return str(value).lower() == "true"
    raise invalid(f"filters: {attribute.name} is true or false; {value!r} is neither.")


def _sql_list_type(column: Column) -> str:
    if is_numeric(column):
        return "DOUBLE[]"
    return "BOOLEAN[]" if column.type is ColumnType.BOOL else "VARCHAR[]"


def _list_condition(attribute: Attribute, values: list[Any], params: list[Any]) -> str:
    name = quote_identifier(attribute.column.name)
    present = [v for v in values if v is not None]
    parts = []
    if present:
        cast = _sql_list_type(attribute.column)
        if attribute.is_list:
            parts.append(f"list_has_any({name}, ?::VARCHAR[])")
        else:
            parts.append(f"{name} IN (SELECT unnest(?::{cast}))")
        params.append(present)
    if None in values:
        parts.append(
            f"({name} IS NULL OR len({name}) = 0)" if attribute.is_list else f"{name} IS NULL"
        )
    return "(" + " OR ".join(parts) + ")"


def _range_condition(attribute: Attribute, bounds: RangeFilter, params: list[Any]) -> str:
    name = quote_identifier(attribute.column.name)
    if bounds.is_date:
        if not attribute.is_date:
            raise invalid(
                f"filters: {attribute.name} is not a date; a date range (YYYY-MM-DD) applies "
                "to StudyDate and SeriesDate."
            )
        value, cast = f"TRY_CAST({name} AS DATE)", "::DATE"
    elif is_numeric(attribute.column):
        value, cast = name, ""
    else:
        kind = "a date, so its range bounds are YYYY-MM-DD" if attribute.is_date else "text"
        raise invalid(
            f"filters: {attribute.name} is {kind}"
            + ("." if attribute.is_date else ", so it takes a list of values, not a range.")
        )
    parts = []
    for operator, bound in ((">=", bounds.min), ("<=", bounds.max)):
        if bound is not None:
            parts.append(f"{value} {operator} ?{cast}")
            params.append(bound if bounds.is_date else float(bound))
    return "(" + " AND ".join(parts) + ")"


@lru_cache(maxsize=256)
def _present_values(release: Release, attribute: Attribute, values: tuple[Any, ...]) -> set:
    """Which of ``values`` the attribute holds (remembered: pages of one selection ask
    again and again)."""
    cast = _sql_list_type(attribute.column)
    rows = release.query(
        f"SELECT DISTINCT v FROM ({attribute.values_sql()}) WHERE v IN (SELECT unnest(?::{cast}))",
        [list(values)],
    )
    return {row[0] for row in rows}


def _unmatched_warnings(release: Release, attribute: Attribute, values: list[Any]) -> list[str]:
    """Warnings for values that match no series at all, naming case variants that do."""
    present = [v for v in values if v is not None]
    if not present:
        return []
    cast = _sql_list_type(attribute.column)
    found = _present_values(release, attribute, tuple(present))
    missing = [v for v in present if v not in found]
    if not missing:
        return []
    variants: dict[str, list[str]] = {}
    if cast == "VARCHAR[]":
        rows = release.query(
            f"SELECT DISTINCT v FROM ({attribute.values_sql()}) "
            "WHERE lower(v) IN (SELECT lower(unnest(?::VARCHAR[]))) ORDER BY 1",
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
                f"{attribute.name} value {value!r} matches no series because values are "
                f"case-sensitive; use {options}."
            )
        else:
            warnings.append(
                f"{attribute.name} value {value!r} matches no series; call "
                f"get_attribute_values for {attribute.name}'s values."
            )
    return warnings


def _series_condition(attribute: Attribute, inner: str, inner_params: list[Any]) -> tuple:
    """The condition on idc_series for a condition on the attribute's own table."""
    if attribute.index is None:
        return inner, inner_params
    table = attribute.table.name
    keys = f"SELECT SeriesInstanceUID FROM {table} WHERE {inner}"
    params = list(inner_params)
    reference = REFERENCE_COLUMNS.get(attribute.index)
    if reference:
        keys += f" UNION SELECT {reference} FROM {table} WHERE {inner}"
        params += inner_params
    return f"SeriesInstanceUID IN ({keys})", params


def compile_filters(release: Release, filters: dict[str, Any] | None) -> Selection:
    """Validate ``filters`` against the registry and compile them to bound SQL."""
    selection = Selection()
    conditions: list[str] = []
    for name, raw in (filters or {}).items():
        attribute = resolve_attribute(name)
        require_loaded(release, attribute)
        inner_params: list[Any] = []
        if isinstance(raw, RangeFilter):
            inner = _range_condition(attribute, raw, inner_params)
            selection.applied[attribute.name] = raw.echo()
        else:
            values = _values(attribute, raw)
            inner = _list_condition(attribute, values, inner_params)
            selection.applied[attribute.name] = values
            selection.warnings += _unmatched_warnings(release, attribute, values)
        condition, params = _series_condition(attribute, inner, inner_params)
        conditions.append(condition)
        selection.params += params
        if attribute.index in REFERENCE_COLUMNS and INDEX_NOTE not in selection.notes:
            selection.notes.append(INDEX_NOTE)
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
