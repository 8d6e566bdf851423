"""UK Biobank Showcase tools: ``search_ukb_fields`` and ``get_ukb_field``.

UK Biobank has tools of its own; it is never represented as a dbGaP study.

Ranking (``search_ukb_fields``) runs over the ``field`` documents of the ``ukb``
source only, through :func:`metabundle.search.ranking.pipeline.rank` with the
``ukb_fields`` policy of :mod:`metabundle.search.ranking.policies` (weights, exact id
and alias boosts, Showcase priors); ``explain=true`` adds its score formula to the
``retrieval`` block. Aliases are the column names of the extract formats (``f.21001.0.0``,
``21001-0.0``, ``p21001_i0``, ``f21001``) and the field's title in the retired data
dictionary; case and spacing are ignored.

Only Showcase URLs (``https://biobank.ndph.ox.ac.uk/ukb/``) are emitted.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

import numpy as np
from pydantic import Field, StringConstraints

from metabundle.schemas.ukb_aliases import FORMS_BY_KIND, parse_alias
from metabundle.search.errors import invalid, not_found
from metabundle.search.jsonsafe import without_nulls
from metabundle.search.params import Explain, Method, Params, Query, clamp
from metabundle.search.ranking.pipeline import rank
from metabundle.search.ranking.policies import UKB_FIELDS
from metabundle.search.registry import tool
from metabundle.search.release import Release
from metabundle.search.retrieval import Hit, documents, mask_from_sql, normalize_identifier
from metabundle.search.services.omop.crosswalk import linked_concepts

GROUP = "ukb"
SHOWCASE = "https://biobank.ndph.ox.ac.uk/ukb/"
FIELD_DOCS = "source = 'ukb' AND kind = 'field'"
SEARCH_NOTES_CHARS = 160
DEFAULT_VALUES = 50
MAX_VALUES = 200
MAX_TOP_LEVEL = 30
ALIAS_EXAMPLES = 8
INSTANCE_COLUMNS = 3
SUGGESTIONS = 5
MAX_FIELD_ID = 2**31 - 1
"""The largest id ``ukb_field.field_id`` (INTEGER) can hold; no field has a larger one."""

# Showcase links in notes: ~F123~ links a field (the plain text is made at build time).
MARKUP = re.compile(r"~([A-Za-z])([^~]*)~")

# -- helpers --------------------------------------------------------------------------


def showcase_url(url: str | None) -> str | None:
    """``url`` when it is a Showcase page, else None (only Showcase URLs are emitted)."""
    return url if url and url.startswith(SHOWCASE) else None


def field_url(field_id: int) -> str:
    return f"{SHOWCASE}field.cgi?id={field_id}"


def truncate(text: str | None, limit: int) -> tuple[str | None, bool]:
    if text is None or len(text) <= limit:
        return text, False
    return text[: limit - 1] + "…", True


def coded(code: int | None, label: str | None) -> dict[str, Any]:
    return {"code": code, "label": label}


def field_mask(release: Release) -> np.ndarray:
    """The UK Biobank field documents (applied before any candidate limit)."""
    return mask_from_sql(release, FIELD_DOCS, [])


def fields_by_id(release: Release, field_ids: list[int]) -> dict[int, dict[str, Any]]:
    """``ukb_field`` rows of ``field_ids`` with their main category's Showcase page (an id
    outside the INTEGER range names no field and never reaches SQL)."""
    field_ids = [f for f in field_ids if 0 <= f <= MAX_FIELD_ID]
    if not field_ids:
        return {}
    rows = release.query_dicts(
        "SELECT f.*, c.canonical_url AS category_url FROM ukb_field AS f "
        "LEFT JOIN ukb_category AS c ON c.category_id = f.main_category "
        "WHERE f.field_id IN (SELECT unnest(?::INTEGER[]))",
        [field_ids],
    )
    return {int(row["field_id"]): row for row in rows}


def matched_aliases(release: Release, query: str, field_ids: list[int]) -> dict[int, dict]:
    """The stored alias of each field that equals ``query`` (case and spacing ignored)."""
    if not field_ids:
        return {}
    rows = release.query(
        "SELECT field_id, alias, alias_kind FROM ukb_field_alias "
        "WHERE field_id IN (SELECT unnest(?::INTEGER[])) "
        "AND lower(regexp_replace(trim(alias), '\\s+', ' ', 'g')) = ? "
        "ORDER BY field_id, alias_kind = 'field_id' DESC, alias",
        [field_ids, normalize_identifier(query)],
    )
    found: dict[int, dict[str, Any]] = {}
    for field_id, alias, kind in rows:
        found.setdefault(int(field_id), {"alias": alias, "alias_kind": kind})
    return found


# -- search ---------------------------------------------------------------------------


class SearchUkbFieldsParams(Params):
    query: Query
    method: Method = "hybrid"
    limit: Annotated[int, clamp(1, 20), Field(description="1..20.")] = 10
    explain: Explain = False


def hit_scores(hit: Hit) -> dict[str, Any]:
    """The hit's score breakdown as UK Biobank answers show it: ``keyword`` is BM25 over
    the query's best BM25 among fields (in hybrid: over its ideal BM25, see
    :class:`~metabundle.search.ranking.policies.Fusion`), ``keyword_bm25`` the BM25
    itself, ``title_match`` the hybrid's title signal."""
    signals = hit.breakdown()
    scores = {
        "score": signals["score"],
        "keyword": signals["keyword_scaled"],
        "keyword_bm25": signals["keyword"],
        "semantic_scaled": signals["semantic_scaled"],
        "semantic": signals["semantic"],
        "title_match": signals["title_match"],
        "boost": signals["boost"],
        "boost_reason": signals["boost_reason"],
        "exact_match": signals["exact_match"],
    }
    if hit.prior:
        scores["prior"] = hit.prior
    return scores


def search_item(row: dict[str, Any], scores: dict[str, Any]) -> dict[str, Any]:
    """One search hit; null fields (a field without a coding has no encoding fields)
    are left out."""
    notes, cut = truncate(row["notes_text"], SEARCH_NOTES_CHARS)
    encoded = bool(row["encoding_id"])
    return without_nulls(
        {
            "source": "ukb",
            "kind": "field",
            "id": int(row["field_id"]),
            "title": row["title"],
            "notes": notes,
            "notes_truncated": cut,
            "units": row["units"],
            "value_type": row["value_type_label"],
            "item_type": row["item_type_label"],
            "participants": row["num_participants"],
            "category_id": row["main_category"],
            "category_path": row["category_path"] or row["category_title"],
            "encoding_id": row["encoding_id"] if encoded else None,
            "encoding_title": row["encoding_title"] if encoded else None,
            "canonical_url": showcase_url(row["canonical_url"]),
            "category_url": showcase_url(row["category_url"]),
            "encoding_url": showcase_url(row["encoding_url"]) if encoded else None,
            "scores": without_nulls(scores),
        }
    )


@tool(
    "search_ukb_fields",
    "Call for any UK Biobank question: finds Showcase fields; then get_ukb_field.",
    SearchUkbFieldsParams,
    GROUP,
    guide=(
        "Find UK Biobank Showcase fields for a concept, measurement or question, or "
        "resolve a field id or column name (21001, p21001_i0). Call it for any UK Biobank"
        " question; then get_ukb_field. "
        "Exact ids and aliases rank first. UK Biobank is not a dbGaP study: do not use the dbGaP "
        "tools for it. Cite canonical_url and keep field ids exact. For coding values (an ICD-10 "
        "code, a medication) use search_all with sources=['ukb'] and kinds=['encoding_value']."
        " Field ids and aliases are boosted in every method."
    ),
)
def search_ukb_fields(release: Release, params: SearchUkbFieldsParams) -> dict[str, Any]:
    hits, retrieval = rank(
        release,
        params.query,
        policy=UKB_FIELDS,
        method=params.method,
        mask=field_mask(release),
        limit=params.limit,
        explain=params.explain,
    )
    docs = documents(release, [h.docno for h in hits])
    ids = {h.docno: int(docs[h.docno]["entity_id"]) for h in hits}
    rows = fields_by_id(release, list(ids.values()))
    aliases = matched_aliases(release, params.query, [ids[h.docno] for h in hits if h.exact])
    results = []
    for position, hit in enumerate(hits, start=1):
        field_id = ids[hit.docno]
        item = {"rank": position, **search_item(rows[field_id], hit_scores(hit))}
        if hit.exact:
            item["matched_alias"] = aliases.get(field_id)
        results.append(item)
    return {"query": params.query, "retrieval": retrieval.to_json(), "results": results}


# -- get ------------------------------------------------------------------------------


class GetUkbFieldParams(Params):
    field_id: Annotated[
        int | Annotated[str, StringConstraints(max_length=200)],
        Field(
            description="A field id (21001) or column name (p21001_i0).",
        ),
    ]
    include_instance_summaries: bool = False
    value_limit: Annotated[
        int,
        clamp(0, MAX_VALUES),
        Field(description=f"0..{MAX_VALUES}."),
    ] = DEFAULT_VALUES


def stored_alias(release: Release, text: str) -> dict[str, Any] | None:
    rows = release.query_dicts(
        "SELECT field_id, alias, alias_kind FROM ukb_field_alias "
        "WHERE lower(regexp_replace(trim(alias), '\\s+', ' ', 'g')) = ? "
        "ORDER BY field_id LIMIT 1",
        [normalize_identifier(text)],
    )
    return rows[0] if rows else None


def resolve_field_id(release: Release, value: int | str) -> tuple[int, dict[str, Any] | None]:
    """The field id ``value`` names and, for an alias, how it was resolved."""
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 0:
            raise invalid("get_ukb_field: parameter 'field_id' must not be negative.")
        return value, None
    text = normalize_identifier(str(value))
    if not text:
        raise invalid("get_ukb_field: parameter 'field_id' must not be blank.")
    parsed = parse_alias(text)
    if parsed and parsed[1] == "field_id":
        return parsed[0], None
    stored = stored_alias(release, text)
    if stored is not None:
        field_id = int(stored["field_id"])
        kind = stored["alias_kind"]
        instance, array = parsed[2:] if parsed and parsed[0] == field_id else (None, None)
    elif parsed is not None:
        field_id, kind, instance, array = parsed
    else:
        raise invalid(
            "get_ukb_field: parameter 'field_id' must be a numeric Showcase field id or a "
            "column-name alias such as p21001_i0; to find a field by name call "
            "search_ukb_fields."
        )
    resolution = {
        "input": str(value),
        "alias_kind": kind,
        "stored_alias": stored is not None,
        "instance": instance,
        "array": array,
    }
    return field_id, resolution


def nearest_fields(release: Release, field_id: int) -> list[dict[str, Any]]:
    """The existing fields with the closest ids, as not_found suggestions."""
    rows = release.query(
        "SELECT field_id, title FROM ukb_field ORDER BY abs(field_id - ?), field_id LIMIT ?",
        [min(field_id, MAX_FIELD_ID), SUGGESTIONS],
    )
    return [{"id": int(f), "title": t, "canonical_url": field_url(int(f))} for f, t in rows]


def properties(row: dict[str, Any]) -> dict[str, Any]:
    """Property codes as published, each with its published meaning (null when none)."""
    labelled = ("value_type", "base_type", "item_type", "strata", "stability", "sexed")
    result = {name: coded(row[name], row[f"{name}_label"]) for name in labelled}
    result["instanced"] = coded(row["instanced"], row["instanced_label"])
    result["arrayed"] = coded(row["arrayed"], row["arrayed_label"])
    for name in ("availability", "private", "cost_do", "cost_on", "cost_sc"):
        result[name] = coded(row[name], None)
    return result


def field_aliases(release: Release, field_id: int) -> list[dict[str, Any]]:
    return release.query_dicts(
        "SELECT alias, alias_kind FROM ukb_field_alias WHERE field_id = ? "
        "ORDER BY alias_kind, length(alias), alias",
        [field_id],
    )


def alias_summary(aliases: list[dict[str, Any]]) -> dict[str, Any]:
    """Aliases grouped by kind: a count and the first few of each."""
    kinds: dict[str, list[str]] = {}
    for row in aliases:
        kinds.setdefault(row["alias_kind"], []).append(row["alias"])
    return {
        "total": len(aliases),
        "by_kind": {
            kind: {"count": len(names), "examples": names[:ALIAS_EXAMPLES]}
            for kind, names in sorted(kinds.items())
        },
    }


def instance_summaries(row: dict[str, Any], aliases: list[dict[str, Any]]) -> list[dict]:
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
            {
                "instance": index,
                "description": None,
                "participants": None,
                "column_count": max((len(v) for v in by_kind.values()), default=0),
                "columns": {kind: names[:INSTANCE_COLUMNS] for kind, names in by_kind.items()},
            }
        )
    return summaries


def instances_block(
    row: dict[str, Any], aliases: list[dict[str, Any]], include_summaries: bool
) -> dict[str, Any]:
    low, high = row["instance_min"], row["instance_max"]
    block: dict[str, Any] = {
        "instancing_id": row["instance_id"] or None,
        "instancing_url": showcase_url(row["instancing_url"]),
        "instanced": row["instanced_label"],
        "instance_min": low,
        "instance_max": high,
        "instance_count": row["instance_count"],
        "instance_ids": [] if low is None or high is None else list(range(low, high + 1)),
        "array_min": row["array_min"],
        "array_max": row["array_max"],
        "array_count": row["array_count"],
        "participants_all_instances": row["num_participants"],
        "item_count_all_instances": row["item_count"],
    }
    if not include_summaries:
        block["summaries"] = None
        block["summaries_status"] = "not_requested"
    elif low is None or high is None:
        block["summaries"] = None
        block["summaries_status"] = "no_instance_range"
    else:
        block["summaries"] = instance_summaries(row, aliases)
        block["summaries_status"] = "columns_only"
        block["summaries_note"] = (
            "Instance descriptions and per-instance participant counts are not in this "
            "release (the Showcase instancing tables are not mirrored); they are null. "
            "Column names come from ukb_field_alias; see instancing_url."
        )
    return block


def coding_value(row: dict[str, Any]) -> dict[str, Any]:
    value: dict[str, Any] = {"value": row["value"], "meaning": row["meaning"]}
    if row["node_id"] is not None:
        value["node_id"] = row["node_id"]
        value["selectable"] = row["selectable"]
        value["depth"] = row["depth"]
        value["parent"] = (
            None
            if row["parent_id"] is None
            else {
                "node_id": row["parent_id"],
                "value": row["parent_value"],
                "meaning": row["parent_meaning"],
            }
        )
    return value


VALUES_SQL = """
SELECT v.value, v.meaning, v.node_id, v.parent_id, v.selectable, v.depth,
       p.value AS parent_value, p.meaning AS parent_meaning
FROM ukb_encoding_value AS v
LEFT JOIN ukb_encoding_value AS p
       ON p.encoding_id = v.encoding_id AND p.node_id = v.parent_id
WHERE v.encoding_id = ? {where}
ORDER BY {order}
LIMIT ?
"""


def coding_values(
    release: Release, encoding_id: int, limit: int, *, top_level: bool = False
) -> list[dict[str, Any]]:
    """The first ``limit`` values in published order, or the top-level nodes of a tree
    coding in node order (chapters I, II, ... of ICD-10)."""
    if top_level:
        sql = VALUES_SQL.format(where="AND v.depth = 1", order="v.node_id, v.value_order")
    else:
        sql = VALUES_SQL.format(where="", order="v.value_order")
    return [coding_value(r) for r in release.query_dicts(sql, [encoding_id, limit])]


def encoding_block(release: Release, encoding_id: int, limit: int) -> dict[str, Any] | None:
    """The field's encoding with its first values; null when the field is not encoded."""
    if not encoding_id:
        return None
    rows = release.query_dicts("SELECT * FROM ukb_encoding WHERE encoding_id = ?", [encoding_id])
    if not rows:
        return {"id": encoding_id, "status": "encoding_not_in_release", "values": None}
    enc = rows[0]
    tree = enc["structure"] == 2
    block: dict[str, Any] = {
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
        block.update(
            values=None,
            values_total=None,
            values_status="not_in_release",
            values_note="This release holds no values for this coding; see url.",
        )
        return block
    values = coding_values(release, encoding_id, limit)
    block.update(
        values_status="loaded",
        values_total=enc["value_count"],
        values=values,
        values_truncated=len(values) < enc["value_count"],
        values_more="Query ukb_encoding_value with run_sql for the rest."
        if len(values) < enc["value_count"]
        else None,
    )
    if tree:
        roots = release.query(
            "SELECT count(*) FROM ukb_encoding_value WHERE encoding_id = ? AND depth = 1",
            [encoding_id],
        )[0][0]
        block["top_level_total"] = int(roots)
        block["top_level"] = coding_values(release, encoding_id, MAX_TOP_LEVEL, top_level=True)
    return block


CATEGORY_PATH_SQL = """
WITH RECURSIVE up(category_id, title, parent_id, canonical_url, step) AS (
    SELECT category_id, title, parent_id, canonical_url, 0 FROM ukb_category
    WHERE category_id = ?
    UNION ALL
    SELECT c.category_id, c.title, c.parent_id, c.canonical_url, up.step + 1
    FROM ukb_category AS c JOIN up ON c.category_id = up.parent_id
    WHERE up.step < 20
)
SELECT category_id, title, canonical_url FROM up ORDER BY step DESC
"""


def category_block(release: Release, row: dict[str, Any]) -> dict[str, Any] | None:
    """The main category and its ancestors, top first, each with its Showcase page."""
    if row["main_category"] is None:
        return None
    path = [
        {"id": int(c), "title": t, "url": showcase_url(u)}
        for c, t, u in release.query(CATEGORY_PATH_SQL, [row["main_category"]])
    ]
    return {
        "id": row["main_category"],
        "title": row["category_title"],
        "url": showcase_url(row["category_url"]),
        "path_text": row["category_path"],
        "path": path,
    }


def linked_fields(release: Release, notes: str | None) -> list[dict[str, Any]]:
    """Fields the notes link to (``~F123~``) that the release holds."""
    ids = sorted(
        {
            int(m.group(2))
            for m in MARKUP.finditer(notes or "")
            if m.group(1) == "F" and m.group(2).isdigit()
        }
    )
    rows = fields_by_id(release, ids)
    return [
        {"id": f, "title": rows[f]["title"], "canonical_url": field_url(f)}
        for f in ids
        if f in rows
    ]


@tool(
    "get_ukb_field",
    "Call after search_ukb_fields for one UK Biobank field's details; cite canonical_url.",
    GetUkbFieldParams,
    GROUP,
    guide=(
        "Get one UK Biobank field by id or column name: properties, instances, coding "
        "with its first values, category path and aliases. Call it after "
        "search_ukb_fields; cite canonical_url. "
        "Tree codings such as ICD-10 show each value's parent. For all values of a large coding "
        "use run_sql on ukb_encoding_value."
        " field_id also takes the column-name aliases f.21001.0.0, 21001-0.0, f21001 and "
        "p21001; include_instance_summaries adds one entry per instance; value_limit caps"
        " the coding values listed (the total is always given)."
    ),
)
def get_ukb_field(release: Release, params: GetUkbFieldParams) -> dict[str, Any]:
    field_id, resolution = resolve_field_id(release, params.field_id)
    row = fields_by_id(release, [field_id]).get(field_id)
    if row is None:
        raise not_found(
            f"There is no UK Biobank field {field_id} in this release; call "
            "search_ukb_fields to find one.",
            suggestions=nearest_fields(release, field_id),
        )
    aliases = field_aliases(release, field_id)
    field = {
        "source": "ukb",
        "kind": "field",
        "id": field_id,
        "title": row["title"],
        "legacy_title": row["legacy_title"],
        "notes": row["notes_text"],
        "units": row["units"],
        "canonical_url": showcase_url(row["canonical_url"]),
        "properties": properties(row),
        "participants": row["num_participants"],
        "item_count": row["item_count"],
        "debut": None if row["debut"] is None else row["debut"].isoformat(),
        "version": None if row["version"] is None else row["version"].isoformat(),
        "linked_fields": linked_fields(release, row["notes"]),
    }
    return {
        "field": field,
        "resolved_from": resolution,
        "instances": instances_block(row, aliases, params.include_instance_summaries),
        "encoding": encoding_block(release, row["encoding_id"], params.value_limit),
        "category": category_block(release, row),
        "aliases": alias_summary(aliases),
        "linked_concepts": linked_concepts(release, "ukb", str(field_id)),
    }
