"""UK Biobank Showcase tools: ``search_ukb_fields`` and ``get_ukb_field``.

UK Biobank has tools of its own; it is never represented as a dbGaP study.

Ranking (``search_ukb_fields``) runs over the ``field`` documents of the ``ukb``
source only, through :func:`metabundle.search.ranking.pipeline.rank` with the
``ukb_fields`` policy of :mod:`metabundle.search.ranking.policies` (weights, exact id
and alias boosts, Showcase priors); ``explain=true`` adds its score formula to the
``retrieval`` block. Aliases are the column names of the extract formats (``f.21001.0.0``,
``21001-0.0``, ``p21001_i0``, ``f21001``) and the field's title in the retired data
dictionary; case and spacing are ignored.

Only Showcase URLs (:mod:`.showcase`) are emitted; the blocks of a field's answer are
built in :mod:`.field`, the SQL is in :mod:`.queries`.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, StringConstraints

from metabundle.schemas.ukb_aliases import parse_alias
from metabundle.search.errors import invalid, not_found
from metabundle.search.jsonsafe import without_nulls
from metabundle.search.params import Explain, Method, Params, Query, clamp
from metabundle.search.payload import Retrieval
from metabundle.search.ranking.pipeline import rank
from metabundle.search.ranking.policies import UKB_FIELDS
from metabundle.search.registry import tool
from metabundle.search.release import Release
from metabundle.search.retrieval import Hit, documents, normalize_identifier
from metabundle.search.services.omop.crosswalk import linked_concepts
from metabundle.search.services.ukb import queries
from metabundle.search.services.ukb.field import (
    alias_summary,
    category_block,
    encoding_block,
    instances_block,
    linked_fields,
    properties,
)
from metabundle.search.services.ukb.models import (
    AliasResolution,
    FieldAnswer,
    FieldRecord,
    FieldResult,
    FieldScores,
    FieldSearchAnswer,
    MatchedAlias,
)
from metabundle.search.services.ukb.showcase import field_url, showcase_url

GROUP = "ukb"
SEARCH_NOTES_CHARS = 160
DEFAULT_VALUES = 50
MAX_VALUES = 200
SUGGESTIONS = 5

# -- search ---------------------------------------------------------------------------


class SearchUkbFieldsParams(Params):
    query: Query
    method: Method = "hybrid"
    limit: Annotated[int, clamp(1, 20), Field(description="1..20.")] = 10
    explain: Explain = False


def truncate(text: str | None, limit: int) -> tuple[str | None, bool]:
    if text is None or len(text) <= limit:
        return text, False
    return text[: limit - 1] + "…", True


def hit_scores(hit: Hit, explain: bool) -> FieldScores:
    """The hit's score breakdown as UK Biobank answers show it: ``keyword`` is BM25 over
    the query's best BM25 among fields (in hybrid: over its ideal BM25, see
    :class:`~metabundle.search.ranking.policies.Fusion`), ``keyword_bm25`` the BM25
    itself, ``title_match`` the hybrid's title signal, ``boost`` only when an exact id
    or alias added one; with ``explain``, ``prior_bonus`` is what the participants
    prior added."""
    signals = hit.breakdown()
    scores = {
        "score": signals["score"],
        "keyword": signals["keyword_scaled"],
        "keyword_bm25": signals["keyword"],
        "semantic_scaled": signals["semantic_scaled"],
        "semantic": signals["semantic"],
        "title_match": signals["title_match"],
        "boost": signals["boost"] or None,
        "boost_reason": signals["boost_reason"],
        "exact_match": signals["exact_match"],
        "prior_bonus": signals["prior_bonus"] if explain else None,
    }
    if hit.prior:
        scores["prior"] = hit.prior
    return FieldScores.model_validate(without_nulls(scores))


def search_item(position: int, row: dict[str, Any], scores: FieldScores) -> FieldResult:
    """The hit at rank ``position``; null fields (a field without a coding has no
    encoding fields) are left out."""
    notes, cut = truncate(row["notes_text"], SEARCH_NOTES_CHARS)
    encoded = bool(row["encoding_id"])
    return FieldResult.model_validate(
        without_nulls(
            {
                "rank": position,
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
                "scores": scores,
            }
        )
    )


@tool(
    "search_ukb_fields",
    "Call for any UK Biobank question: finds Showcase fields; then get_ukb_field.",
    SearchUkbFieldsParams,
    GROUP,
    response=FieldSearchAnswer,
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
def search_ukb_fields(release: Release, params: SearchUkbFieldsParams) -> FieldSearchAnswer:
    hits, retrieval = rank(
        release,
        params.query,
        policy=UKB_FIELDS,
        method=params.method,
        mask=queries.field_mask(release),
        limit=params.limit,
        explain=params.explain,
    )
    docs = documents(release, [h.docno for h in hits])
    ids = {h.docno: int(docs[h.docno]["entity_id"]) for h in hits}
    rows = queries.fields_by_id(release, list(ids.values()))
    exact_ids = [ids[h.docno] for h in hits if h.exact]
    aliases = queries.matched_aliases(release, params.query, exact_ids)
    results = []
    for position, hit in enumerate(hits, start=1):
        field_id = ids[hit.docno]
        item = search_item(position, rows[field_id], hit_scores(hit, params.explain))
        if hit.exact:
            alias = aliases.get(field_id)
            item.matched_alias = None if alias is None else MatchedAlias(**alias)
        results.append(item)
    return FieldSearchAnswer(
        query=params.query,
        retrieval=Retrieval.model_validate(retrieval.to_json()),
        results=results,
    )


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


def resolve_field_id(release: Release, value: int | str) -> tuple[int, AliasResolution | None]:
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
    stored = queries.stored_alias(release, text)
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
    resolution = AliasResolution(
        input=str(value),
        alias_kind=kind,
        stored_alias=stored is not None,
        instance=instance,
        array=array,
    )
    return field_id, resolution


def nearest_fields(release: Release, field_id: int) -> list[dict[str, Any]]:
    """The existing fields with the closest ids, as not_found suggestions."""
    return [
        {"id": f, "title": t, "canonical_url": field_url(f)}
        for f, t in queries.nearest_fields(release, field_id, SUGGESTIONS)
    ]


@tool(
    "get_ukb_field",
    "Call after search_ukb_fields for one UK Biobank field's details; cite canonical_url.",
    GetUkbFieldParams,
    GROUP,
    response=FieldAnswer,
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
def get_ukb_field(release: Release, params: GetUkbFieldParams) -> FieldAnswer:
    field_id, resolution = resolve_field_id(release, params.field_id)
    row = queries.fields_by_id(release, [field_id]).get(field_id)
    if row is None:
        raise not_found(
            f"There is no UK Biobank field {field_id} in this release; call "
            "search_ukb_fields to find one.",
            suggestions=nearest_fields(release, field_id),
        )
    aliases = queries.field_aliases(release, field_id)
    field = FieldRecord(
        source="ukb",
        kind="field",
        id=field_id,
        title=row["title"],
        legacy_title=row["legacy_title"],
        notes=row["notes_text"],
        units=row["units"],
        canonical_url=showcase_url(row["canonical_url"]),
        properties=properties(row),
        participants=row["num_participants"],
        item_count=row["item_count"],
        debut=None if row["debut"] is None else row["debut"].isoformat(),
        version=None if row["version"] is None else row["version"].isoformat(),
        linked_fields=linked_fields(release, row["notes"]),
    )
    return FieldAnswer(
        field=field,
        resolved_from=resolution,
        instances=instances_block(row, aliases, params.include_instance_summaries),
        encoding=encoding_block(release, row["encoding_id"], params.value_limit),
        category=category_block(release, row),
        aliases=alias_summary(aliases),
        linked_concepts=linked_concepts(release, "ukb", str(field_id)),
    )
