"""Search inside one dbGaP study version: ranking of its variables, datasets or
documents, and the result items with their provenance and, on request, statistics.

Ranking follows the QueryGaP contract through the ``dbgap_catalog`` and
``dbgap_documents`` policies of :mod:`metabundle.search.ranking.policies`: variables
and datasets by BM25 keyword, semantic (description embeddings, name fallback) or
hybrid 0.3 keyword / 0.7 semantic; documents by a case-insensitive title substring
(keyword) and title-only embeddings (semantic). The study scope is a mask over
``search_doc.study_id``, applied before any candidate limit.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from metabundle.search.jsonsafe import to_json_value, without_nulls
from metabundle.search.ranking.pipeline import rank
from metabundle.search.ranking.policies import DBGAP_DOCUMENTS, DBGAP_VARIABLES
from metabundle.search.release import Release
from metabundle.search.retrieval import Hit, Retrieval, documents, mask_from_sql
from metabundle.search.services.dbgap.studies import study_index

DESCRIPTION_CHARS = 200
MAX_CONSENT_GROUPS = 12
MAX_VALUES = 20

VARIABLE_SQL = """
SELECT v.variable_id AS id, v.variable_accession AS accession, v.name, v.description,
       v.type, v.units, v.logical_min, v.logical_max, v.collection_interval, v.value_count,
       v.is_unique_key, v.has_stats, v.metadata_source, v.dataset_id,
       d.name AS dataset_name, d.source_file, d.text_encoding
FROM dbgap_variable v JOIN dbgap_dataset d USING (dataset_id)
WHERE v.variable_id IN (SELECT unnest(?::VARCHAR[]))
"""
DATASET_SQL = """
SELECT dataset_id AS id, dataset_accession AS accession, name, description,
       table_study_accession, variable_count, has_var_report, unique_keys, date_created,
       metadata_source, source_file, text_encoding
FROM dbgap_dataset
WHERE dataset_id IN (SELECT unnest(?::VARCHAR[]))
"""
DOCUMENT_SQL = """
SELECT document_id AS id, document_accession AS accession, description, file_name,
       document_type, create_date, mod_date, annotated_variable_count, content_indexed,
       xml_url
FROM dbgap_document
WHERE document_id IN (SELECT unnest(?::VARCHAR[]))
"""
DETAIL_SQL = {"variable": VARIABLE_SQL, "dataset": DATASET_SQL, "document": DOCUMENT_SQL}

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
VALUES_SQL = """
SELECT variable_id, kind, code, value, count
FROM dbgap_variable_value_count
WHERE variable_id IN (SELECT unnest(?::VARCHAR[])) AND consent_group = 'total'
ORDER BY variable_id, value_order
"""


# -- ranking --------------------------------------------------------------------------------


def scope_mask(release: Release, kind: str, study_id: str) -> np.ndarray:
    """The ``kind`` documents of one study version."""
    return mask_from_sql(
        release, "source = 'dbgap' AND kind = ? AND study_id = ?", [kind, study_id]
    )


def rank_in_study(
    release: Release,
    kind: str,
    study_id: str,
    query: str,
    method: str,
    limit: int,
    explain: bool = False,
) -> tuple[list[Hit], Retrieval]:
    """Hits of ``kind`` in ``study_id`` and the retrieval block."""
    return rank(
        release,
        query,
        policy=DBGAP_DOCUMENTS if kind == "document" else DBGAP_VARIABLES,
        method=method,
        mask=scope_mask(release, kind, study_id),
        limit=limit,
        explain=explain,
    )


# -- result items ---------------------------------------------------------------------------


def _short(text: str | None) -> str | None:
    if text is None or len(text) <= DESCRIPTION_CHARS:
        return text
    return text[: DESCRIPTION_CHARS - 1] + "…"


def _description(text: str | None, title: str) -> str | None:
    """The description, shortened, unless it only repeats the title."""
    return None if text == title else _short(text)


def _details(release: Release, kind: str, ids: list[str]) -> dict[str, dict[str, Any]]:
    if not ids:
        return {}
    return {row["id"]: row for row in release.query_dicts(DETAIL_SQL[kind], [ids])}


def _encoding(encoding: str | None) -> str | None:
    """The source file's text encoding when it is not UTF-8 (the default, left out)."""
    return None if encoding in (None, "utf-8") else encoding


def variable_provenance(detail: dict[str, Any]) -> dict[str, Any]:
    """Where a variable was read from, without empty fields: the var_report file name
    is not kept when the variable came from a data dictionary, and
    ``stats_file_status`` says why a statistics file is absent."""
    from_report = detail["metadata_source"] == "var_report"
    if from_report:
        stats_file, status = detail["source_file"], "retained"
    elif detail["has_stats"]:
        stats_file, status = None, "not_retained"
    else:
        stats_file, status = None, "no_var_report"
    return without_nulls(
        {
            "metadata_source": detail["metadata_source"],
            "file": detail["source_file"],
            "text_encoding": _encoding(detail["text_encoding"]),
            "stats_table": "dbgap_variable_stat" if detail["has_stats"] else None,
            "stats_file": stats_file,
            "stats_file_status": None if status == "retained" else status,
        }
    )


def dataset_provenance(detail: dict[str, Any]) -> dict[str, Any]:
    return without_nulls(
        {
            "metadata_source": detail["metadata_source"],
            "file": detail["source_file"],
            "text_encoding": _encoding(detail["text_encoding"]),
        }
    )


def document_provenance(study_id: str) -> dict[str, Any]:
    """Documents come from the study version's GapExchange XML, whose file name the
    build does not keep."""
    return {
        "metadata_source": "gap_exchange",
        "file_status": "not_retained",
        "listed_by": f"GapExchange study XML of {study_id}",
    }


def _kind_fields(kind: str, detail: dict[str, Any], study_id: str) -> dict[str, Any]:
    if kind == "variable":
        return {
            "name": detail["name"],
            "dataset_name": detail["dataset_name"],
            "type": detail["type"],
            "units": detail["units"],
            "logical_min": detail["logical_min"],
            "logical_max": detail["logical_max"],
            "collection_interval": detail["collection_interval"],
            "coded_value_count": detail["value_count"],
            "is_unique_key": detail["is_unique_key"] or None,  # only a key says so
            "provenance": variable_provenance(detail),
        }
    if kind == "dataset":
        return {
            "name": detail["name"],
            "table_study_id": detail["table_study_accession"],
            "variable_count": detail["variable_count"],
            "has_var_report": detail["has_var_report"],
            "unique_keys": detail["unique_keys"],
            "date_created": detail["date_created"],
            "provenance": dataset_provenance(detail),
        }
    return {
        "document_type": detail["document_type"],
        "file_name": detail["file_name"],
        "create_date": detail["create_date"],
        "mod_date": detail["mod_date"],
        "annotated_variable_count": detail["annotated_variable_count"],
        "content_indexed": bool(detail["content_indexed"]),
        "xml_url": detail["xml_url"],
        "provenance": document_provenance(study_id),
    }


def result_items(release: Release, kind: str, hits: list[Hit]) -> list[dict[str, Any]]:
    """One item per hit: the shared fields, the kind's own fields and provenance. Null
    fields are left out (``is_unique_key`` appears only on a key), and so is a
    description that only repeats the title; a
    variable's dataset is ``parent_id`` (its id is ``study_id/parent_id``) and its
    provenance's ``stats_table`` says whether it has statistics."""
    rows = documents(release, [h.docno for h in hits])
    details = _details(release, kind, [rows[h.docno]["entity_id"] for h in hits])
    studies = study_index(release).by_id
    items = []
    for position, hit in enumerate(hits, start=1):
        row = rows[hit.docno]
        detail = details[row["entity_id"]]
        item = {
            "rank": position,
            "source": "dbgap",
            "kind": kind,
            "id": row["entity_id"],
            "accession": detail["accession"],
            "study_id": row["study_id"],
            "parent_id": row["parent_id"],
            "title": row["title"],
            **without_nulls({"description": _description(detail["description"], row["title"])}),
            "canonical_url": row["canonical_url"],
            **({"synthetic": True} if studies[row["study_id"]].synthetic else {}),
            "scores": hit.scores(),
            **without_nulls(_kind_fields(kind, detail, row["study_id"])),
        }
        items.append(to_json_value(item))
    return items


# -- statistics -----------------------------------------------------------------------------


def _stat(row: dict[str, Any]) -> dict[str, Any]:
    """The statistics a report gives for one group (absent ones left out)."""
    return {name: row[name] for name in STAT_FIELDS if row[name] is not None}


def variable_stats(release: Release, variable_ids: list[str]) -> dict[str, dict[str, Any]]:
    """Summary statistics of each variable from its variable report: all subjects,
    per consent group (capped) and the value counts for all subjects (capped)."""
    stats: dict[str, dict[str, Any]] = {
        vid: {
            "available": False,
            "status": "no variable report (var_report.xml) was read for this variable",
        }
        for vid in variable_ids
    }
    if not variable_ids:
        return stats
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in release.query_dicts(STATS_SQL, [variable_ids]):
        groups.setdefault(row["variable_id"], []).append(row)
    values: dict[str, list[dict[str, Any]]] = {}
    for row in release.query_dicts(VALUES_SQL, [variable_ids]):
        values.setdefault(row.pop("variable_id"), []).append(row)
    for vid, rows in groups.items():
        total = next((r for r in rows if r["consent_group"] == "total"), None)
        consents = [
            {"consent_group": r["consent_group"], **_stat(r)}
            for r in rows
            if r["consent_group"] != "total"
        ]
        counted = values.get(vid, [])
        stats[vid] = to_json_value(
            {
                "available": True,
                "source": "var_report",
                "tables": ["dbgap_variable_stat", "dbgap_variable_value_count"],
                "total": None if total is None else _stat(total),
                "consent_groups": {
                    "total": len(consents),
                    "items": consents[:MAX_CONSENT_GROUPS],
                    "truncated": len(consents) > MAX_CONSENT_GROUPS,
                },
                "values": {
                    "total": len(counted),
                    "items": counted[:MAX_VALUES],
                    "truncated": len(counted) > MAX_VALUES,
                },
            }
        )
    return stats
