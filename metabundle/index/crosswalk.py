"""The crosswalk: links from every source's entities to standard OMOP concepts.

Built in DuckDB over the staged tables, except the nearest-concept search of the
similarity links (blocked matrix products over the embedding vectors):

* **All of Us items** carry OMOP concept ids (``aou_item.concept_id``). A valid
  standard concept of the vocabulary links as itself, any other concept of the
  vocabulary through its valid "Maps to" targets; a concept the release's vocabulary
  does not hold (the public subsets lack PPI survey concepts) links as given.
  Method ``aou_concept_id``.
* **UK Biobank coding values** of codings that hold a vocabulary's codes
  (:data:`CODING_VOCABULARIES`: ICD-10, ICD-9, OPCS-4, Read v2) are rewritten into
  the vocabulary's code form (``K922`` → ``K92.2``) and looked up in
  ``omop_concept``, the coding's own vocabulary first; the concept found links
  through "Maps to" (or as itself when standard). Method ``ukb_coding_code`` when the
  code is in the coding's own vocabulary, ``ukb_coding_code_related_vocabulary``
  when only a related one holds it (ICD10CM for ICD-10).
* **UK Biobank fields** are concepts of OMOP's "UK Biobank" vocabulary (concept code
  = field id); such a concept links as above. Method ``ukb_field_vocabulary``.
* **UK Biobank fields and dbGaP variables** without such a link are grounded by
  their search document's embedding: the nearest valid standard concept document,
  kept when its cosine similarity reaches :data:`STRONG_COSINE`. Method
  ``embedding_similarity``, ``link_type`` ``similarity``, ``score`` the cosine: a
  similarity, never a curated mapping.

Every other link has ``link_type`` ``curated`` (the source's or OHDSI's own codes and
mappings) and says how it was made in ``provenance``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa

from metabundle.index.vector_file import Vectors
from metabundle.schemas import arrow_schema, get_table

#: Smallest cosine similarity a similarity link needs. Measured on the session build
#: with wordllama: from about 0.85 the nearest standard concept names the same thing
#: ("Systolic blood pressure [Visit 1]" → "Systolic blood pressure", "Heart Disease"
#: → "Heart disease"); below it, related but different things ("Emphysema extent" →
#: "Pulmonary emphysema").
STRONG_COSINE = 0.85

#: UK Biobank codings holding a vocabulary's codes: (encoding_id, vocabulary_id,
#: priority, code form, method).
CODING_VOCABULARIES = (
    (19, "ICD10", 1, "dot_after_3", "ukb_coding_code"),
    (19, "ICD10CM", 2, "dot_after_3", "ukb_coding_code_related_vocabulary"),
    (87, "ICD9CM", 1, "icd9", "ukb_coding_code"),
    (240, "OPCS4", 1, "dot_after_3", "ukb_coding_code"),
    (45, "Read", 1, "read_term_00", "ukb_coding_code"),
)

CROSSWALK_COLUMNS = (
    "source, entity_kind, entity_id, entity_label, concept_id, source_concept_id, "
    "source_vocabulary_id, source_code, relationship_id, method, link_type, score, provenance"
)

#: Each concept of the vocabulary and its standard equivalents: itself when valid
#: standard, else its valid standard "Maps to" targets.
STANDARD_OF_SQL = """
CREATE TEMP TABLE standard_of AS
SELECT concept_id AS source_concept_id, concept_id, 'self' AS relationship_id
FROM omop_concept WHERE standard_concept = 'S' AND invalid_reason IS NULL
UNION ALL
SELECT r.concept_id_1, r.concept_id_2, 'Maps to'
FROM omop_concept_relationship r
JOIN omop_concept s ON s.concept_id = r.concept_id_1
JOIN omop_concept t ON t.concept_id = r.concept_id_2
WHERE r.relationship_id = 'Maps to' AND r.invalid_reason IS NULL
  AND t.standard_concept = 'S' AND t.invalid_reason IS NULL
  AND NOT coalesce(s.standard_concept = 'S' AND s.invalid_reason IS NULL, FALSE)
"""

AOU_SQL = """
SELECT 'aou' AS source, a.kind AS entity_kind, a.result_id AS entity_id,
       a.title AS entity_label, coalesce(so.concept_id, a.concept_id) AS concept_id,
       a.concept_id AS source_concept_id, coalesce(c.vocabulary_id, a.vocabulary) AS
       source_vocabulary_id, coalesce(c.concept_code, a.concept_code) AS source_code,
       coalesce(so.relationship_id, 'as_given') AS relationship_id,
       'aou_concept_id' AS method, 'curated' AS link_type, NULL::DOUBLE AS score,
       CASE WHEN c.concept_id IS NULL
            THEN 'All of Us item concept ' || a.concept_id || ' (not in this vocabulary)'
            WHEN so.relationship_id = 'self'
            THEN 'All of Us item concept ' || a.concept_id || ', a standard concept'
            ELSE 'All of Us item concept ' || a.concept_id || ' (' || c.vocabulary_id || ' '
                 || c.concept_code || ') ''Maps to'' ' || so.concept_id END AS provenance
FROM aou_item a
LEFT JOIN omop_concept c ON c.concept_id = a.concept_id
LEFT JOIN standard_of so ON so.source_concept_id = a.concept_id
WHERE a.concept_id IS NOT NULL AND a.concept_id > 0
  AND (so.concept_id IS NOT NULL OR c.concept_id IS NULL)
"""


def _code_form_sql(form: str) -> str:
    """SQL rewriting UK Biobank's undotted ``v.value`` into the vocabulary's code."""
    return {
        "dot_after_3": "CASE WHEN length(v.value) > 3 THEN v.value[1:3] || '.' || v.value[4:] "
        "ELSE v.value END",
        "icd9": "CASE WHEN v.value LIKE 'E%' AND length(v.value) > 4 "
        "THEN v.value[1:4] || '.' || v.value[5:] "
        "WHEN v.value NOT LIKE 'E%' AND length(v.value) > 3 "
        "THEN v.value[1:3] || '.' || v.value[4:] ELSE v.value END",
        "read_term_00": "v.value || '00'",
    }[form]


def _ukb_coding_sql() -> str:
    parts = [
        f"SELECT v.encoding_id, v.value, v.meaning, '{vocabulary}' AS vocabulary_id, "
        f"{priority} AS priority, '{method}' AS method, {_code_form_sql(form)} AS code "
        f"FROM ukb_encoding_value v WHERE v.encoding_id = {encoding}"
        for encoding, vocabulary, priority, form, method in CODING_VOCABULARIES
    ]
    return f"""
WITH coded AS ({" UNION ALL ".join(parts)}),
found AS (
    SELECT coded.*, c.concept_id AS source_concept_id, c.concept_code
    FROM coded JOIN omop_concept c
      ON c.vocabulary_id = coded.vocabulary_id AND c.concept_code = coded.code
    QUALIFY rank() OVER (PARTITION BY encoding_id, value ORDER BY priority) = 1
)
SELECT 'ukb' AS source, 'encoding_value' AS entity_kind,
       f.encoding_id || ':' || f.value AS entity_id, f.meaning AS entity_label,
       so.concept_id, f.source_concept_id, f.vocabulary_id AS source_vocabulary_id,
       f.concept_code AS source_code, so.relationship_id, f.method,
       'curated' AS link_type, NULL::DOUBLE AS score,
       'UK Biobank coding ' || f.encoding_id || ' value ' || f.value || ' = '
       || f.vocabulary_id || ' ' || f.concept_code
       || CASE so.relationship_id WHEN 'self' THEN ', a standard concept'
          ELSE ' ''Maps to'' ' || so.concept_id END AS provenance
FROM found f JOIN standard_of so ON so.source_concept_id = f.source_concept_id
"""


UKB_FIELD_SQL = """
SELECT 'ukb' AS source, 'field' AS entity_kind, CAST(f.field_id AS VARCHAR) AS entity_id,
       f.title AS entity_label, so.concept_id, c.concept_id AS source_concept_id,
       c.vocabulary_id AS source_vocabulary_id, c.concept_code AS source_code,
       so.relationship_id, 'ukb_field_vocabulary' AS method, 'curated' AS link_type,
       NULL::DOUBLE AS score,
       'OMOP UK Biobank vocabulary concept ' || c.concept_id || ' for field ' || f.field_id
       || CASE so.relationship_id WHEN 'self' THEN ', a standard concept'
          ELSE ' ''Maps to'' ' || so.concept_id END AS provenance
FROM ukb_field f
JOIN omop_concept c ON c.vocabulary_id = 'UK Biobank'
 AND c.concept_code = CAST(f.field_id AS VARCHAR)
JOIN standard_of so ON so.source_concept_id = c.concept_id
"""


def _register(con: duckdb.DuckDBPyConnection, tables: Mapping[str, Path]) -> None:
    for name, path in tables.items():
        con.execute(f"CREATE VIEW {name} AS SELECT * FROM read_parquet('{path}')")


def curated_links(con: duckdb.DuckDBPyConnection, tables: Mapping[str, Path]) -> str:
    """SQL of the curated links among ``tables`` (staged parquet files by name),
    registered as views on ``con`` ("" when no source has any); ``standard_of`` is
    created."""
    _register(con, tables)
    con.execute(STANDARD_OF_SQL)
    parts = []
    if "aou_item" in tables:
        parts.append(AOU_SQL)
    if "ukb_encoding_value" in tables:
        parts.append(_ukb_coding_sql())
    if "ukb_field" in tables:
        parts.append(UKB_FIELD_SQL)
    return " UNION ALL ".join(f"SELECT {CROSSWALK_COLUMNS} FROM ({p})" for p in parts)


#: The search documents grounded by similarity: (source, kind) → entity kind.
SIMILARITY_DOCS = {("ukb", "field"): "field", ("dbgap", "variable"): "variable"}


def similarity_links(
    con: duckdb.DuckDBPyConnection,
    search_doc: Path,
    vectors: Vectors,
    linked: str,
) -> pa.Table:
    """Links from UK Biobank fields and dbGaP variables with no curated link (the
    ``(source, entity_id)`` pairs of table ``linked``) to their nearest valid standard
    concept, when the cosine reaches :data:`STRONG_COSINE`. Only docnos are fetched for
    the search, the names and codes only of the concepts linked: every standard
    concept's row as Python values was most of the step's memory at millions of
    concepts."""
    kinds = " OR ".join(f"(d.source = '{s}' AND d.kind = '{k}')" for s, k in SIMILARITY_DOCS)
    docs = f"read_parquet('{search_doc}')"
    query_docnos = _docnos(
        con,
        f"SELECT d.docno FROM {docs} d WHERE ({kinds}) AND NOT EXISTS (SELECT 1 FROM {linked} l "
        "WHERE l.source = d.source AND l.entity_id = d.entity_id) ORDER BY d.docno",
    )
    target_docnos = _docnos(
        con,
        f"SELECT d.docno FROM {docs} d JOIN omop_concept c "
        "ON c.concept_id = TRY_CAST(d.entity_id AS BIGINT) "
        "WHERE d.source = 'omop' AND d.kind = 'concept' "
        "AND c.standard_concept = 'S' AND c.invalid_reason IS NULL ORDER BY d.docno",
    )
    schema = arrow_schema(get_table("concept_crosswalk"))
    best, scores = exact_nearest(vectors, query_docnos, target_docnos)
    kept = np.flatnonzero((best >= 0) & (scores >= STRONG_COSINE))
    pairs = pa.table(
        {
            "query_docno": query_docnos[kept],
            "target_docno": target_docnos[best[kept]],
            "score": scores[kept],
        }
    )
    con.register("similar_pair", pairs)
    found = con.sql(
        "SELECT d.source, d.kind, d.entity_id, d.title, p.score, c.concept_id, "
        "c.vocabulary_id, c.concept_code, c.concept_name "
        f"FROM similar_pair p JOIN {docs} d ON d.docno = p.query_docno "
        f"JOIN {docs} t ON t.docno = p.target_docno "
        "JOIN omop_concept c ON c.concept_id = TRY_CAST(t.entity_id AS BIGINT) "
        "ORDER BY p.query_docno"
    ).fetchall()
    con.unregister("similar_pair")
    rows = []
    for source, kind, entity_id, title, score, concept_id, vocabulary_id, code, name in found:
        cosine = round(float(score), 4)
        rows.append(
            {
                "source": source,
                "entity_kind": SIMILARITY_DOCS[(source, kind)],
                "entity_id": entity_id,
                "entity_label": title,
                "concept_id": int(concept_id),
                "source_concept_id": None,
                "source_vocabulary_id": None,
                "source_code": None,
                "relationship_id": None,
                "method": "embedding_similarity",
                "link_type": "similarity",
                "score": cosine,
                "provenance": f"nearest standard concept by embedding cosine {cosine} "
                f"({vocabulary_id} {code} {name!r}); a similarity, not a curated mapping",
            }
        )
    return pa.Table.from_pylist(rows, schema=schema)


def _docnos(con: duckdb.DuckDBPyConnection, sql: str) -> np.ndarray:
    """The ``docno`` column of ``sql``'s rows as int64."""
    return con.execute(sql).fetchnumpy()["docno"].astype(np.int64)


#: Queries and targets per matrix product of :func:`exact_nearest` (a 4096 x 4096
#: float32 block of cosines is 64 MiB).
BLOCK = 4096


def exact_nearest(
    vectors: Vectors, queries: np.ndarray, targets: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Index into ``targets`` (rows of ``vectors``) of each query row's nearest target
    and the cosine; ties go to the first target.

    Exact, by matrix products over blocks of queries and targets read from the memory
    map, so memory stays at a few blocks whatever the sizes; queries with identical
    vectors (the same description under many dbGaP variables) are searched once. On two
    cores this is about a second per thousand queries against 377k targets, where a
    vector index asked one query at a time took six."""
    if not len(queries) or not len(targets):
        return np.full(len(queries), -1, np.int64), np.full(len(queries), -np.inf, np.float32)
    query_rows = np.ascontiguousarray(vectors[queries])
    distinct, inverse = np.unique(
        query_rows.view(np.dtype((np.void, query_rows.dtype.itemsize * query_rows.shape[1]))),
        return_inverse=True,
    )
    unique_rows = distinct.view(query_rows.dtype).reshape(len(distinct), -1)
    best = np.full(len(unique_rows), -1, dtype=np.int64)
    scores = np.full(len(unique_rows), -np.inf, dtype=np.float32)
    for target_start in range(0, len(targets), BLOCK):
        block_targets = targets[target_start : target_start + BLOCK]
        matrix = np.asarray(vectors[block_targets], dtype=np.float32).T
        for start in range(0, len(unique_rows), BLOCK):
            block = np.asarray(unique_rows[start : start + BLOCK], dtype=np.float32)
            cosines = block @ matrix
            at = cosines.argmax(axis=1)
            found = cosines[np.arange(len(at)), at]
            better = found > scores[start : start + BLOCK]
            scores[start : start + BLOCK][better] = found[better]
            best[start : start + BLOCK][better] = at[better] + target_start
    return best[inverse.reshape(-1)], np.clip(scores, -1.0, 1.0)[inverse.reshape(-1)]


#: The staged tables the crosswalk reads (those of absent sources are skipped).
CROSSWALK_INPUTS = (
    "omop_concept",
    "omop_concept_relationship",
    "aou_item",
    "ukb_encoding_value",
    "ukb_field",
    "dbgap_variable",
)


def crosswalk_table(
    con: duckdb.DuckDBPyConnection,
    tables: Mapping[str, Path],
    search_doc: Path,
    vectors: Vectors | None,
) -> tuple[duckdb.DuckDBPyRelation, dict[str, Any]]:
    """Every link (table ``crosswalk`` on ``con``) and the coverage block."""
    empty = pa.Table.from_pylist([], schema=arrow_schema(get_table("concept_crosswalk")))
    con.register("no_link", empty)
    curated = curated_links(con, tables) or f"SELECT {CROSSWALK_COLUMNS} FROM no_link"
    # the links first, then their distinct rows: in one statement the vocabulary's joins
    # and the DISTINCT held more than a working connection's bound at 10M documents
    # (6.4M concepts), where the two statements stay under it
    con.execute(f"CREATE TEMP TABLE curated_rows AS {curated}")
    con.execute("CREATE TEMP TABLE curated AS SELECT DISTINCT * FROM curated_rows")
    con.execute("DROP TABLE curated_rows")
    similar = empty
    if vectors is not None:
        similar = similarity_links(con, search_doc, vectors, "curated")
    con.register("similarity_link", similar)
    con.execute(
        f"CREATE TEMP TABLE crosswalk AS SELECT {CROSSWALK_COLUMNS} FROM curated "
        f"UNION ALL SELECT {CROSSWALK_COLUMNS} FROM similarity_link"
    )
    return con.table("crosswalk"), coverage(con, "crosswalk", tables)


def _entity_counts(tables: Mapping[str, Path]) -> list[tuple[str, str | None, str]]:
    """(source, entity kind or None for every kind, SQL counting the entities)."""
    counts: list[tuple[str, str | None, str]] = []
    if "aou_item" in tables:
        counts.append(("aou", None, "SELECT count(*) FROM aou_item WHERE concept_id > 0"))
    if "ukb_encoding_value" in tables:
        codings = ", ".join(sorted({str(c[0]) for c in CODING_VOCABULARIES}))
        counts.append(
            (
                "ukb",
                "encoding_value",
                f"SELECT count(*) FROM ukb_encoding_value WHERE encoding_id IN ({codings})",
            )
        )
    if "ukb_field" in tables:
        counts.append(("ukb", "field", "SELECT count(*) FROM ukb_field"))
    if "dbgap_variable" in tables:
        counts.append(("dbgap", "variable", "SELECT count(*) FROM dbgap_variable"))
    return counts


def coverage(
    con: duckdb.DuckDBPyConnection, crosswalk: str, tables: Mapping[str, Path]
) -> dict[str, Any]:
    """Share of each source's entities linked, overall and by method: All of Us items
    with a concept id, UK Biobank coding values of :data:`CODING_VOCABULARIES`' codings,
    UK Biobank fields and dbGaP variables."""
    blocks: dict[str, Any] = {}
    for source, kind, total_sql in _entity_counts(tables):
        total = int(con.sql(total_sql).fetchall()[0][0])
        where, args = "source = ?", [source]
        if kind is not None:
            where += " AND entity_kind = ?"
            args.append(kind)
        linked = con.execute(
            f"SELECT count(DISTINCT entity_id) FROM {crosswalk} WHERE {where}", args
        ).fetchall()[0][0]
        by_method = con.execute(
            f"SELECT method, count(DISTINCT entity_id) FROM {crosswalk} WHERE {where} "
            "GROUP BY 1 ORDER BY 1",
            args,
        ).fetchall()
        blocks[f"{source}_{kind or 'item'}"] = {
            "entities": total,
            "linked": int(linked),
            "share_linked": _share(linked, total),
            "by_method": {m: {"linked": int(n), "share": _share(n, total)} for m, n in by_method},
        }
    return {"similarity_min_cosine": STRONG_COSINE, "sources": blocks}


def _share(part: int, whole: int) -> float:
    return round(part / whole, 6) if whole else 0.0
