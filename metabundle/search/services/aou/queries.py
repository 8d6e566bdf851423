"""SQL over the release's All of Us tables: items, their identifiers, links and edges,
and the rows of ranked search documents."""

from __future__ import annotations

from typing import Any

from metabundle.search.release import Release

SOURCE = "aou"
LIST_CAP = 50
"""The most entries an item's list (identifiers, links, answers, ...) shows."""

ITEM_COLUMNS = (
    "result_id",
    "kind",
    "search_role",
    "is_variable",
    "variable_type",
    "title",
    "subtitle",
    "domain",
    "vocabulary",
    "concept_id",
    "concept_code",
    "ehr_role",
    "canonical_url",
)


def item_rows(release: Release, docnos: list[int]) -> dict[int, dict[str, Any]]:
    """The :data:`ITEM_COLUMNS` of the ``aou_item`` rows of ``docnos`` (search
    documents), keyed by docno."""
    if not docnos:
        return {}
    columns = ", ".join(f"i.{name}" for name in ITEM_COLUMNS)
    rows = release.query_dicts(
        f"SELECT d.docno, {columns} FROM search_doc d "
        f"JOIN aou_item i ON i.result_id = d.entity_id "
        f"WHERE d.source = ? AND d.docno IN (SELECT unnest(?::INTEGER[]))",
        [SOURCE, list(docnos)],
    )
    return {int(row.pop("docno")): row for row in rows}


def ehr_values(release: Release, column: str) -> list[str]:
    """The distinct values of ``column`` among EHR concepts, sorted."""
    return [
        row[0]
        for row in release.query(
            f"SELECT DISTINCT {column} FROM aou_item "
            f"WHERE variable_type = 'ehr' AND kind = 'ehr_concept' ORDER BY 1"
        )
    ]


KIND_ORDER = (
    "question",
    "ehr_concept",
    "physical_measurement",
    "survey_topic",
    "survey_module",
    "domain",
    "answer",
)
MATCHES_SQL = f"""
SELECT a.result_id, a.kind, a.title, any_value(i.identifier_kind) AS identifier_kind
FROM aou_item_identifier i JOIN aou_item a USING (result_id)
WHERE i.normalized = ?
GROUP BY a.result_id, a.kind, a.title
ORDER BY coalesce(list_position({list(KIND_ORDER)!r}, a.kind), 99), a.result_id
"""


def identifier_matches(release: Release, normalized: str) -> list[dict[str, Any]]:
    """The items with identifier ``normalized`` (lower-cased, trimmed), first by kind
    (:data:`KIND_ORDER`), each with the kind of identifier that matched."""
    return release.query_dicts(MATCHES_SQL, [normalized])


ITEM_FIELDS = (
    "result_id, kind, search_role, is_variable, variable_type, variable_class, title, "
    "subtitle, description, domain, vocabulary, concept_id, concept_code, standard_concept, "
    "ehr_role, concept_class, survey_name, topic, question_paths, question_path_text, "
    "answer_value, select_all, position, child_count, participant_count, count_status, "
    "count_source, canonical_url, parent_result_id, survey_concept_id"
)


def item(release: Release, result_id: str) -> dict[str, Any] | None:
    """The ``aou_item`` row of ``result_id`` (:data:`ITEM_FIELDS`), or None."""
    rows = release.query_dicts(
        f"SELECT {ITEM_FIELDS} FROM aou_item WHERE result_id = ?", [result_id]
    )
    return rows[0] if rows else None


MEMBERSHIP = """
SELECT 'parent' AS role, result_id, kind, title, is_variable FROM aou_item
WHERE result_id = $2
UNION ALL
SELECT 'module', result_id, kind, title, is_variable FROM aou_item
WHERE kind = 'survey_module' AND concept_id = $3 AND result_id <> $1
UNION ALL
SELECT 'topic', result_id, kind, title, is_variable FROM aou_item
WHERE result_id = (SELECT min(from_result_id) FROM aou_item_edge
                   WHERE edge_kind = 'topic_has_question' AND to_result_id = $1)
"""


def membership(release: Release, item: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The item's parent, survey module and survey topic rows, by role (``parent``,
    ``module``, ``topic``), for those it has."""
    rows = release.query_dicts(
        MEMBERSHIP,
        [item["result_id"], item["parent_result_id"], item["survey_concept_id"]],
    )
    return {row.pop("role"): row for row in rows}


def capped(release: Release, sql: str, params: list[Any], order_by: str) -> dict[str, Any]:
    """``{"total", "items"}``: the first :data:`LIST_CAP` rows of ``sql`` in ``order_by``
    order, and how many rows there are in all."""
    rows = release.query_dicts(
        f"SELECT *, count(*) OVER () AS total_rows FROM ({sql}) "
        f"ORDER BY {order_by} LIMIT {LIST_CAP}",
        params,
    )
    total = int(rows[0]["total_rows"]) if rows else 0
    for row in rows:
        del row["total_rows"]
    return {"total": total, "items": rows}


BY_POSITION = "position NULLS LAST, title, result_id"

ANSWERS = """
SELECT a.result_id, a.title, a.concept_id, a.answer_value, a.select_all, e.position
FROM aou_item_edge e JOIN aou_item a ON a.result_id = e.to_result_id
WHERE e.from_result_id = $1 AND e.edge_kind = 'has_answer'
"""

MEMBERS = """
SELECT result_id, kind, title, is_variable, position FROM aou_item
WHERE parent_result_id = $1 AND kind <> 'answer'
UNION
SELECT i.result_id, i.kind, i.title, i.is_variable, i.position
FROM aou_item_edge e JOIN aou_item i ON i.result_id = e.to_result_id
WHERE e.from_result_id = $1 AND e.edge_kind = 'topic_has_question'
"""

RELATIONSHIPS = """
SELECT r.edge_kind, r.direction, r.qualifier, r.position,
       o.result_id, o.kind, o.title, o.is_variable,
       v.result_id AS via_result_id, v.kind AS via_kind, v.title AS via_title,
       v.is_variable AS via_is_variable
FROM (SELECT *, 'outgoing' AS direction, to_result_id AS other FROM aou_item_edge
      WHERE from_result_id = $1
      UNION ALL
      SELECT *, 'incoming', from_result_id FROM aou_item_edge WHERE to_result_id = $1) r
JOIN aou_item o ON o.result_id = r.other
LEFT JOIN aou_item v ON v.result_id = r.via_result_id
WHERE r.edge_kind NOT IN ('has_answer', 'topic_has_question')
"""


def identifiers(release: Release, result_id: str) -> dict[str, Any]:
    """The item's identifiers, capped."""
    return capped(
        release,
        "SELECT identifier, identifier_kind FROM aou_item_identifier WHERE result_id = ?",
        [result_id],
        "identifier_kind, identifier",
    )


def links(release: Release, result_id: str) -> dict[str, Any]:
    """The item's links, capped."""
    return capped(
        release,
        "SELECT link_kind, url FROM aou_item_link WHERE result_id = ?",
        [result_id],
        "link_kind, url",
    )


def answers(release: Release, result_id: str) -> dict[str, Any]:
    """A question's answer choices in answer order, capped."""
    return capped(release, ANSWERS, [result_id], BY_POSITION)


def members(release: Release, result_id: str) -> dict[str, Any]:
    """The items of a module, topic or domain in their order, capped."""
    return capped(release, MEMBERS, [result_id], BY_POSITION)


def relationships(release: Release, result_id: str) -> dict[str, Any]:
    """Edges other than answers and topic membership, both ways, capped: each row with
    the item at the other end and the ``via_`` columns of the answer it goes through."""
    return capped(
        release,
        RELATIONSHIPS,
        [result_id],
        "edge_kind, direction DESC, position NULLS LAST, title, result_id",
    )
