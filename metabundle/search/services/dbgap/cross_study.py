"""``find_variables_across_studies``: the dbGaP variables that measure one concept, in
every study at once, grouped by study.

The studies searched are the preferred version (:func:`.studies.preference`: the
one with the most variables) of every study with variable metadata, narrowed by a list
of accessions, a parent study (the parent and the studies that declare it) and a
disease or focus (``dbgap_study.diseases``). Those studies' variables form one mask,
applied before any candidate limit, and one call of
:func:`metabundle.search.ranking.pipeline.rank` ranks them with the dbGaP catalogue's
fusion; the service only groups that ranking by study (a study's place is its best
hit's) and keeps each study's first ``per_study`` hits.
Variables are ranked by their descriptions (their titles), so opaque names such as
Framingham's ``fw020`` are found by what they measure.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Annotated

from pydantic import Field

from metabundle.search.errors import invalid, not_found
from metabundle.search.params import Method, Params, Query, clamp
from metabundle.search.payload import Retrieval
from metabundle.search.ranking.pipeline import rank
from metabundle.search.ranking.policies import DBGAP_VARIABLES
from metabundle.search.registry import tool
from metabundle.search.release import Release
from metabundle.search.retrieval import MAX_POOL, Hit, documents, mask_from_sql
from metabundle.search.services.dbgap.catalog_items import result_items
from metabundle.search.services.dbgap.models import (
    AcrossAnswer,
    AcrossFilters,
    GroupStudy,
    GroupVariable,
    StudyGroup,
    VariableItem,
)
from metabundle.search.services.dbgap.queries import study_diseases
from metabundle.search.services.dbgap.studies import (
    ACCESSION_RE,
    StudyIndex,
    StudyVersion,
    study_index,
)

GROUP = "dbgap"
MAX_STUDIES_LISTED = 50
MAX_PER_STUDY = 10
MAX_STUDY_FILTER = 100
DISEASE_SUGGESTIONS = 5


class AcrossParams(Params):
    query: Query
    studies: Annotated[
        list[Annotated[str, Field(max_length=40)]] | None,
        Field(
            max_length=MAX_STUDY_FILTER,
            description="Accessions, versioned or not.",
        ),
    ] = None
    parent_study: Annotated[
        str | None,
        Field(
            max_length=40,
            description="An accession; its child studies too.",
        ),
    ] = None
    disease: Annotated[
        str | None,
        Field(
            max_length=200,
            description="Text in a study's disease/focus.",
        ),
    ] = None
    per_study: Annotated[int, clamp(1, MAX_PER_STUDY), Field(description="1..10.")] = 3
    limit: Annotated[int, clamp(1, MAX_STUDIES_LISTED), Field(description="1..50.")] = 20
    method: Method = "hybrid"


@dataclass(frozen=True)
class Scope:
    """The study versions searched and the filters that chose them."""

    studies: list[StudyVersion]
    filters: AcrossFilters
    without_variables: list[str]


# -- the studies searched -------------------------------------------------------------------


def _requested(index: StudyIndex, accessions: list[str]) -> tuple[list[StudyVersion], list[str]]:
    """The versions ``accessions`` name (a base means its preferred version), and the
    ones without variable metadata here; ``not_found`` for an accession the release
    lacks, ``invalid_request`` for one that is not an accession."""
    chosen: list[StudyVersion] = []
    for text in accessions:
        asked = text.strip().lower()
        match = ACCESSION_RE.fullmatch(asked)
        if match is None or (match[2] is not None and match[3] is None):
            raise invalid(
                f"find_variables_across_studies: studies must hold dbGaP study accessions "
                f"such as phs000007 or phs000209.v13.p3, not {text[:80]!r}; turn a name "
                "into one with resolve_dbgap_study."
            )
        versions = index.versions(match[1])
        row = index.by_id.get(asked) if match[2] else (versions[0] if versions else None)
        if row is None:
            known = ", ".join(r.study_id for r in versions)
            raise not_found(
                f"find_variables_across_studies: this release has no dbGaP study "
                f"{asked}" + (f"; it has {known}." if known else "; call resolve_dbgap_study."),
                parameter="studies",
                study=asked,
            )
        chosen.append(row)
    unique = list({row.study_id: row for row in chosen}.values())
    return [r for r in unique if r.has_variables], [
        r.study_id for r in unique if not r.has_variables
    ]


def _family(index: StudyIndex, parent: str) -> set[str]:
    """The bases of ``parent`` and of the studies that declare it their parent."""
    match = ACCESSION_RE.fullmatch(parent.strip().lower())
    if match is None:
        raise invalid(
            "find_variables_across_studies: parent_study must be a dbGaP study accession "
            f"such as phs000007, not {parent[:80]!r}."
        )
    base = match[1]
    if not index.versions(base):
        raise not_found(
            f"find_variables_across_studies: this release has no dbGaP study {base} "
            "(parent_study); call resolve_dbgap_study.",
            parameter="parent_study",
        )
    return {
        study_base
        for study_base, versions in index.by_base.items()
        if study_base == base or versions[0].parent_base == base
    }


def _with_disease(release: Release, rows: list[StudyVersion], disease: str) -> list[StudyVersion]:
    """``rows`` whose diseases/focus contain ``disease`` (ignoring case); ``not_found``
    with the closest values the release holds when none does."""
    wanted = " ".join(disease.lower().split())
    diseases = study_diseases(release, [r.study_id for r in rows])
    kept = [r for r in rows if any(wanted in d.lower() for d in diseases.get(r.study_id, []))]
    if kept:
        return kept
    known = sorted({d for values in diseases.values() for d in values})
    closest = difflib.get_close_matches(disease, known, n=DISEASE_SUGGESTIONS, cutoff=0.3)
    raise not_found(
        f"find_variables_across_studies: no study searched lists a disease or focus "
        f"containing {disease[:80]!r}.",
        parameter="disease",
        suggestions=closest,
    )


def scope(release: Release, params: AcrossParams) -> Scope:
    """The study versions to search: every study's preferred version with variables,
    narrowed by ``studies``, ``parent_study`` and ``disease`` (all that are given)."""
    index = study_index(release)
    rows = [versions[0] for _base, versions in sorted(index.by_base.items())]
    without: list[str] = []
    if params.studies:
        rows, without = _requested(index, params.studies)
    if params.parent_study:
        family = _family(index, params.parent_study)
        rows = [r for r in rows if r.base in family]
    rows = [r for r in rows if r.has_variables]
    if rows and params.disease:
        rows = _with_disease(release, rows, params.disease)
    if not rows:
        raise not_found(
            "find_variables_across_studies: no study the filters select has variable "
            "metadata in this release"
            + (f" ({', '.join(without)} have none)." if without else "."),
            studies_without_variables=without,
        )
    filters = AcrossFilters(
        studies=params.studies, parent_study=params.parent_study, disease=params.disease
    )
    return Scope(sorted(rows, key=lambda r: r.study_id), filters, without)


# -- grouping ---------------------------------------------------------------------------


def by_study(release: Release, hits: list[Hit]) -> dict[str, list[Hit]]:
    """``hits`` grouped by study version, in rank order (a study first seen first)."""
    rows = documents(release, [h.docno for h in hits])
    groups: dict[str, list[Hit]] = {}
    for hit in hits:
        groups.setdefault(rows[hit.docno]["study_id"], []).append(hit)
    return groups


def study_block(row: StudyVersion) -> GroupStudy:
    """The study a group belongs to: name, version, size and parent."""
    return GroupStudy(
        study_id=row.study_id,
        base=row.base,
        version=row.version,
        name=row.name,
        acronyms=list(row.acronyms),
        is_current_version=row.is_current,
        current_study_id=row.current_study_id,
        variable_count=row.variable_count,
        **({"sub_study_of": row.parent_base} if row.parent_base else {}),
        **({"synthetic": True} if row.synthetic else {}),
        canonical_url=row.canonical_url,
    )


def group_variable(item: VariableItem, rank_in_study: int) -> GroupVariable:
    """The fields of ``item`` that a study's group keeps, ranked within the study."""
    kept = {
        name: getattr(item, name)
        for name in GroupVariable.model_fields
        if name in item.model_fields_set
    }
    return GroupVariable(**{**kept, "rank": rank_in_study})


@tool(
    "find_variables_across_studies",
    "Call to find the dbGaP variables measuring one concept in many studies at once.",
    AcrossParams,
    GROUP,
    response=AcrossAnswer,
    guide=(
        "Call this to find the dbGaP variables that measure one concept in many studies "
        "at once (harmonizing cohorts: e.g. systolic blood pressure in Framingham, MESA, "
        "JHS): the best per_study variables of each study, studies ordered by their best "
        "match, optionally only some studies, a parent study's family or a disease/focus."
        " Then call get_dbgap_variable for a variable's values."
        " studies takes accessions with or without version (phs000007, phs000209.v13.p3);"
        " names go through resolve_dbgap_study first. parent_study keeps that study and "
        "the studies that declare it their parent. disease keeps studies whose "
        "disease/focus contains the text, e.g. 'Cardiovascular Diseases' (get_dbgap_study"
        " lists a study's)."
    ),
)
def find_variables_across_studies(release: Release, params: AcrossParams) -> AcrossAnswer:
    searched = scope(release, params)
    index = study_index(release)
    mask = mask_from_sql(
        release,
        "source = 'dbgap' AND kind = 'variable' AND list_contains(?::VARCHAR[], study_id)",
        [[r.study_id for r in searched.studies]],
    )
    hits, retrieval = rank(
        release,
        params.query,
        policy=DBGAP_VARIABLES,
        method=params.method,
        mask=mask,
        limit=MAX_POOL,
    )
    groups = by_study(release, hits)
    shown = list(groups.items())[: params.limit]
    kept = [hit for _study, group in shown for hit in group[: params.per_study]]
    items = iter(result_items(release, "variable", kept))
    results = []
    for position, (study_id, group) in enumerate(shown, start=1):
        variables = [
            group_variable(next(items), rank_in_study)
            for rank_in_study, _hit in enumerate(group[: params.per_study], start=1)
        ]
        results.append(
            StudyGroup(
                rank=position,
                study=study_block(index.by_id[study_id]),
                best_score=variables[0].scores.score,
                variables=variables,
                variables_in_pool=len(group),
            )
        )
    answer = AcrossAnswer(
        query=params.query,
        filters=searched.filters,
        studies_searched=len(searched.studies),
        studies_matched=len(groups),
        truncated=len(groups) > len(shown),
        candidate_pool=MAX_POOL,
        retrieval=Retrieval.model_validate(retrieval.to_json()),
        results=results,
        next="Call get_dbgap_variable(variable_id=...) for a variable's coded values "
        "and statistics, or search_dbgap_catalog(study_id=..., query=...) for more of one "
        "study's variables.",
    )
    if searched.without_variables:
        answer.studies_without_variables = searched.without_variables
    return answer
