"""The blocks of a ``get_ukb_field`` answer: the field's properties, instances, coding
with its first values, category path, aliases and the fields its notes link to."""

from __future__ import annotations

import re
from typing import Any

from metabundle.schemas.ukb_aliases import FORMS_BY_KIND
from metabundle.search.release import Release
from metabundle.search.services.ukb import queries
from metabundle.search.services.ukb.models import (
    AliasKind,
    AliasSummary,
    CategoryStep,
    CodedProperty,
    CodingParent,
    CodingValue,
    EncodingNotInRelease,
    EncodingWithoutValues,
    EncodingWithValues,
    FieldCategory,
    FieldInstances,
    FieldLink,
    FieldProperties,
    InstanceSummary,
)
from metabundle.search.services.ukb.showcase import field_url, showcase_url

MAX_TOP_LEVEL = 30
ALIAS_EXAMPLES = 8
INSTANCE_COLUMNS = 3

# Showcase links in notes: ~F123~ links a field (the plain text is made at build time).
MARKUP = re.compile(r"~([A-Za-z])([^~]*)~")


def properties(row: dict[str, Any]) -> FieldProperties:
    """Property codes as published, each with its published meaning (null when none)."""
    labelled = ("value_type", "base_type", "item_type", "strata", "stability", "sexed")
    result = {name: CodedProperty(code=row[name], label=row[f"{name}_label"]) for name in labelled}
    result["instanced"] = CodedProperty(code=row["instanced"], label=row["instanced_label"])
    result["arrayed"] = CodedProperty(code=row["arrayed"], label=row["arrayed_label"])
    for name in ("availability", "private", "cost_do", "cost_on", "cost_sc"):
        result[name] = CodedProperty(code=row[name], label=None)
    return FieldProperties(**result)


def alias_summary(aliases: list[dict[str, Any]]) -> AliasSummary:
    """Aliases grouped by kind: a count and the first few of each."""
    kinds: dict[str, list[str]] = {}
    for row in aliases:
        kinds.setdefault(row["alias_kind"], []).append(row["alias"])
    return AliasSummary(
        total=len(aliases),
        by_kind={
            kind: AliasKind(count=len(names), examples=names[:ALIAS_EXAMPLES])
            for kind, names in sorted(kinds.items())
        },
    )


def instance_summaries(row: dict[str, Any], aliases: list[dict[str, Any]]) -> list[InstanceSummary]:
    """One entry per instance index: its extract column names (from ukb_field_alias);
    descriptions and per-instance counts are not in the release (null)."""
    columns: dict[int, dict[str, list[str]]] = {}
    for alias in aliases:
        form = FORMS_BY_KIND.get(alias["alias_kind"])
        match = form.pattern.match(alias["alias"]) if form and form.per_cell else None
        if match and match["instance"] is not None:
            names = columns.setdefault(int(match["instance"]), {})
            names.setdefault(alias["alias_kind"], []).append(alias["alias"])
    summaries = []
    for index in range(row["instance_min"], row["instance_max"] + 1):
        by_kind = columns.get(index, {})
        summaries.append(
            InstanceSummary(
                instance=index,
                description=None,
                participants=None,
                column_count=max((len(v) for v in by_kind.values()), default=0),
                columns={kind: names[:INSTANCE_COLUMNS] for kind, names in by_kind.items()},
            )
        )
    return summaries


def instances_block(
    row: dict[str, Any], aliases: list[dict[str, Any]], include_summaries: bool
) -> FieldInstances:
    low, high = row["instance_min"], row["instance_max"]
    block = FieldInstances(
        instancing_id=row["instance_id"] or None,
        instancing_url=showcase_url(row["instancing_url"]),
        instanced=row["instanced_label"],
        instance_min=low,
        instance_max=high,
        instance_count=row["instance_count"],
        instance_ids=[] if low is None or high is None else list(range(low, high + 1)),
        array_min=row["array_min"],
        array_max=row["array_max"],
        array_count=row["array_count"],
        participants_all_instances=row["num_participants"],
        item_count_all_instances=row["item_count"],
        summaries=None,
        summaries_status="not_requested",
    )
    if include_summaries and (low is None or high is None):
        block.summaries_status = "no_instance_range"
    elif include_summaries:
        block.summaries = instance_summaries(row, aliases)
        block.summaries_status = "columns_only"
        block.summaries_note = (
            "Instance descriptions and per-instance participant counts are not in this "
            "release (the Showcase instancing tables are not mirrored); they are null. "
            "Column names come from ukb_field_alias; see instancing_url."
        )
    return block


def coding_value(row: dict[str, Any]) -> CodingValue:
    value = CodingValue(value=row["value"], meaning=row["meaning"])
    if row["node_id"] is not None:
        value.node_id = row["node_id"]
        value.selectable = row["selectable"]
        value.depth = row["depth"]
        value.parent = (
            None
            if row["parent_id"] is None
            else CodingParent(
                node_id=row["parent_id"], value=row["parent_value"], meaning=row["parent_meaning"]
            )
        )
    return value


def coding_values(
    release: Release, encoding_id: int, limit: int, *, top_level: bool = False
) -> list[CodingValue]:
    """The first ``limit`` values in published order, or the top-level nodes of a tree
    coding in node order."""
    rows = queries.coding_value_rows(release, encoding_id, limit, top_level=top_level)
    return [coding_value(r) for r in rows]


def encoding_block(
    release: Release, encoding_id: int, limit: int
) -> EncodingWithValues | EncodingWithoutValues | EncodingNotInRelease | None:
    """The field's encoding with its first values; null when the field is not encoded."""
    if not encoding_id:
        return None
    enc = queries.encoding_row(release, encoding_id)
    if enc is None:
        return EncodingNotInRelease(id=encoding_id, status="encoding_not_in_release", values=None)
    tree = enc["structure"] == 2
    header = {
        "id": encoding_id,
        "title": enc["title"],
        "description": enc["description_text"],
        "structure": enc["structure_label"],
        "hierarchical": tree,
        "coded_as": enc["coded_as_label"],
        "url": showcase_url(enc["canonical_url"]),
        "published_value_count": enc["num_members"],
    }
    if not enc["values_loaded"]:
        return EncodingWithoutValues(
            **header,
            values=None,
            values_total=None,
            values_status="not_in_release",
            values_note="This release holds no values for this coding; see url.",
        )
    values = coding_values(release, encoding_id, limit)
    truncated = len(values) < enc["value_count"]
    block = EncodingWithValues(
        **header,
        values_status="loaded",
        values_total=enc["value_count"],
        values=values,
        values_truncated=truncated,
        values_more="Query ukb_encoding_value with run_sql for the rest." if truncated else None,
    )
    if tree:
        block.top_level_total = queries.top_level_count(release, encoding_id)
        block.top_level = coding_values(release, encoding_id, MAX_TOP_LEVEL, top_level=True)
    return block


def category_block(release: Release, row: dict[str, Any]) -> FieldCategory | None:
    """The main category and its ancestors, top first, each with its Showcase page."""
    if row["main_category"] is None:
        return None
    path = [
        CategoryStep(id=c, title=t, url=showcase_url(u))
        for c, t, u in queries.category_path(release, row["main_category"])
    ]
    return FieldCategory(
        id=row["main_category"],
        title=row["category_title"],
        url=showcase_url(row["category_url"]),
        path_text=row["category_path"],
        path=path,
    )


def linked_fields(release: Release, notes: str | None) -> list[FieldLink]:
    """Fields the notes link to (``~F123~``) that the release holds."""
    ids = sorted(
        {
            int(m.group(2))
            for m in MARKUP.finditer(notes or "")
            if m.group(1) == "F" and m.group(2).isdigit()
        }
    )
    rows = queries.fields_by_id(release, ids)
    return [
        FieldLink(id=f, title=rows[f]["title"], canonical_url=field_url(f))
        for f in ids
        if f in rows
    ]
