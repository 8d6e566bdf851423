"""dbGaP study versions for the dbGaP tools: the release's study index, version
preference, relations between studies and the catalog scope of a version.

A study has several versions (``phs000286.v6.p2``, ``phs000286.v7.p2``); tools work on
one full versioned accession. Among the versions of a study, the one with the most
variables in this release is preferred, then the current one, then the newest
(:func:`preference`). How a name, acronym, URL or accession is resolved to a version
is :mod:`.resolution`.
"""

from __future__ import annotations

import re
import threading
import weakref
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from metabundle.index.tokenizer import tokenize
from metabundle.search.release import Release
from metabundle.search.services.dbgap.acronyms import Described, study_acronyms
from metabundle.search.services.dbgap.models import Relation, StudySummary
from metabundle.search.services.dbgap.queries import (
    catalog_counts,
    described_study_rows,
    study_version_rows,
)

VERSIONED_RE = re.compile(r"phs\d{6,}\.v\d+\.p\d+")
ACCESSION_RE = re.compile(r"(phs\d{6,})(?:\.v(\d+)(?:\.p(\d+))?)?")
GENERIC_TERMS = frozenset(tokenize("study studies cohort project dbgap"))
PARENTHESES_RE = re.compile(r"\([^)]*\)")

Summary = TypeVar("Summary", bound=StudySummary)


@dataclass(frozen=True)
class StudyVersion:
    """One row of ``dbgap_study``, the columns resolution needs."""

    study_id: str
    base: str
    version: int
    participant_set: int
    is_current: bool
    current_study_id: str
    name: str
    acronyms: tuple[str, ...]
    text_source: str
    has_variables: bool
    dataset_count: int
    variable_count: int
    document_count: int
    canonical_url: str | None
    synthetic: bool
    parent_base: str | None

    def summary(self, model: type[Summary], **fields: Any) -> Summary:
        """The study version as ``model``, a :class:`StudySummary` (the shape resolution,
        suggestions and other answers list studies in) with ``fields`` of its own."""
        return model(
            **({"synthetic": True} if self.synthetic else {}),
            **({"sub_study_of": self.parent_base} if self.parent_base else {}),
            study_id=self.study_id,
            name=self.name,
            acronyms=list(self.acronyms),
            is_current_version=self.is_current,
            current_study_id=self.current_study_id,
            has_variables=self.has_variables,
            dataset_count=self.dataset_count,
            variable_count=self.variable_count,
            document_count=self.document_count,
            canonical_url=self.canonical_url,
            **fields,
        )


def preference(row: StudyVersion) -> tuple[bool, int, bool, int, int]:
    """Sort key among the versions of one study: the one whose variables this release
    holds most of, then the current one, then the newest."""
    return (
        not row.has_variables,
        -row.variable_count,
        not row.is_current,
        -row.version,
        -row.participant_set,
    )


def metadata_weight(rows: list[StudyVersion]) -> tuple[int, int]:
    """How much metadata a study has: its richest version's variables, then datasets."""
    return (
        max(r.variable_count for r in rows),
        max(r.dataset_count for r in rows),
    )


@dataclass
class StudyIndex:
    """Every study version of a release, by accession and by base."""

    by_id: dict[str, StudyVersion]
    by_base: dict[str, list[StudyVersion]]
    name_terms: dict[str, frozenset[str]]
    name_forms: dict[str, set[tuple[str, ...]]]
    described_acronyms: dict[str, frozenset[str]]

    @classmethod
    def load(cls, release: Release) -> StudyIndex:
        rows = [
            StudyVersion(
                study_id=r[0],
                base=r[1],
                version=int(r[2]),
                participant_set=int(r[3]),
                is_current=bool(r[4]),
                current_study_id=r[5],
                name=r[6],
                acronyms=tuple(r[7] or ()),
                text_source=r[8],
                has_variables=bool(r[9]),
                dataset_count=int(r[10]),
                variable_count=int(r[11]),
                document_count=int(r[12]),
                canonical_url=r[13],
                synthetic=bool(r[14]),
                parent_base=r[15] or None,
            )
            for r in study_version_rows(release)
        ]
        by_base: dict[str, list[StudyVersion]] = {}
        for row in rows:
            by_base.setdefault(row.base, []).append(row)
        for versions in by_base.values():
            versions.sort(key=preference)
        return cls(
            by_id={r.study_id: r for r in rows},
            by_base=by_base,
            name_terms={
                r.study_id: frozenset(tokenize(" ".join((r.name, *r.acronyms)))) for r in rows
            },
            name_forms={
                r.study_id: {
                    tuple(tokenize(r.name)),
                    tuple(tokenize(PARENTHESES_RE.sub(" ", r.name))),
                    content_terms(tokenize(PARENTHESES_RE.sub(" ", r.name))),
                }
                for r in rows
            },
            described_acronyms={
                study_id: frozenset(a.lower() for a in found)
                for study_id, found in study_acronyms(
                    (Described(*r) for r in described_study_rows(release)),
                    lambda text: content_terms(tokenize(text)),
                ).items()
            },
        )

    def versions(self, base: str) -> list[StudyVersion]:
        """The versions of ``base``, preferred first (empty when unknown)."""
        return self.by_base.get(base, [])

    def preferred(self, base: str) -> StudyVersion:
        return self.by_base[base][0]

    def sub_studies(self, base: str) -> list[StudyVersion]:
        """The preferred version of each study that declares ``base`` its parent,
        most variables first (then by accession)."""
        subs = [v[0] for b, v in self.by_base.items() if b != base and v[0].parent_base == base]
        return sorted(subs, key=lambda r: (-r.variable_count, r.base))


def relation(recommended: StudyVersion, row: StudyVersion) -> Relation:
    """How ``row`` relates to the recommended study, from the parent study dbGaP
    declares: the recommended one, another version of it, its sub-study, its parent,
    a sibling (the same parent) or another study."""
    if row.study_id == recommended.study_id:
        return "recommended"
    if row.base == recommended.base:
        return "other_version"
    if row.parent_base == recommended.base:
        return "sub_study"
    if recommended.parent_base == row.base:
        return "parent"
    if row.parent_base and row.parent_base == recommended.parent_base:
        return "sibling"
    return "other_study"


_INDEXES: weakref.WeakKeyDictionary[Release, StudyIndex] = weakref.WeakKeyDictionary()
_INDEX_LOCK = threading.Lock()


def study_index(release: Release) -> StudyIndex:
    """The release's study index, loaded once per opened release."""
    with _INDEX_LOCK:
        index = _INDEXES.get(release)
    if index is None:
        index = StudyIndex.load(release)
        with _INDEX_LOCK:
            _INDEXES[release] = index
    return index


def scope_for(release: Release, study: StudyVersion, kind: str) -> tuple[str, int]:
    """The version whose ``kind`` documents (variable, dataset, document) stand for
    ``study``: its own when it has any, else the preferred version of the same study
    that has some. Returns that version's accession and its number of such documents."""
    index = study_index(release)
    versions = [r.study_id for r in index.versions(study.base)]
    counts = catalog_counts(release, kind, versions)
    if counts.get(study.study_id):
        return study.study_id, counts[study.study_id]
    for version in versions:  # preferred first
        if counts.get(version):
            return version, counts[version]
    return study.study_id, 0


def content_terms(terms: Iterable[str]) -> tuple[str, ...]:
    """``terms`` without the words every study name may carry (study, cohort, ...)."""
    return tuple(t for t in terms if t not in GENERIC_TERMS)
