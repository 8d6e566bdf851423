"""SQL over the release's ``dbgap_*`` tables that the dbGaP tools read rows with."""

from __future__ import annotations

from typing import Any

from metabundle.search.release import Release

STUDY_INDEX_SQL = """
SELECT study_accession, study_base, version, participant_set, is_current_version,
       current_accession, name, acronyms, text_source, has_variables, dataset_count,
       variable_count, document_count, canonical_url, synthetic,
       split_part(parent_study_accession, '.', 1) AS parent_base
FROM dbgap_study
ORDER BY study_accession
"""
DESCRIBED_SQL = """
SELECT study_accession,
       coalesce(nullif(split_part(parent_study_accession, '.', 1), ''), study_base),
       name, description
FROM dbgap_study
ORDER BY study_accession
"""
CATALOG_COUNTS_SQL = """
SELECT study_id, count(*) FROM search_doc
WHERE source = 'dbgap' AND kind = ? AND list_contains(?, study_id)
GROUP BY study_id
"""
UNBUILT_SQL = """
SELECT study_base, current_accession, name
FROM dbgap_unbuilt_study
WHERE study_base = ?
   OR (? AND (lower(name) LIKE '%' || lower(?) || '%'
              OR list_contains(list_transform(acronyms, lambda a: lower(a)), lower(?))))
ORDER BY study_base
LIMIT 5
"""
DISEASES_SQL = """
SELECT study_accession, diseases FROM dbgap_study
WHERE list_contains(?::VARCHAR[], study_accession)
"""

NAMES_SQL = """
SELECT study_accession, name FROM dbgap_study
WHERE list_contains(?::VARCHAR[], study_accession)
UNION
SELECT dataset_accession, name FROM dbgap_dataset
WHERE list_contains(?::VARCHAR[], dataset_accession)
"""

DATASETS_SQL = """
SELECT dataset_id, dataset_accession AS accession, name, left(description, 300) AS description,
       variable_count, has_var_report, canonical_url
FROM dbgap_dataset
WHERE study_accession = ?
ORDER BY dataset_accession
"""
DOCUMENTS_SQL = """
SELECT document_id, document_accession AS accession, title, document_type, file_name,
       content_indexed, canonical_url
FROM dbgap_document
WHERE study_accession = ?
ORDER BY document_accession
"""

VARIABLE_DETAIL_SQL = """
SELECT v.variable_id AS id, v.variable_accession AS accession, v.name, v.description,
       v.type, v.units, v.logical_min, v.logical_max, v.collection_interval, v.value_count,
       v.is_unique_key, v.has_stats, v.metadata_source, v.dataset_id,
       d.name AS dataset_name, d.source_file, d.text_encoding
FROM dbgap_variable v JOIN dbgap_dataset d USING (dataset_id)
WHERE v.variable_id IN (SELECT unnest(?::VARCHAR[]))
"""
DATASET_DETAIL_SQL = """
SELECT dataset_id AS id, dataset_accession AS accession, name, description,
       table_study_accession, variable_count, has_var_report, unique_keys, date_created,
       metadata_source, source_file, text_encoding
FROM dbgap_dataset
WHERE dataset_id IN (SELECT unnest(?::VARCHAR[]))
"""
DOCUMENT_DETAIL_SQL = """
SELECT document_id AS id, document_accession AS accession, description, file_name,
       document_type, create_date, mod_date, annotated_variable_count, content_indexed,
       xml_url
FROM dbgap_document
WHERE document_id IN (SELECT unnest(?::VARCHAR[]))
"""
DETAIL_SQL = {
    "variable": VARIABLE_DETAIL_SQL,
    "dataset": DATASET_DETAIL_SQL,
    "document": DOCUMENT_DETAIL_SQL,
}

STAT_FIELDS = (
    "calculated_type",
    "n",
    "nulls",
    "mean",
    "median",
    "sd",
    "min",
    "max",
    "mean_count",
    "median_count",
    "min_count",
    "max_count",
    "male_count",
    "female_count",
)
STATS_SQL = f"""
SELECT variable_id, consent_group, {", ".join(STAT_FIELDS)}
FROM dbgap_variable_stat
WHERE variable_id IN (SELECT unnest(?::VARCHAR[]))
ORDER BY variable_id, consent_number NULLS FIRST
"""
VALUE_COUNTS_SQL = """
SELECT variable_id, kind, code, value, count
FROM dbgap_variable_value_count
WHERE variable_id IN (SELECT unnest(?::VARCHAR[])) AND consent_group = 'total'
ORDER BY variable_id, value_order
"""

VARIABLE_SQL = """
SELECT v.variable_id, v.variable_accession, v.name, v.description, v.type, v.units,
       v.logical_min, v.logical_max, v.comment, v.collection_interval, v.value_count,
       v.is_unique_key, v.has_stats, v.metadata_source, v.synthetic, v.canonical_url,
       v.study_accession, v.dataset_id, d.dataset_accession, d.name AS dataset_name,
       d.description AS dataset_description, d.canonical_url AS dataset_url
FROM dbgap_variable v JOIN dbgap_dataset d USING (dataset_id)
WHERE {column} = ?
ORDER BY v.variable_version DESC, v.study_accession DESC
"""
DICTIONARY_VALUES_SQL = """
SELECT value_order, code, label, is_replacement FROM dbgap_variable_value
WHERE variable_id = ? ORDER BY value_order
"""


# -- studies ----------------------------------------------------------------------------


def study_version_rows(release: Release) -> list[tuple[Any, ...]]:
    """Every study version, the columns of the study index, by accession."""
    return release.query(STUDY_INDEX_SQL)


def described_study_rows(release: Release) -> list[tuple[Any, ...]]:
    """Every study version's accession, family (its parent's base, or its own), name and
    description, by accession."""
    return release.query(DESCRIBED_SQL)


def catalog_counts(release: Release, kind: str, study_ids: list[str]) -> dict[str, int]:
    """The number of ``kind`` search documents of each of ``study_ids`` that has any."""
    return {
        study_id: int(count)
        for study_id, count in release.query(CATALOG_COUNTS_SQL, [kind, study_ids])
    }


def unbuilt_studies(
    release: Release, base: str, text: str, by_name: bool
) -> list[tuple[str, str | None, str | None]]:
    """(base, current accession, name) of the studies this release's selection left out
    that ``base`` names or, ``by_name``, whose name or acronym holds ``text``."""
    return [(r[0], r[1], r[2]) for r in release.query(UNBUILT_SQL, [base, by_name, text, text])]


def study_record(release: Release, study_id: str) -> dict[str, Any]:
    """The ``dbgap_study`` row of ``study_id``."""
    return release.query_dicts("SELECT * FROM dbgap_study WHERE study_accession = ?", [study_id])[0]


def study_diseases(release: Release, study_ids: list[str]) -> dict[str, list[str]]:
    """The diseases/focus each of ``study_ids`` lists, blank ones left out."""
    return {
        study_id: [d for d in values or [] if d]
        for study_id, values in release.query(DISEASES_SQL, [study_ids])
    }


def accession_names(release: Release, accessions: list[str]) -> dict[str, str]:
    """The name of each study or dataset accession among ``accessions`` (versioned, as
    search results give them in ``study_id`` and ``parent_id``) that the release holds."""
    return dict(release.query(NAMES_SQL, [accessions] * 2))


def _listed(
    release: Release, sql: str, study_id: str, limit: int
) -> tuple[int, list[dict[str, Any]]]:
    total = int(release.query(f"SELECT count(*) FROM ({sql})", [study_id])[0][0])
    return total, release.query_dicts(f"{sql} LIMIT {limit}", [study_id])


def study_datasets(release: Release, study_id: str, limit: int) -> tuple[int, list[dict[str, Any]]]:
    """How many datasets ``study_id`` has, and the first ``limit`` of them."""
    return _listed(release, DATASETS_SQL, study_id, limit)


def study_documents(
    release: Release, study_id: str, limit: int
) -> tuple[int, list[dict[str, Any]]]:
    """How many documents ``study_id`` has, and the first ``limit`` of them."""
    return _listed(release, DOCUMENTS_SQL, study_id, limit)


# -- catalog entries --------------------------------------------------------------------


def catalog_details(release: Release, kind: str, ids: list[str]) -> dict[str, dict[str, Any]]:
    """The ``kind`` rows (variable, dataset, document) of ``ids``, by id."""
    if not ids:
        return {}
    return {row["id"]: row for row in release.query_dicts(DETAIL_SQL[kind], [ids])}


def stat_rows(release: Release, variable_ids: list[str]) -> list[dict[str, Any]]:
    """The summary statistics of ``variable_ids``: all subjects first, then each
    consent group, variable by variable."""
    return release.query_dicts(STATS_SQL, [variable_ids])


def value_count_rows(release: Release, variable_ids: list[str]) -> list[dict[str, Any]]:
    """The value counts over all subjects of ``variable_ids``, in report order."""
    return release.query_dicts(VALUE_COUNTS_SQL, [variable_ids])


# -- variables --------------------------------------------------------------------------


def variable_rows(release: Release, column: str, value: str) -> list[dict[str, Any]]:
    """The variables whose ``column`` (``v.variable_id``, ``v.variable_accession`` or
    ``v.variable_base``) is ``value``, with their datasets, newest version first."""
    return release.query_dicts(VARIABLE_SQL.format(column=column), [value])


def dictionary_values(release: Release, variable_id: str) -> list[dict[str, Any]]:
    """The data dictionary's coded values of ``variable_id``, in dictionary order."""
    return release.query_dicts(DICTIONARY_VALUES_SQL, [variable_id])
