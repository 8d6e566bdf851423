"""Domain, EHR concept and physical measurement items, and the unit map.

The Data Browser's EHR domains (Conditions, Drug Exposures, Labs & Measurements,
Procedures) list concepts of the release's CDR; the public metadata carries no list of
them, so the EHR items are the valid concepts of those OMOP domains in the build's
OMOP vocabulary (``omop_concept``), each with its role: standard (S), classification
(C) or source (non-standard). ``Maps to`` and ``Subsumes`` relationships between them
become edges. Physical measurements are the Data Browser's fixed list
(:data:`.catalog.PHYSICAL_MEASUREMENTS`), linked to the standard LOINC concept each is
stored under when the vocabulary has it.

Reads the views ``in_domain``, ``domain_pages``, ``pm_catalog``, ``omop_concept`` and
``omop_concept_relationship``; writes the temp tables ``clinical_items``,
``clinical_edges``, ``clinical_links`` and ``clinical_aliases``.
"""

from __future__ import annotations

import duckdb

from metabundle.errors import ParseError
from metabundle.sources.aou.catalog import API_PREFIX, PM_DOMAIN, PUBLIC_API
from metabundle.sources.aou.inputs import DOMAIN_INFO

NAME = "aou"
ANALYSIS = f"{PUBLIC_API}{API_PREFIX}/concept-analysis-results?concept-ids="

EHR = """
CREATE OR REPLACE TEMP TABLE ehr_concepts AS
SELECT c.concept_id, c.concept_name, c.domain_id, c.vocabulary_id, c.concept_class_id,
       c.standard_concept, c.concept_code, d.domain_id AS page_domain_id, d.name AS page_name,
       p.url AS page_url,
       CASE c.standard_concept WHEN 'S' THEN 'standard' WHEN 'C' THEN 'classification'
            ELSE 'source' END AS role
FROM omop_concept c
JOIN domain_pages p ON p.omop_domain = c.domain_id
JOIN in_domain d ON d.domain_id = p.domain_id
WHERE c.invalid_reason IS NULL
"""

PM_STANDARD = """
CREATE OR REPLACE TEMP TABLE pm_standard AS
SELECT pm.concept_id, e.concept_id AS standard_concept_id
FROM pm_catalog pm
JOIN ehr_concepts e ON e.vocabulary_id = 'LOINC' AND e.concept_code = pm.loinc
    AND e.standard_concept = 'S'
"""

ITEMS = f"""
CREATE OR REPLACE TEMP TABLE clinical_items AS
SELECT 'domain' AS kind, d.domain_id AS native_id, NULL AS parent_kind,
       NULL AS parent_native_id, 'navigation' AS search_role, p.variable_type,
       NULL AS variable_class, d.name AS title, NULL AS subtitle, d.description,
       d.domain_id AS domain, NULL AS vocabulary, CAST(NULL AS BIGINT) AS concept_id,
       NULL AS concept_code, NULL AS standard_concept, NULL AS ehr_role,
       NULL AS concept_class, CAST(NULL AS INTEGER) AS position, p.url AS canonical_url
FROM in_domain d JOIN domain_pages p USING (domain_id)
UNION ALL
SELECT 'ehr_concept', CAST(concept_id AS VARCHAR), 'domain', page_domain_id, 'variable',
       'ehr', concept_class_id, concept_name,
       concat_ws(' · ', page_name, vocabulary_id || ' ' || concept_code, role), NULL,
       domain_id, vocabulary_id, concept_id, concept_code, standard_concept, role,
       concept_class_id, NULL, page_url || '/' || CAST(concept_id AS VARCHAR)
FROM ehr_concepts
UNION ALL
SELECT 'physical_measurement', CAST(pm.concept_id AS VARCHAR), 'domain', '{PM_DOMAIN}',
       'variable', 'physical_measurement', pm.variable_class, pm.title,
       'Physical measurement · ' || pm.group_name, NULL, 'Measurement', 'PPI',
       pm.concept_id, c.concept_code, NULL, NULL, NULL, pm.position, pm.url
FROM pm_catalog pm
LEFT JOIN omop_concept c ON c.concept_id = pm.concept_id AND c.vocabulary_id = 'PPI'
"""

EDGES = """
CREATE OR REPLACE TEMP TABLE clinical_edges AS
SELECT 'ehr_concept' AS from_kind, CAST(r.concept_id_1 AS VARCHAR) AS from_native_id,
       'ehr_concept' AS to_kind, CAST(r.concept_id_2 AS VARCHAR) AS to_native_id,
       CASE r.relationship_id WHEN 'Maps to' THEN 'maps_to' ELSE 'subsumes' END AS edge_kind,
       '' AS qualifier, NULL AS via_kind, NULL AS via_native_id,
       CAST(NULL AS INTEGER) AS position
FROM omop_concept_relationship r
SEMI JOIN ehr_concepts a ON a.concept_id = r.concept_id_1
SEMI JOIN ehr_concepts b ON b.concept_id = r.concept_id_2
WHERE r.relationship_id IN ('Maps to', 'Subsumes') AND r.invalid_reason IS NULL
  AND r.concept_id_1 <> r.concept_id_2
UNION ALL
SELECT 'physical_measurement', CAST(concept_id AS VARCHAR), 'ehr_concept',
       CAST(standard_concept_id AS VARCHAR), 'maps_to', '', NULL, NULL, NULL
FROM pm_standard
"""

LINKS = f"""
CREATE OR REPLACE TEMP TABLE clinical_links AS
SELECT 'ehr_concept' AS kind, CAST(concept_id AS VARCHAR) AS native_id,
       'public_api' AS link_kind,
       '{ANALYSIS}' || CAST(concept_id AS VARCHAR) || '&domain-id=' || domain_id AS url
FROM ehr_concepts
UNION ALL
SELECT 'physical_measurement', CAST(concept_id AS VARCHAR), 'public_api',
       '{ANALYSIS}' || CAST(concept_id AS VARCHAR)
FROM pm_catalog
"""

ALIASES = """
CREATE OR REPLACE TEMP TABLE clinical_aliases AS
SELECT 'domain' AS kind, domain_id AS native_id, alias AS identifier,
       'alias' AS identifier_kind
FROM domain_pages WHERE domain_id IN (SELECT domain_id FROM in_domain)
UNION ALL
SELECT 'physical_measurement', CAST(concept_id AS VARCHAR), group_route, 'alias'
FROM pm_catalog
UNION ALL
SELECT 'physical_measurement', CAST(concept_id AS VARCHAR), 'loinc:' || loinc,
       'vocabulary_code'
FROM pm_catalog WHERE loinc IS NOT NULL
"""

UNITS = """
SELECT DISTINCT u.unit_source_value, u.unit_concept_id, c.concept_name AS unit_concept_name
FROM in_unit u LEFT JOIN omop_concept c ON c.concept_id = u.unit_concept_id
"""


def _check_domains(con: duckdb.DuckDBPyConnection) -> None:
    unknown = con.sql(
        "SELECT domain_id FROM in_domain WHERE domain_id NOT IN "
        "(SELECT domain_id FROM domain_pages) ORDER BY 1 LIMIT 1"
    ).fetchall()
    if unknown:
        raise ParseError(
            NAME, DOMAIN_INFO.key, f"domain {unknown[0][0]!r} has no known Data Browser page"
        )


def build_clinical(con: duckdb.DuckDBPyConnection) -> None:
    """Create the domain, EHR and physical measurement tables on ``con``."""
    _check_domains(con)
    for statement in (EHR, PM_STANDARD, ITEMS, EDGES, LINKS, ALIASES):
        con.execute(statement)


def units(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyRelation:
    """The unit map with the unit concepts' names."""
    return con.sql(UNITS)
