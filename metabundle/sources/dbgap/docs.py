"""Search documents of dbGaP: studies, datasets, variables and document titles.

Titles and embedding texts follow the QueryGaP retrieval contract: variables and
datasets are embedded by their descriptions with the name as fallback, documents by
their titles only (their contents are not indexed). Identifiers are the lower-cased
accessions, full and base (and variable names), which resolve before any ranking.
"""

from __future__ import annotations

import duckdb

from metabundle.sources.base import SearchDocContext

SEARCH_DOCS_SQL = """
SELECT 'dbgap:study:' || study_accession AS doc_id,
       'study' AS kind,
       study_accession AS entity_id,
       name AS title,
       concat_ws(' | ', description, nullif(array_to_string(diseases, '; '), ''),
                 nullif(array_to_string(related_terms, '; '), '')) AS body,
       concat_ws('. ', name, description) AS embed_text,
       canonical_url,
       parent_study_accession AS parent_id,
       study_accession AS study_id,
       list_sort(list_distinct([lower(study_accession), lower(study_base)]
                               || list_transform(acronyms, lambda a: lower(a)))) AS identifiers
FROM dbgap_study
UNION ALL
SELECT 'dbgap:dataset:' || dataset_id,
       'dataset',
       dataset_id,
       name,
       description,
       coalesce(description, name),
       canonical_url,
       study_accession,
       study_accession,
       [lower(dataset_accession), lower(dataset_base || '.v' || dataset_version),
        lower(dataset_base)]
FROM dbgap_dataset
UNION ALL
SELECT 'dbgap:variable:' || v.variable_id,
       'variable',
       v.variable_id,
       coalesce(v.description, v.name),
       concat_ws(' | ', v.name, v.units, d.name, s.name),
       coalesce(v.description, v.name),
       v.canonical_url,
       v.dataset_accession,
       v.study_accession,
       list_sort(list_distinct([lower(v.variable_accession),
                                lower(v.variable_base || '.v' || v.variable_version),
                                lower(v.variable_base), lower(v.name)]))
FROM dbgap_variable v
JOIN dbgap_dataset d USING (dataset_id)
JOIN dbgap_study s ON s.study_accession = v.study_accession
UNION ALL
SELECT 'dbgap:document:' || document_id,
       'document',
       document_id,
       title,
       NULL,
       title,
       canonical_url,
       study_accession,
       study_accession,
       [lower(document_accession), lower(document_base)]
FROM dbgap_document
"""


def search_docs(ctx: SearchDocContext) -> duckdb.DuckDBPyRelation:
    """One document per study version, dataset, variable and study document."""
    return ctx.sql(SEARCH_DOCS_SQL)
