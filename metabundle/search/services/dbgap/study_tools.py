"""The dbGaP study tools of the QueryGaP retrieval contract.

Workflow: resolve a study (``resolve_dbgap_study``: name, acronym, URL or accession
→ a recommended full versioned accession plus alternatives, never authoritative),
inspect it (``get_dbgap_study``), then search its variables, datasets or documents
(``search_dbgap_catalog``, :mod:`.catalog_search`). Study versions live in
:mod:`.studies`, their resolution in :mod:`.resolution`.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from metabundle.search.params import Params, Query, clamp
from metabundle.search.registry import tool
from metabundle.search.release import Release
from metabundle.search.services.dbgap.models import (
    Candidate,
    ConsentGroup,
    DatasetListing,
    DocumentListing,
    MatchDetail,
    MetadataScope,
    MetadataSources,
    ParentStudy,
    RelatedStudy,
    ReportedCounts,
    ResolutionNote,
    ResolveAnswer,
    StudyAnswer,
    StudyCounts,
    StudyDates,
    StudyRecord,
    StudySummary,
    SubStudies,
)
from metabundle.search.services.dbgap.queries import study_datasets, study_documents, study_record
from metabundle.search.services.dbgap.resolution import resolve, versioned_study
from metabundle.search.services.dbgap.studies import (
    StudyVersion,
    relation,
    scope_for,
    study_index,
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
    response=ResolveAnswer,
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
def resolve_dbgap_study(release: Release, params: ResolveParams) -> ResolveAnswer:
    outcome = resolve(release, params.query)
    shown = outcome.candidates[: params.limit]
    top = shown[0]
    candidates = [
        m.row.summary(
            Candidate,
            rank=i,
            relation=relation(top.row, m.row),
            match=MatchDetail(reason=m.reason, matched=m.detail),
        )
        for i, m in enumerate(shown, start=1)
    ]
    subs = study_index(release).sub_studies(top.row.base)
    return ResolveAnswer(
        query=params.query,
        recommended=candidates[0],
        candidates=candidates,
        total_candidates=len(outcome.candidates),
        truncated=len(outcome.candidates) > len(shown),
        sub_studies=SubStudies(
            of=top.row.base,
            total=len(subs),
            items=[r.summary(RelatedStudy, relation="sub_study") for r in subs[:MAX_SUB_STUDIES]],
            truncated=len(subs) > MAX_SUB_STUDIES,
        ),
        resolution=ResolutionNote(
            authoritative=False,
            query_form=outcome.interpretation.form,
            matched_by=top.reason,
            matched=top.detail,
            studies_matched=outcome.studies,
            alternatives=len(outcome.candidates) - 1,
            warnings=outcome.warnings,
            confirm=CONFIRM,
        ),
        next=f"Call get_dbgap_study(study_id={top.row.study_id!r}) or "
        f"search_dbgap_catalog(study_id={top.row.study_id!r}, query=...).",
    )


# -- get_dbgap_study --------------------------------------------------------------------


class StudyParams(Params):
    study_id: STUDY_ID


def _consent_groups(values: list[str] | None) -> list[ConsentGroup]:
    """``'GRU --- General Research Use'`` → ``{"code": "GRU", "name": ...}``."""
    groups = []
    for value in values or []:
        code, _, name = value.partition(" --- ")
        groups.append(ConsentGroup(code=code.strip(), name=name.strip() or code.strip()))
    return groups


def metadata_scope(
    release: Release, study: StudyVersion
) -> tuple[MetadataScope, MetadataSources, list[str]]:
    """Which version each part of the study's metadata comes from: whether all are the
    study's own (``exact``) or some another version's (``base``), the versions, and a
    note for each part borrowed."""
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
    return (
        "base" if borrowed else "exact",
        MetadataSources(**sources, text_source=study.text_source),
        notes,
    )


def _study_block(study: StudyVersion, row: dict[str, Any]) -> StudyRecord:
    """The study block of ``study``, whose ``dbgap_study`` row is ``row``."""
    description = row["description"] or ""
    return StudyRecord(
        study_id=study.study_id,
        base=study.base,
        version=study.version,
        participant_set=study.participant_set,
        name=row["name"],
        acronyms=row["acronyms"],
        description=description[:STUDY_DESCRIPTION_CHARS],
        description_truncated=len(description) > STUDY_DESCRIPTION_CHARS,
        diseases=row["diseases"],
        study_designs=row["study_designs"],
        related_terms=row["related_terms"],
        molecular_data_types=row["molecular_data_types"],
        markersets=row["markersets"],
        consent_groups=_consent_groups(row["consent_groups"]),
        nih_institute=row["nih_institute"],
        parent_study=(
            ParentStudy(study_id=row["parent_study_accession"], name=row["parent_study_name"])
            if row["parent_study_accession"]
            else None
        ),
        dates=StudyDates(
            release_date=row["release_date"],
            embargo_release_date=row["embargo_release_date"],
            gap_create_date=row["gap_create_date"],
            gap_mod_date=row["gap_mod_date"],
        ),
        is_current_version=study.is_current,
        current_study_id=study.current_study_id,
        pubmed_ids=row["pubmed_ids"],
        collections=row["collections"],
        canonical_url=study.canonical_url,
        **({"synthetic": True} if study.synthetic else {}),
        counts=StudyCounts(
            datasets=study.dataset_count,
            variables=study.variable_count,
            documents=study.document_count,
            datasets_with_var_report=row["var_report_dataset_count"],
            reported_by_dbgap=ReportedCounts(
                datasets=row["reported_dataset_count"],
                variables=row["reported_variable_count"],
                subjects=row["reported_subject_count"],
                samples=row["reported_sample_count"],
            ),
        ),
    )


@tool(
    "get_dbgap_study",
    "Call with an accession from resolve_dbgap_study for a study's metadata and datasets.",
    StudyParams,
    GROUP,
    response=StudyAnswer,
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
def get_dbgap_study(release: Release, params: StudyParams) -> StudyAnswer:
    study = versioned_study(release, params.study_id, "get_dbgap_study")
    scope, sources, notes = metadata_scope(release, study)
    datasets_total, datasets = study_datasets(release, sources.datasets, MAX_LISTED)
    documents_total, documents = study_documents(release, sources.documents, MAX_LISTED)
    return StudyAnswer(
        study=_study_block(study, study_record(release, study.study_id)),
        metadata_scope=scope,
        metadata_sources=sources,
        metadata_notes=notes,
        versions=[r.summary(StudySummary) for r in study_index(release).versions(study.base)],
        datasets=DatasetListing.model_validate(
            {
                "total": datasets_total,
                "items": datasets,
                "truncated": datasets_total > len(datasets),
            }
        ),
        documents=DocumentListing.model_validate(
            {
                "total": documents_total,
                "items": documents,
                "truncated": documents_total > len(documents),
                "content_indexed": False,
            }
        ),
        next=f"Call search_dbgap_catalog(study_id={study.study_id!r}, query=..., "
        "kind='variable'|'dataset'|'document').",
    )
