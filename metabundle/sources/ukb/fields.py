"""Data-fields (schema 1) with decoded property codes, and the aliases of each field.

Aliases are the names a field's columns carry in the common extract formats, for every
instance index and array index the field has (its ``instance_min..instance_max`` and
``array_min..array_max``):

* ``ukbconv_csv`` ``21001-0.0`` (ukbconv csv/txt and the main dataset CSV),
* ``ukbconv_r`` ``f.21001.0.0`` (ukbconv r/tab),
* ``rap`` ``p21001_i0`` (the Research Analysis Platform: ``_i<instance>`` when the
  field has instances, ``_a<array>`` when it has array indexes, ``p31`` when neither),

plus one each of ``field_id`` (``21001``), ``f_prefix`` (``f21001``), ``rap_stem``
(``p21001``, when RAP names carry suffixes) and ``legacy_title`` (the title in the
retired data dictionary, when it differs from today's). The instance/array
combinations are enumerated instance-major and cut off after ``MAX_COMBINATIONS`` per
field; the largest current field (30069, 16 instances x 104 array indexes = 1,664)
fits, so the cap only guards against an absurd range upstream.
"""

from __future__ import annotations

import duckdb

from metabundle.schemas.ukb_aliases import ALIAS_FORMS
from metabundle.sources.ukb.files import ENCODING_URL, FIELD_URL, FIELDS, INSTANCING_URL

MAX_COMBINATIONS = 2048

LABELLED = (
    "stability",
    "value_type",
    "base_type",
    "item_type",
    "strata",
    "instanced",
    "arrayed",
    "sexed",
)
"""Schema 1 columns that carry a code with a published meaning (``<column>_label``)."""


def _lookup_of(column: str) -> str:
    return "value_type" if column == "base_type" else column


def _label_joins() -> str:
    return "\n".join(
        f"LEFT JOIN ukb_lookup AS l_{c} ON l_{c}.kind = '{_lookup_of(c)}' AND l_{c}.code = f.{c}"
        for c in LABELLED
    )


def unknown_codes(con: duckdb.DuckDBPyConnection) -> list[str]:
    """One message per property whose codes include some without a published meaning
    (base_type 0, "not encoded", has none by design)."""
    messages = []
    for column in LABELLED:
        lookup = _lookup_of(column)
        rows = con.execute(
            f"SELECT DISTINCT {column} FROM raw_field WHERE {column} IS NOT NULL "
            f"AND NOT (? = 'base_type' AND {column} = 0) AND {column} NOT IN "
            f"(SELECT code FROM ukb_lookup WHERE kind = ?) ORDER BY 1",
            [column, lookup],
        ).fetchall()
        if rows:
            codes = ", ".join(str(row[0]) for row in rows)
            messages.append(f"{FIELDS.key}: {column} codes without a published meaning: {codes}")
    return messages


def field_relation(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyRelation:
    """``ukb_field`` rows from ``raw_field`` joined with lookups, categories, encodings
    and the legacy dictionary."""
    labels = ", ".join(f"f.{c}, l_{c}.label AS {c}_label" for c in LABELLED)
    return con.sql(
        f"""
        SELECT f.field_id, f.title, f.availability, f.private, {labels},
               f.units, f.main_category,
               c.title AS category_title, c.path AS category_path,
               f.encoding_id, e.title AS encoding_title,
               f.instance_id, f.instance_min, f.instance_max,
               f.instance_max - f.instance_min + 1 AS instance_count,
               f.array_min, f.array_max, f.array_max - f.array_min + 1 AS array_count,
               f.notes, ukb_plain_text(f.notes) AS notes_text,
               CAST(f.debut AS DATE) AS debut, CAST(f.version AS DATE) AS version,
               f.num_participants, f.item_count, f.showcase_order,
               f.cost_do, f.cost_on, f.cost_sc,
               lg.title AS legacy_title,
               '{FIELD_URL}' || f.field_id AS canonical_url,
               CASE WHEN f.encoding_id <> 0 THEN '{ENCODING_URL}' || f.encoding_id END
                   AS encoding_url,
               CASE WHEN f.instance_id <> 0 THEN '{INSTANCING_URL}' || f.instance_id END
                   AS instancing_url
        FROM raw_field AS f
        {_label_joins()}
        LEFT JOIN category_rows AS c ON c.category_id = f.main_category
        LEFT JOIN raw_encoding AS e ON e.encoding_id = f.encoding_id
        LEFT JOIN legacy_titles AS lg ON lg.field_id = f.field_id
        """
    )


def legacy_titles_table(con: duckdb.DuckDBPyConnection) -> None:
    """Temp table ``legacy_titles`` (field_id, title): one legacy title per field."""
    con.execute(
        "CREATE OR REPLACE TEMP TABLE legacy_titles AS SELECT field_id, min(title) AS title "
        "FROM legacy WHERE field_id IS NOT NULL AND title IS NOT NULL GROUP BY field_id"
    )


LEGACY_PRIORITY = len(ALIAS_FORMS) + 1


def _form_selects() -> str:
    """One SELECT per column-name form (:data:`~metabundle.schemas.ukb_aliases.ALIAS_FORMS`):
    over every field, or over every bounded instance/array cell of it."""
    selects = []
    for form in ALIAS_FORMS:
        source = "bounded" if form.per_cell else "f"
        where = f" WHERE {form.when}" if form.when else ""
        selects.append(
            f"SELECT field_id, {form.sql()}, '{form.kind}', {form.priority} FROM {source}{where}"
        )
    return "\n            UNION ALL ".join(selects)


def alias_relation(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyRelation:
    """``ukb_field_alias`` rows for every field of ``raw_field``."""
    return con.sql(
        f"""
        WITH f AS (
            SELECT f.field_id, f.title, lg.title AS legacy_title,
                   f.instance_min AS i0, f.instance_max AS i1,
                   f.array_min AS a0, f.array_max AS a1,
                   f.instanced <> 0 OR f.instance_min <> 0 OR f.instance_max <> 0 AS has_i,
                   f.arrayed <> 0 OR f.array_min <> 0 OR f.array_max <> 0 AS has_a
            FROM raw_field AS f LEFT JOIN legacy_titles AS lg USING (field_id)
        ),
        instances AS (
            SELECT *, unnest(range(i0, least(i1 + 1, i0 + {MAX_COMBINATIONS}))) AS i FROM f
        ),
        cells AS (
            SELECT *, unnest(range(a0, least(a1 + 1, a0 + {MAX_COMBINATIONS}))) AS a
            FROM instances
        ),
        bounded AS (
            SELECT * FROM cells
            WHERE (i - i0) * (a1 - a0 + 1) + (a - a0) < {MAX_COMBINATIONS}
        ),
        aliases(field_id, alias, alias_kind, priority) AS (
            {_form_selects()}
            UNION ALL SELECT field_id, legacy_title, 'legacy_title', {LEGACY_PRIORITY} FROM f
                WHERE legacy_title IS NOT NULL AND legacy_title <> title
        )
        SELECT field_id, alias, alias_kind FROM aliases
        QUALIFY row_number() OVER (PARTITION BY field_id, alias ORDER BY priority) = 1
        """
    )
