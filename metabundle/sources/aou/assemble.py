"""Turn the per-kind item tables into the registry tables, keyed by opaque result ids.

A result id is ``aou.doc.`` + the first 24 hex digits of
``sha256(kind || NUL || native_id)``: the same item gets the same id in every build of
the same data, whatever the order of the input rows, and an id reveals nothing about
the row it came from. Parents, edges, links and identifiers are resolved to result
ids here; counts are joined from the API responses (or explained by the build's
count status).
"""

from __future__ import annotations

import duckdb

from metabundle.errors import SchemaError
from metabundle.sources.aou.api import FROM_API, NOT_COLLECTED
from metabundle.sources.aou.catalog import ATHENA_CONCEPT

RESULT_ID_MACRO = (
    "CREATE OR REPLACE TEMP MACRO aou_rid(kind, native_id) AS "
    "'aou.doc.' || left(sha256(kind || chr(0) || native_id), 24)"
)

ITEMS = """
CREATE OR REPLACE TEMP TABLE items AS
SELECT aou_rid(kind, native_id) AS result_id, *
FROM (SELECT * FROM survey_items UNION ALL BY NAME SELECT * FROM clinical_items)
"""

EDGES = """
CREATE OR REPLACE TEMP TABLE edges AS
SELECT aou_rid(from_kind, from_native_id) AS from_result_id,
       aou_rid(to_kind, to_native_id) AS to_result_id, edge_kind, qualifier,
       CASE WHEN via_kind IS NOT NULL THEN aou_rid(via_kind, via_native_id) END
           AS via_result_id,
       position
FROM (SELECT * FROM survey_edges UNION ALL BY NAME SELECT * FROM clinical_edges)
"""

IDENTIFIERS = """
SELECT result_id, identifier, identifier_kind, lower(trim(identifier)) AS normalized
FROM (
    SELECT result_id, CAST(concept_id AS VARCHAR) AS identifier, 'concept_id' AS identifier_kind
    FROM items WHERE concept_id IS NOT NULL
    UNION
    SELECT result_id, concept_code, 'concept_code' FROM items WHERE concept_code IS NOT NULL
    UNION
    SELECT result_id, lower(vocabulary) || ':' || concept_code, 'vocabulary_code'
    FROM items WHERE concept_code IS NOT NULL AND vocabulary IS NOT NULL
    UNION
    SELECT aou_rid(kind, native_id), identifier, identifier_kind
    FROM (SELECT * FROM survey_aliases UNION ALL SELECT * FROM clinical_aliases)
)
"""

LINKS = f"""
SELECT result_id, 'data_browser' AS link_kind, canonical_url AS url FROM items
UNION
SELECT result_id, 'athena', '{ATHENA_CONCEPT}' || CAST(concept_id AS VARCHAR)
FROM items WHERE concept_id IS NOT NULL
UNION
SELECT aou_rid(kind, native_id), link_kind, url
FROM (SELECT * FROM survey_links UNION ALL SELECT * FROM clinical_links)
"""


def _item_table(count_status: str) -> str:
    """aou_item: items with parents, child counts and the API counts or their status."""
    status = "'" + count_status.replace("'", "''") + "'"
    return f"""
SELECT i.result_id, i.kind, i.search_role, i.search_role = 'variable' AS is_variable,
       i.variable_type, i.variable_class, i.title, i.subtitle, i.description, i.domain,
       i.vocabulary, i.concept_id, i.concept_code, i.native_id, i.standard_concept,
       i.ehr_role, i.concept_class, i.survey_concept_id, i.survey_name, i.topic,
       i.question_paths, i.question_path_text, i.answer_value, i.select_all, i.position,
       p.result_id AS parent_result_id,
       coalesce(c.children, 0) + coalesce(t.members, 0) AS child_count,
       n.participant_count,
       CASE WHEN {status} <> '{FROM_API}' THEN {status}
            WHEN n.participant_count IS NULL THEN '{NOT_COLLECTED}'
            ELSE '{FROM_API}' END AS count_status,
       n.endpoint AS count_source, i.canonical_url
FROM items i
LEFT JOIN items p ON p.kind = i.parent_kind AND p.native_id = i.parent_native_id
LEFT JOIN (SELECT parent_kind, parent_native_id, count(*) AS children FROM items
           WHERE search_role <> 'navigation' GROUP BY ALL) c
       ON c.parent_kind = i.kind AND c.parent_native_id = i.native_id
LEFT JOIN (SELECT from_result_id, count(*) AS members FROM edges
           WHERE edge_kind = 'topic_has_question' GROUP BY 1) t
       ON t.from_result_id = i.result_id
LEFT JOIN api_counts n ON n.kind = i.kind AND n.native_id = i.native_id
"""


def _check_unique(con: duckdb.DuckDBPyConnection) -> None:
    twice = con.sql(
        "SELECT kind, native_id FROM items GROUP BY ALL HAVING count(*) > 1 ORDER BY ALL LIMIT 1"
    ).fetchall()
    if twice:
        kind, native_id = twice[0]
        raise SchemaError(f"aou: two {kind} items have the native id {native_id}")


def assemble(
    con: duckdb.DuckDBPyConnection, count_status: str
) -> dict[str, duckdb.DuckDBPyRelation]:
    """The four item tables as relations on ``con``; ``count_status`` is the build's API
    outcome (one of the constants of :mod:`.api`) and ``api_counts`` must be registered."""
    con.execute(RESULT_ID_MACRO)
    con.execute(ITEMS)
    _check_unique(con)
    con.execute(EDGES)
    return {
        "aou_item": con.sql(_item_table(count_status)),
        "aou_item_identifier": con.sql(IDENTIFIERS),
        "aou_item_edge": con.sql("SELECT * FROM edges"),
        "aou_item_link": con.sql(LINKS),
    }
