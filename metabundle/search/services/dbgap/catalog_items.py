"""The result items of a dbGaP catalog search: the fields every hit shares, the fields
of its kind (variable, dataset, document) and where it was read from."""

from __future__ import annotations

from typing import Any

from metabundle.search.jsonsafe import without_nulls
from metabundle.search.release import Release
from metabundle.search.retrieval import Hit, documents
from metabundle.search.services.dbgap.models import (
    DatasetItem,
    DatasetProvenance,
    DocumentItem,
    DocumentProvenance,
    VariableItem,
    VariableProvenance,
)
from metabundle.search.services.dbgap.queries import catalog_details
from metabundle.search.services.dbgap.stats import variable_stats
from metabundle.search.services.dbgap.studies import study_index

DESCRIPTION_CHARS = 200
ITEM_MODELS: dict[str, type[VariableItem | DatasetItem | DocumentItem]] = {
    "variable": VariableItem,
    "dataset": DatasetItem,
    "document": DocumentItem,
}


def _short(text: str | None) -> str | None:
    if text is None or len(text) <= DESCRIPTION_CHARS:
        return text
    return text[: DESCRIPTION_CHARS - 1] + "…"


def _description(text: str | None, title: str) -> str | None:
    """The description, shortened, unless it only repeats the title."""
    return None if text == title else _short(text)


def _encoding(encoding: str | None) -> str | None:
    """The source file's text encoding when it is not UTF-8 (the default, left out)."""
    return None if encoding in (None, "utf-8") else encoding


def variable_provenance(detail: dict[str, Any]) -> VariableProvenance:
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
    return VariableProvenance(
        **without_nulls(
            {
                "metadata_source": detail["metadata_source"],
                "file": detail["source_file"],
                "text_encoding": _encoding(detail["text_encoding"]),
                "stats_table": "dbgap_variable_stat" if detail["has_stats"] else None,
                "stats_file": stats_file,
                "stats_file_status": None if status == "retained" else status,
            }
        )
    )


def dataset_provenance(detail: dict[str, Any]) -> DatasetProvenance:
    return DatasetProvenance(
        **without_nulls(
            {
                "metadata_source": detail["metadata_source"],
                "file": detail["source_file"],
                "text_encoding": _encoding(detail["text_encoding"]),
            }
        )
    )


def document_provenance(study_id: str) -> DocumentProvenance:
    """Documents come from the study version's GapExchange XML, whose file name the
    build does not keep."""
    return DocumentProvenance(
        metadata_source="gap_exchange",
        file_status="not_retained",
        listed_by=f"GapExchange study XML of {study_id}",
    )


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


def result_items(
    release: Release, kind: str, hits: list[Hit], include_stats: bool = False
) -> list[VariableItem | DatasetItem | DocumentItem]:
    """One item per hit: the shared fields, the kind's own fields and provenance, and
    with ``include_stats`` a variable's statistics (datasets and documents have none).
    Null fields are left out (``is_unique_key`` appears only on a key), and so is a
    description that only repeats the title; a
    variable's dataset is ``parent_id`` (its id is ``study_id/parent_id``) and its
    provenance's ``stats_table`` says whether it has statistics."""
    rows = documents(release, [h.docno for h in hits])
    ids = [rows[h.docno]["entity_id"] for h in hits]
    details = catalog_details(release, kind, ids)
    with_stats = include_stats and kind == "variable"
    stats = variable_stats(release, ids) if with_stats else {}
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
            **({"stats": stats[row["entity_id"]]} if with_stats else {}),
        }
        items.append(ITEM_MODELS[kind].model_validate(item))
    return items
