"""Search documents: one per All of Us item.

The body carries the context a keyword search needs (module, topic, the question path
spelled out, a question's answer choices, descriptions, codes); the embedding text is
the title with its subtitle, answers and description. ``identifiers`` are the item's
lower-cased identifiers and aliases, ``role`` its EHR role.
"""

from __future__ import annotations

import duckdb

from metabundle.sources.base import SearchDocContext

SEARCH_DOCS = """
WITH ids AS (
    SELECT result_id, list_sort(list(DISTINCT normalized)) AS identifiers
    FROM aou_item_identifier GROUP BY 1
), answers AS (
    SELECT parent_result_id AS result_id,
           'Answers: ' || string_agg(title, '; ' ORDER BY position, title) AS answers
    FROM aou_item WHERE kind = 'answer' GROUP BY 1
)
SELECT 'aou:' || i.kind || ':' || i.result_id AS doc_id,
       i.kind,
       i.result_id AS entity_id,
       i.title,
       concat_ws(' | ', i.subtitle, i.question_path_text, a.answers, i.description,
                 i.concept_code) AS body,
       concat_ws('. ', i.title, i.subtitle, a.answers, i.description) AS embed_text,
       i.canonical_url,
       i.parent_result_id AS parent_id,
       coalesce(ids.identifiers, []) AS identifiers,
       i.domain,
       i.vocabulary,
       i.concept_class,
       i.standard_concept,
       TRUE AS is_valid,
       i.variable_type,
       i.ehr_role AS role
FROM aou_item i
LEFT JOIN ids USING (result_id)
LEFT JOIN answers a USING (result_id)
"""


def search_docs(ctx: SearchDocContext) -> duckdb.DuckDBPyRelation:
    """One search document per aou_item row."""
    return ctx.sql(SEARCH_DOCS)
