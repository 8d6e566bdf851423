"""Search documents of the UK Biobank source: fields, encodings and coding values.

* ``field``: title; body = notes, units and category path; embedded text = title and
  notes (as the QueryGaP contract specifies for UK Biobank); identifiers = every stored
  alias (field id, column-name forms, legacy title), lower-cased; parent = the main
  category.
* ``encoding``: title; body = description and structure; identifiers ``coding <id>``
  and ``data-coding <id>`` (a bare number would collide with field ids).
* ``encoding_value``: title = meaning; body = the value and the encoding's title;
  parent = the encoding. Identifiers are ``<encoding>:<value>`` plus, for code-like
  values (letters and digits, 3+ characters: ICD, OPCS), the value itself and its
  dotted form where the meaning starts with it (``I219`` → ``i21.9``). Purely numeric
  values are left out because they would collide across codings and with field ids.

Notes and descriptions come as the parse step reduced them to plain text
(``notes_text``, ``description_text``: :mod:`.markup`); the tables also keep them as
published.
"""

from __future__ import annotations

import duckdb

from metabundle.sources.base import SearchDocContext

FIELD_DOCS = """
SELECT 'ukb:field:' || f.field_id AS doc_id,
       'field' AS kind,
       CAST(f.field_id AS VARCHAR) AS entity_id,
       f.title,
       concat_ws(' | ', f.notes_text, f.units,
                 coalesce(f.category_path, f.category_title)) AS body,
       concat_ws('. ', f.title, f.notes_text) AS embed_text,
       f.canonical_url,
       CAST(f.main_category AS VARCHAR) AS parent_id,
       coalesce(a.identifiers, [CAST(f.field_id AS VARCHAR)]) AS identifiers
FROM ukb_field AS f
LEFT JOIN (
    SELECT field_id, list_sort(list_distinct(list(lower(alias)))) AS identifiers
    FROM ukb_field_alias GROUP BY field_id
) AS a USING (field_id)
"""

ENCODING_DOCS = """
SELECT 'ukb:encoding:' || encoding_id,
       'encoding',
       CAST(encoding_id AS VARCHAR),
       coalesce(title, 'Coding ' || encoding_id),
       concat_ws(' | ', description_text,
                 structure_label || ' coding of ' || coded_as_label || ' values'),
       concat_ws('. ', title, description_text),
       canonical_url,
       NULL,
       ['coding ' || encoding_id, 'data-coding ' || encoding_id]
FROM ukb_encoding
WHERE encoding_id <> 0
"""

VALUE_DOCS = """
SELECT 'ukb:encoding_value:' || v.encoding_id || ':' || v.value_key,
       'encoding_value',
       v.encoding_id || ':' || v.value_key,
       coalesce(v.meaning, v.value),
       concat_ws(' | ', v.value, e.title),
       concat_ws('. ', coalesce(v.meaning, v.value), e.title),
       v.canonical_url,
       CAST(v.encoding_id AS VARCHAR),
       list_sort(list_distinct(list_filter([
           lower(v.encoding_id || ':' || v.value),
           CASE WHEN code_like THEN lower(v.value) END,
           CASE WHEN code_like AND replace(head, '.', '') = v.value THEN lower(head) END
       ], lambda x: x IS NOT NULL)))
FROM (
    SELECT *,
           regexp_matches(value, '[A-Za-z]') AND regexp_matches(value, '[0-9]')
               AND length(value) >= 3 AS code_like,
           split_part(meaning, ' ', 1) AS head
    FROM ukb_encoding_value
) AS v
JOIN ukb_encoding AS e USING (encoding_id)
"""


def search_docs(ctx: SearchDocContext) -> duckdb.DuckDBPyRelation:
    """One document per field, encoding (except 0, "not encoded") and coding value."""
    return ctx.sql(f"{FIELD_DOCS} UNION ALL {ENCODING_DOCS} UNION ALL {VALUE_DOCS}")
