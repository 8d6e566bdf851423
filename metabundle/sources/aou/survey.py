"""Survey items: modules, topics, questions and answers, with branching and family
history edges, from the Data Browser survey CSVs and the answer keys.

Reads the views ``in_module``, ``in_metadata``, ``in_pfhh``, ``in_fmh``,
``in_answer_key``, ``module_pages`` and ``omop_concept``; writes the temp tables
``survey_items``, ``survey_edges``, ``survey_links`` and ``survey_aliases`` in the shape
:mod:`.assemble` expects (items keyed by kind and native id, not yet by result id).

Questions are the ``QUESTION`` rows of ``survey_metadata.csv``, one item per question
concept however many branches (paths) it is asked under. Its topic is the nearest
``TOPIC`` row before it in the same module, as the Data Browser API groups them.
Answers come from the omop2survey answer key, then ``pfhh_qa_metadata.csv``; a question
neither lists gets the answer labels the Data Browser stores with it (no concept ids).
The key's label of an answer it failed to recode ("Value error - Yes") gives way to the
answer's own words. Questions the key names but ``survey_metadata.csv`` does not list
(the COVID-19 surveys, the retired Family Health History) are left out, and the coverage
says so.
"""

from __future__ import annotations

import duckdb

from metabundle.errors import ParseError
from metabundle.sources.aou.api import API_PREFIX
from metabundle.sources.aou.catalog import PUBLIC_API
from metabundle.sources.aou.inputs import SURVEY_METADATA
from metabundle.sources.base import Reporter

NAME = "aou"

QUESTION_ROWS = """
CREATE OR REPLACE TEMP TABLE question_rows AS
SELECT r.*, string_split(r.path, '.') AS steps,
       last_value(CASE WHEN r.type = 'TOPIC' THEN r.concept_id END IGNORE NULLS) OVER (
           PARTITION BY r.survey_concept_id ORDER BY r.id
           ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS topic_concept_id
FROM (
    -- the path is its (question, answer) pairs, then the row's own concept id; this
    -- repairs the rows whose path ends in '.' or in another concept
    SELECT m.* EXCLUDE (path), m.path AS source_path,
           array_to_string(list_append(
               pairs[1:(len(pairs) // 2) * 2], CAST(m.concept_id AS VARCHAR)), '.') AS path
    FROM (SELECT *, string_split(rtrim(path, '.'), '.') AS pairs FROM in_metadata) m
    WHERE m.survey_concept_id IN (SELECT concept_id FROM in_module)
) r
"""

QUESTIONS = """
CREATE OR REPLACE TEMP TABLE questions AS
SELECT r.concept_id, r.survey_concept_id,
       arg_min(r.concept_name, r.id) AS title,
       arg_min(r.concept_code, r.id) AS concept_code,
       min(r.order_number) AS position,
       list_sort(list(DISTINCT r.path)) AS question_paths,
       arg_min(r.path, lpad(CAST(len(r.steps) AS VARCHAR), 4, '0') || r.path) AS shortest_path,
       arg_min(r.topic_concept_id, r.id) AS topic_concept_id,
       min(r.branching_logic) AS branching_logic
FROM question_rows r
WHERE r.type = 'QUESTION'
GROUP BY r.concept_id, r.survey_concept_id
"""

TOPICS = """
CREATE OR REPLACE TEMP TABLE topics AS
SELECT concept_id, survey_concept_id, arg_min(concept_name, id) AS title,
       arg_min(concept_code, id) AS concept_code, min(order_number) AS position
FROM question_rows
WHERE type = 'TOPIC'
GROUP BY concept_id, survey_concept_id
"""

ANSWERS = r"""
CREATE OR REPLACE TEMP TABLE answers AS
WITH keyed AS (
    -- the key's cleaned label, unless it failed to recode the answer ("Value error -
    -- Yes", numeric 90000): then the answer as the survey words it, and no value
    SELECT question_concept_id, answer_concept_id,
           coalesce(CASE WHEN NOT recode_failed THEN answer_text END, answer,
                    CAST(answer_concept_id AS VARCHAR)) AS title,
           CASE WHEN NOT recode_failed THEN answer_numeric END AS answer_value,
           select_all = 1 AS select_all, 0 AS preference
    FROM (SELECT *, coalesce(starts_with(answer_text, 'Value error'), false) AS recode_failed
          FROM in_answer_key)
    UNION ALL
    SELECT question_concept_id, answer_concept_id, regexp_replace(answer, '^.*\? - ', ''),
           NULL, NULL, 1
    FROM in_pfhh
), listed AS (
    SELECT * EXCLUDE (preference) FROM keyed
    WHERE question_concept_id IN (SELECT concept_id FROM questions)
    QUALIFY row_number() OVER (
        PARTITION BY question_concept_id, answer_concept_id
        ORDER BY preference, title, answer_value, select_all) = 1
), labels AS (
    SELECT DISTINCT r.concept_id AS question_concept_id, CAST(NULL AS BIGINT),
           trim(t.label), CAST(NULL AS BIGINT), CAST(NULL AS BOOLEAN)
    FROM question_rows r, unnest(string_split(r.question_string, '|')) AS t(label)
    WHERE r.type = 'QUESTION' AND trim(t.label) <> ''
      AND r.concept_id NOT IN (SELECT question_concept_id FROM listed)
), choices AS (
    SELECT * FROM listed UNION ALL SELECT * FROM labels
)
SELECT c.*,
       CAST(c.question_concept_id AS VARCHAR) || ':' || coalesce(
           CAST(c.answer_concept_id AS VARCHAR), 'label:' || c.title) AS native_id,
       CAST(row_number() OVER (
           PARTITION BY c.question_concept_id
           ORDER BY c.answer_value < 0,
                    coalesce(c.answer_value, TRY_CAST(c.title AS BIGINT)) NULLS LAST,
                    c.title, c.answer_concept_id) AS INTEGER) AS position
FROM choices c
"""

PATH_TEXT = """
CREATE OR REPLACE TEMP TABLE question_path_text AS
WITH steps AS (
    SELECT concept_id, string_split(shortest_path, '.') AS s
    FROM questions WHERE contains(shortest_path, '.')
), exploded AS (
    SELECT concept_id, i, CAST(s[i] AS BIGINT) AS step, TRY_CAST(s[i - 1] AS BIGINT) AS previous
    FROM steps, unnest(range(1, len(s) + 1)) AS t(i)
)
SELECT e.concept_id,
       string_agg(coalesce(CASE WHEN e.i % 2 = 1 THEN q.title ELSE a.title END,
                           CAST(e.step AS VARCHAR)), ' > ' ORDER BY e.i) AS path_text
FROM exploded e
LEFT JOIN questions q ON e.i % 2 = 1 AND q.concept_id = e.step
LEFT JOIN answers a ON e.i % 2 = 0 AND a.question_concept_id = e.previous
     AND a.answer_concept_id = e.step
GROUP BY e.concept_id
"""

ITEMS = """
CREATE OR REPLACE TEMP TABLE survey_items AS
SELECT 'survey_module' AS kind, CAST(m.concept_id AS VARCHAR) AS native_id,
       NULL AS parent_kind, NULL AS parent_native_id, 'navigation' AS search_role,
       NULL AS variable_class, m.name AS title, NULL AS subtitle, m.description,
       m.concept_id, NULL AS concept_code, m.concept_id AS survey_concept_id,
       m.name AS survey_name, NULL AS topic, NULL AS question_paths,
       NULL AS question_path_text, NULL AS answer_value, NULL AS select_all,
       m.order_number AS position, p.url AS canonical_url
FROM in_module m JOIN module_pages p USING (concept_id)
UNION ALL
SELECT 'survey_topic', CAST(t.concept_id AS VARCHAR), 'survey_module',
       CAST(t.survey_concept_id AS VARCHAR), 'navigation', NULL, t.title, m.name, NULL,
       t.concept_id, t.concept_code, t.survey_concept_id, m.name, NULL, NULL, NULL, NULL,
       NULL, t.position, p.url
FROM topics t JOIN in_module m ON m.concept_id = t.survey_concept_id
JOIN module_pages p ON p.concept_id = t.survey_concept_id
UNION ALL
SELECT 'question', CAST(q.concept_id AS VARCHAR), 'survey_module',
       CAST(q.survey_concept_id AS VARCHAR), 'variable',
       CASE WHEN s.any_select_all THEN 'multi_select'
            WHEN NOT s.any_select_all THEN 'single_select' END,
       q.title, concat_ws(' > ', m.name, t.title), q.branching_logic, q.concept_id,
       q.concept_code, q.survey_concept_id, m.name, t.title, q.question_paths, pt.path_text,
       NULL, s.any_select_all, q.position, p.url
FROM questions q JOIN in_module m ON m.concept_id = q.survey_concept_id
JOIN module_pages p ON p.concept_id = q.survey_concept_id
LEFT JOIN question_path_text pt ON pt.concept_id = q.concept_id
LEFT JOIN (SELECT question_concept_id, bool_or(select_all) AS any_select_all
           FROM answers GROUP BY 1) s ON s.question_concept_id = q.concept_id
LEFT JOIN topics t ON t.concept_id = q.topic_concept_id
     AND t.survey_concept_id = q.survey_concept_id
UNION ALL
SELECT 'answer', a.native_id, 'question', CAST(q.concept_id AS VARCHAR), 'support', NULL,
       a.title, q.title, NULL, a.answer_concept_id, NULL, q.survey_concept_id, m.name, NULL,
       NULL, NULL, a.answer_value, a.select_all, a.position, p.url
FROM answers a JOIN questions q ON q.concept_id = a.question_concept_id
JOIN in_module m ON m.concept_id = q.survey_concept_id
JOIN module_pages p ON p.concept_id = q.survey_concept_id
"""

ENRICH = """
CREATE OR REPLACE TEMP TABLE survey_items AS
SELECT i.* EXCLUDE (concept_code), 'survey' AS variable_type, 'Observation' AS domain,
       CASE WHEN i.concept_id IS NOT NULL THEN 'PPI' END AS vocabulary,
       coalesce(i.concept_code, c.concept_code) AS concept_code
FROM survey_items i
LEFT JOIN omop_concept c ON c.concept_id = i.concept_id AND c.vocabulary_id = 'PPI'
"""

BRANCHES = """
SELECT DISTINCT 'question' AS from_kind, s[-3] AS from_native_id, 'question' AS to_kind,
       CAST(concept_id AS VARCHAR) AS to_native_id, 'branches_to' AS edge_kind,
       s[-2] AS qualifier, 'answer' AS via_kind, s[-3] || ':' || s[-2] AS via_native_id,
       CAST(NULL AS INTEGER) AS position
FROM (SELECT concept_id, string_split(unnest(question_paths), '.') AS s FROM questions)
WHERE len(s) >= 3
"""

FAMILY_ANSWERS = """
SELECT DISTINCT 'question' AS from_kind,
       CAST(f.observation_source_concept_id AS VARCHAR) AS from_native_id,
       'answer' AS to_kind, a.native_id AS to_native_id, 'family_member_answer' AS edge_kind,
       CAST(f.value_source_concept_id AS VARCHAR) AS qualifier, 'answer' AS via_kind,
       CAST(f.observation_source_concept_id AS VARCHAR) || ':'
           || CAST(f.value_source_concept_id AS VARCHAR) AS via_native_id,
       CAST(NULL AS INTEGER) AS position
FROM in_fmh f, unnest(string_split(f.fmh_concepts_to_count, ',')) AS t(member)
JOIN answers a ON a.answer_concept_id = CAST(t.member AS BIGINT)
"""

EDGES = f"""
CREATE OR REPLACE TEMP TABLE survey_edge_candidates AS
SELECT 'question' AS from_kind, CAST(question_concept_id AS VARCHAR) AS from_native_id,
       'answer' AS to_kind, native_id AS to_native_id, 'has_answer' AS edge_kind,
       '' AS qualifier, NULL AS via_kind, NULL AS via_native_id, position
FROM answers
UNION ALL
SELECT 'survey_topic', CAST(topic_concept_id AS VARCHAR), 'question',
       CAST(concept_id AS VARCHAR), 'topic_has_question', '', NULL, NULL, position
FROM questions WHERE topic_concept_id IS NOT NULL
UNION ALL ({BRANCHES})
UNION ALL ({FAMILY_ANSWERS})
"""

LINKS = f"""
CREATE OR REPLACE TEMP TABLE survey_links AS
SELECT 'survey_module' AS kind, CAST(concept_id AS VARCHAR) AS native_id,
       'survey_pdf' AS link_kind, pdf AS url FROM module_pages
UNION ALL
SELECT 'survey_module', CAST(concept_id AS VARCHAR), 'survey_pdf_spanish', pdf_spanish
FROM module_pages
UNION ALL
SELECT 'survey_module', CAST(concept_id AS VARCHAR), 'public_api',
       '{PUBLIC_API}{API_PREFIX}/survey-questions?survey_concept_id=' || concept_id
FROM module_pages
UNION ALL
SELECT 'question', CAST(concept_id AS VARCHAR), 'public_api',
       '{PUBLIC_API}{API_PREFIX}/survey-question-results?survey_concept_id='
           || survey_concept_id || '&question_concept_id=' || concept_id
           || '&questionPath=' || shortest_path
FROM questions
"""

ALIASES = """
CREATE OR REPLACE TEMP TABLE survey_aliases AS
SELECT 'survey_module' AS kind, CAST(concept_id AS VARCHAR) AS native_id,
       route AS identifier, 'alias' AS identifier_kind
FROM module_pages
"""


def _first(con: duckdb.DuckDBPyConnection, query: str) -> tuple[object, ...] | None:
    rows = con.sql(query + " LIMIT 1").fetchall()
    return rows[0] if rows else None


def _check_questions(con: duckdb.DuckDBPyConnection, report: Reporter) -> None:
    """A question may be in one module only; repaired paths are reported."""
    twice = _first(
        con,
        "SELECT concept_id, list_sort(list(DISTINCT survey_concept_id)) FROM question_rows "
        "WHERE type = 'QUESTION' GROUP BY 1 HAVING count(DISTINCT survey_concept_id) > 1 "
        "ORDER BY 1",
    )
    if twice is not None:
        raise ParseError(
            NAME, SURVEY_METADATA.key, f"question {twice[0]} is listed in modules {twice[1]}"
        )
    repaired = con.sql(
        "SELECT list(id ORDER BY id) FROM question_rows WHERE path <> source_path"
    ).fetchall()[0][0]
    if repaired:
        ids = ", ".join(str(row_id) for row_id in repaired)
        report(
            f"repaired question paths that did not end in the question's own concept (ids {ids})"
        )


def _report_unlisted(con: duckdb.DuckDBPyConnection, report: Reporter) -> None:
    rows = con.sql(
        "SELECT count(*), list(DISTINCT survey_concept_id ORDER BY survey_concept_id) "
        "FROM in_metadata WHERE survey_concept_id NOT IN (SELECT concept_id FROM in_module)"
    ).fetchall()
    if rows[0][0]:
        report(
            f"skipped {rows[0][0]} survey rows of modules not in survey_module.csv: {rows[0][1]}"
        )


def _keep_resolvable_edges(con: duckdb.DuckDBPyConnection, report: Reporter) -> None:
    """Keep edges whose ends are both items and report the others (references to
    questions or answers the Data Browser does not list)."""
    con.execute(
        """
        CREATE OR REPLACE TEMP TABLE survey_edges AS
        SELECT e.* EXCLUDE (via_kind, via_native_id),
               v.kind AS via_kind, v.native_id AS via_native_id
        FROM survey_edge_candidates e
        SEMI JOIN survey_items f ON f.kind = e.from_kind AND f.native_id = e.from_native_id
        SEMI JOIN survey_items t ON t.kind = e.to_kind AND t.native_id = e.to_native_id
        LEFT JOIN survey_items v ON v.kind = e.via_kind AND v.native_id = e.via_native_id
        """
    )
    count = "SELECT edge_kind, count(*) FROM {} GROUP BY 1"
    offered = dict(con.sql(count.format("survey_edge_candidates")).fetchall())
    kept = dict(con.sql(count.format("survey_edges")).fetchall())
    for edge_kind in sorted(offered):
        missing = offered[edge_kind] - kept.get(edge_kind, 0)
        if missing:
            report(
                f"left out {missing:,} {edge_kind} links to questions or answers the Data "
                "Browser does not list"
            )


def build_survey(con: duckdb.DuckDBPyConnection, report: Reporter) -> None:
    """Create the survey item, edge, link and alias tables on ``con``."""
    _report_unlisted(con, report)
    con.execute(QUESTION_ROWS)
    _check_questions(con, report)
    for statement in (QUESTIONS, TOPICS, ANSWERS, PATH_TEXT, ITEMS, ENRICH, EDGES, LINKS, ALIASES):
        con.execute(statement)
    _keep_resolvable_edges(con, report)
