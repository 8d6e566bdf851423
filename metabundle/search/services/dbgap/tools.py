"""The dbGaP tools of the QueryGaP retrieval contract.

Workflow: resolve a study (``resolve_dbgap_study``: name, acronym, URL or accession
→ a recommended full versioned accession plus alternatives, never authoritative),
inspect it (``get_dbgap_study``), then search its variables, datasets or documents
(``search_dbgap_catalog``). Study lookups and resolution live in
:mod:`.dbgap_studies`, ranking and result items in :mod:`.dbgap_catalog`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from metabundle.search.jsonsafe import to_json_value
from metabundle.search.params import Explain, Method, Params, Query, clamp
from metabundle.search.registry import tool
from metabundle.search.release import Release
from metabundle.search.services.dbgap.catalog import rank_in_study, result_items, variable_stats
from metabundle.search.services.dbgap.studies import (
    StudyVersion,
    relation,
    resolve,
    scope_for,
    study_index,
    versioned_study,
)

GROUP = "dbgap"
MAX_LISTED = 50
MAX_SUB_STUDIES = 10
STUDY_DESCRIPTION_CHARS = 4000
CONFIRM = (
    "Resolution is heuristic and never authoritative: confirm the recommended study "
    "(name and accession) with the user or against the alternatives before relying on it."
)
STUDY_ID = Annotated[
    str,
    Field(
        max_length=100,
        description="Versioned accession, e.g. phs000286.v7.p2.",
    ),
]


# -- resolve_dbgap_study ----------------------------------------------------------------


class ResolveParams(Params):
    query: Annotated[
        Query,
        Field(
            max_length=500,
            description="A study name, acronym, dbGaP URL or accession (phs000286).",
        ),
    ]
    limit: Annotated[int, clamp(1, 20), Field(description="1..20.")] = 10


@tool(
    "resolve_dbgap_study",
    "Call first whenever a dbGaP study is named, to get its full versioned accession.",
    ResolveParams,
    GROUP,
    guide=(
        "Call this first whenever a dbGaP study is named (name, acronym, study URL or "
        "accession): it returns the recommended full versioned accession and ranked "
        "alternatives. "
        "Alternatives carry their dataset and variable counts and their relation to the "
        "recommended study; its sub-studies are listed. A resolution block says how it "
        "matched. The match is heuristic: confirm it, then call "
        "get_dbgap_study or search_dbgap_catalog with the full versioned study_id. An unknown "
        "study returns not_found with suggestions. UK Biobank is not a dbGaP study: use its own "
        "tools."
    ),
)
def resolve_dbgap_study(release: Release, params: ResolveParams) -> dict[str, Any]:
    outcome = resolve(release, params.query)
    shown = outcome.candidates[: params.limit]
    top = shown[0]
    candidates = [
        {
            "rank": i,
            **m.row.summary(),
            "relation": relation(top.row, m.row),
            "match": {"reason": m.reason, "matched": m.detail},
        }
        for i, m in enumerate(shown, start=1)
    ]
    subs = study_index(release).sub_studies(top.row.base)
    return {
        "query": params.query,
        "recommended": candidates[0],
        "candidates": candidates,
        "total_candidates": len(outcome.candidates),
        "truncated": len(outcome.candidates) > len(shown),
        "sub_studies": {
            "of": top.row.base,
            "total": len(subs),
            "items": [{**r.summary(), "relation": "sub_study"} for r in subs[:MAX_SUB_STUDIES]],
            "truncated": len(subs) > MAX_SUB_STUDIES,
        },
        "resolution": {
            "authoritative": False,
            "query_form": outcome.interpretation.form,
            "matched_by": top.reason,
            "matched": top.detail,
            "studies_matched": outcome.studies,
            "alternatives": len(outcome.candidates) - 1,
            "warnings": outcome.warnings,
            "confirm": CONFIRM,
        },
        "next": f"Call get_dbgap_study(study_id={top.row.study_id!r}) or "
        f"search_dbgap_catalog(study_id={top.row.study_id!r}, query=...).",
    }


# -- get_dbgap_study --------------------------------------------------------------------


class StudyParams(Params):
    study_id: STUDY_ID


def _consent_groups(values: list[str] | None) -> list[dict[str, str]]:
    """``'GRU --- General Research Use'`` → ``{"code": "GRU", "name": ...}``."""
    groups = []
    for value in values or []:
        code, _, name = value.partition(" --- ")
        groups.append({"code": code.strip(), "name": name.strip() or code.strip()})
    return groups


def _listing(release: Release, sql: str, study_id: str) -> dict[str, Any]:
    total = int(release.query(f"SELECT count(*) FROM ({sql})", [study_id])[0][0])
    items = release.query_dicts(f"{sql} LIMIT {MAX_LISTED}", [study_id])
    return {"total": total, "items": items, "truncated": total > len(items)}


DATASETS_SQL = (
    "SELECT dataset_id, dataset_accession AS accession, name, left(description, 300) AS "
    "description, variable_count, has_var_report, canonical_url FROM dbgap_dataset "
    "WHERE study_accession = ? ORDER BY dataset_accession"
)
DOCUMENTS_SQL = (
    "SELECT document_id, document_accession AS accession, title, document_type, file_name, "
    "content_indexed, canonical_url FROM dbgap_document WHERE study_accession = ? "
    "ORDER BY document_accession"
)


def metadata_scope(release: Release, study: StudyVersion) -> dict[str, Any]:
    """Which version each part of the study's metadata comes from."""
    text_from = study.current_study_id if study.text_source == "current_version" else None
    datasets_from, _ = scope_for(release, study, "dataset")
    documents_from, _ = scope_for(release, study, "document")
    sources = {
        "text": text_from or study.study_id,
        "datasets": datasets_from,
        "documents": documents_from,
    }
    borrowed = {part: acc for part, acc in sources.items() if acc != study.study_id}
    notes = [
        f"The {part} shown come from {acc}, another version of this study."
        if part != "text"
        else f"Name, description and study attributes come from {acc}, the current "
        "version, because this version's own study file was not available."
        for part, acc in borrowed.items()
    ]
    return {
        "metadata_scope": "base" if borrowed else "exact",
        "metadata_sources": {**sources, "text_source": study.text_source},
        "metadata_notes": notes,
    }


@tool(
    "get_dbgap_study",
    "Call with an accession from resolve_dbgap_study for a study's metadata and datasets.",
    StudyParams,
    GROUP,
    guide=(
        "Get one dbGaP study version's metadata, counts, datasets, documents and other "
        "versions. Call it with the full versioned accession from resolve_dbgap_study; "
        "then search_dbgap_catalog. "
        "The study block holds name, description, diseases, design, molecular data types, consent"
        " groups, dates, parent study and counts; datasets and documents are capped with totals. "
        "Check metadata_scope: 'base' means some parts come from another version of the same "
        "study (metadata_sources says which)."
    ),
)
def get_dbgap_study(release: Release, params: StudyParams) -> dict[str, Any]:
    study = versioned_study(release, params.study_id, "get_dbgap_study")
    row = release.query_dicts(
        "SELECT * FROM dbgap_study WHERE study_accession = ?", [study.study_id]
    )[0]
    scope = metadata_scope(release, study)
    description = row["description"] or ""
    payload = {
        "study": {
            "study_id": study.study_id,
            "base": study.base,
            "version": study.version,
            "participant_set": study.participant_set,
            "name": row["name"],
            "acronyms": row["acronyms"],
            "description": description[:STUDY_DESCRIPTION_CHARS],
            "description_truncated": len(description) > STUDY_DESCRIPTION_CHARS,
            "diseases": row["diseases"],
            "study_designs": row["study_designs"],
            "related_terms": row["related_terms"],
            "molecular_data_types": row["molecular_data_types"],
            "markersets": row["markersets"],
            "consent_groups": _consent_groups(row["consent_groups"]),
            "nih_institute": row["nih_institute"],
            "parent_study": (
                {"study_id": row["parent_study_accession"], "name": row["parent_study_name"]}
                if row["parent_study_accession"]
                else None
            ),
            "dates": {
                "release_date": row["release_date"],
                "embargo_release_date": row["embargo_release_date"],
                "gap_create_date": row["gap_create_date"],
                "gap_mod_date": row["gap_mod_date"],
            },
            "is_current_version": study.is_current,
            "current_study_id": study.current_study_id,
            "pubmed_ids": row["pubmed_ids"],
            "collections": row["collections"],
            "canonical_url": study.canonical_url,
            **({"synthetic": True} if study.synthetic else {}),
            "counts": {
                "datasets": study.dataset_count,
                "variables": study.variable_count,
                "documents": study.document_count,
                "datasets_with_var_report": row["var_report_dataset_count"],
                "reported_by_dbgap": {
                    "datasets": row["reported_dataset_count"],
                    "variables": row["reported_variable_count"],
                    "subjects": row["reported_subject_count"],
                    "samples": row["reported_sample_count"],
                },
            },
        },
        **scope,
        "versions": [r.summary() for r in study_index(release).versions(study.base)],
        "datasets": _listing(release, DATASETS_SQL, scope["metadata_sources"]["datasets"]),
        "documents": {
            **_listing(release, DOCUMENTS_SQL, scope["metadata_sources"]["documents"]),
            "content_indexed": False,
        },
        "next": f"Call search_dbgap_catalog(study_id={study.study_id!r}, query=..., "
        "kind='variable'|'dataset'|'document').",
    }
    return to_json_value(payload)


# -- search_dbgap_catalog ---------------------------------------------------------------


class CatalogParams(Params):
    study_id: STUDY_ID
    query: Query
    kind: Literal["variable", "dataset", "document"] = "variable"
    method: Method = "hybrid"
    limit: Annotated[int, clamp(1, 20), Field(description="1..20.")] = 10
    include_stats: bool = False
    explain: Explain = False


@tool(
    "search_dbgap_catalog",
    "Call with a versioned study_id to search one dbGaP study's variables or documents.",
    CatalogParams,
    GROUP,
    guide=(
        "Search one dbGaP study version's variables (default), datasets or documents. "
        "Call it with the full versioned study_id from resolve_dbgap_study; cite "
        "canonical_url and the exact accessions. "
        "method: hybrid (default; 0.3 keyword + 0.7 semantic), keyword or semantic. Documents are"
        " matched by title only (keyword: the title contains the query; their contents are not "
        "indexed). include_stats=true adds variables' summary statistics. A match documents a "
        "variable; it does not establish data access or availability."
        " include_stats adds variables' summary statistics from their variable reports."
    ),
)
def search_dbgap_catalog(release: Release, params: CatalogParams) -> dict[str, Any]:
    study = versioned_study(release, params.study_id, "search_dbgap_catalog")
    searched, in_scope = scope_for(release, study, params.kind)
    hits, retrieval = rank_in_study(
        release, params.kind, searched, params.query, params.method, params.limit, params.explain
    )
    results = result_items(release, params.kind, hits)
    if params.include_stats and params.kind == "variable":
        stats = variable_stats(release, [item["id"] for item in results])
        for item in results:
            item["stats"] = stats[item["id"]]
    payload: dict[str, Any] = {
        "query": params.query,
        "study_id": study.study_id,
        "searched_study_id": searched,
        "metadata_scope": "exact" if searched == study.study_id else "base",
        "kind": params.kind,
        "in_scope": in_scope,
        "retrieval": retrieval.to_json(),
        "results": results,
    }
    if searched != study.study_id:
        payload["scope_note"] = (
            f"{study.study_id} has no {params.kind} metadata in this release; the "
            f"{params.kind}s of {searched}, another version of the same study, were searched."
        )
    elif in_scope == 0:
        payload["scope_note"] = f"No version of {study.base} has {params.kind} metadata here."
    if params.kind == "document":
        payload["content_indexed"] = False
    if params.include_stats and params.kind != "variable":
        payload["stats_note"] = "include_stats applies to variables only."
    return payload
