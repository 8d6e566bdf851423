"""The heuristic resolution of a dbGaP study's name, acronym, URL or accession to its
study versions, and the lookup of a full versioned accession.

Resolution (:func:`resolve`) is a heuristic and says so: it ranks studies by how they
matched (accession, the parent of several matched sub-studies, acronym, name, an
acronym the study's description defines for it, words of the name, words of the
description) and breaks ties by how much metadata a study has (variables, then
datasets). A study the release lacks is ``not_found`` with the closest studies it has,
and with the rebuild flag when dbGaP lists it (:func:`not_found_here`).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from metabundle.index.tokenizer import tokenize
from metabundle.schemas.dbgap import DBGAP
from metabundle.schemas.sources import DESCRIPTORS
from metabundle.search.coverage import NOT_IN_RELEASE, NOT_LISTED
from metabundle.search.errors import ToolError, invalid, not_found
from metabundle.search.payload import to_payload
from metabundle.search.release import Release
from metabundle.search.retrieval import documents, keyword_candidates, mask_from_sql
from metabundle.search.services.dbgap.models import StudySummary
from metabundle.search.services.dbgap.queries import unbuilt_studies
from metabundle.search.services.dbgap.studies import (
    ACCESSION_RE,
    GENERIC_TERMS,
    VERSIONED_RE,
    StudyIndex,
    StudyVersion,
    content_terms,
    metadata_weight,
    study_index,
)

EMBEDDED_ACCESSION_RE = re.compile(r"(?<![a-z0-9])phs\d{6,}(?:\.v\d+(?:\.p\d+)?)?(?![0-9])")
URL_HINTS = ("://", "study.cgi", "study_id=", "www.", "ncbi.nlm.nih.gov")
DESCRIPTION_POOL = 50
SUGGESTIONS = 5

STRONG_REASONS = frozenset({"accession", "base_accession", "acronym", "name"})

PARENT_QUORUM = 2
"""A study whose sub-studies match a name this many times is the cohort the name means."""

# How strongly a study matched; higher wins, ties go to the study with more metadata.
TIERS = {
    "accession": 100,
    "base_accession": 90,
    "parent_of_matches": 85,
    "acronym": 80,
    "name": 80,
    "described_acronym": 75,
    "name_words": 60,
    "description_words": 40,
}


# -- a full versioned accession -----------------------------------------------------------


def versioned_study(release: Release, study_id: str, tool: str) -> StudyVersion:
    """The study version ``study_id`` names: ``invalid_request`` unless it is a full
    versioned accession, ``not_found`` (with suggestions) unless the release has it."""
    text = study_id.strip().lower()
    if not VERSIONED_RE.fullmatch(text):
        raise invalid(
            f"{tool}: study_id must be a full versioned dbGaP accession such as "
            f"phs000286.v7.p2, not {study_id[:80]!r}; call resolve_dbgap_study to turn a "
            "name, acronym, URL or base accession into one."
        )
    index = study_index(release)
    row = index.by_id.get(text)
    if row is not None:
        return row
    base = text.split(".")[0]
    others = index.versions(base)
    if others:
        raise not_found(
            f"This release has no dbGaP study version {text}; it has "
            f"{', '.join(r.study_id for r in others)} of {base}.",
            suggestions=[to_payload(r.summary(StudySummary)) for r in others],
        )
    raise not_found_here(
        release,
        _accession(text, "accession"),
        f"This release has no dbGaP study {base}; call resolve_dbgap_study.",
        suggestions=suggest(index, text),
    )


# -- resolution --------------------------------------------------------------------------


@dataclass(frozen=True)
class Match:
    """How one study version matched the query."""

    row: StudyVersion
    reason: str
    detail: str

    @property
    def tier(self) -> int:
        return TIERS.get(self.reason, 0)


@dataclass(frozen=True)
class Interpretation:
    """What the query looks like: an accession (possibly from a URL) or a name."""

    form: str  # accession, url or name
    text: str
    base: str | None = None
    version: int | None = None
    participant_set: int | None = None


def interpret(query: str) -> Interpretation:
    """Classify ``query``; a URL must carry a study accession."""
    text = " ".join(query.split())
    lowered = text.lower()
    if any(hint in lowered for hint in URL_HINTS):
        accession = _url_accession(text)
        if accession is None:
            raise invalid(
                "resolve_dbgap_study: the URL in query names no dbGaP study; expected "
                "a link such as .../study.cgi?study_id=phs000286.v7.p2."
            )
        return _accession(accession, "url")
    found = EMBEDDED_ACCESSION_RE.search(lowered)  # "JHS (phs000286)" names the accession
    if found:
        return _accession(found[0], "accession")
    return Interpretation("name", text)


def _url_accession(url: str) -> str | None:
    parts = urlsplit(url if "://" in url else f"https://{url}")
    for value in parse_qs(parts.query).get("study_id", []):
        match = ACCESSION_RE.search(value.lower())
        if match:
            return match[0]
    match = ACCESSION_RE.search(unquote(url).lower())
    return match[0] if match else None


def _accession(text: str, form: str) -> Interpretation:
    match = ACCESSION_RE.fullmatch(text)
    assert match is not None
    version = int(match[2]) if match[2] else None
    participant_set = int(match[3]) if match[3] else None
    return Interpretation(form, text, match[1], version, participant_set)


def accession_matches(index: StudyIndex, asked: Interpretation) -> tuple[list[Match], list[str]]:
    """Versions of the asked study, the asked version first; plus warnings."""
    assert asked.base is not None
    versions = index.versions(asked.base)
    if not versions:
        return [], []
    if asked.version is None:
        return [Match(r, "base_accession", asked.base) for r in versions], []
    exact = [
        r
        for r in versions
        if r.version == asked.version and asked.participant_set in (None, r.participant_set)
    ]
    exact.sort(key=lambda r: -r.participant_set)
    warnings = []
    if not exact:
        warnings.append(
            f"This release has no version {asked.text} of {asked.base}; its versions are "
            f"listed instead."
        )
    chosen = {r.study_id for r in exact}
    matches = [Match(r, "accession", asked.text) for r in exact]
    matches += [
        Match(r, "base_accession", asked.base) for r in versions if r.study_id not in chosen
    ]
    return matches, warnings


def name_matches(release: Release, index: StudyIndex, query: str) -> list[Match]:
    """Studies whose acronym, name, name words or description words match ``query``."""
    lowered = query.lower()
    terms = [t for t in dict.fromkeys(tokenize(query)) if t not in GENERIC_TERMS]
    query_terms = tuple(tokenize(query))
    matches: list[Match] = []
    for row in index.by_id.values():
        if lowered in (a.lower() for a in row.acronyms):
            matches.append(Match(row, "acronym", query))
        elif lowered in index.described_acronyms.get(row.study_id, ()):
            matches.append(Match(row, "described_acronym", query))
        elif query_terms and (
            query_terms in index.name_forms[row.study_id]
            or content_terms(query_terms) in index.name_forms[row.study_id]
        ):
            matches.append(Match(row, "name", row.name))
        elif terms and set(terms) <= index.name_terms[row.study_id]:
            matches.append(Match(row, "name_words", " ".join(terms)))
    if terms:
        matches += description_matches(release, index, query, set(terms))
    return matches + parent_matches(index, matches)


def parent_matches(index: StudyIndex, matches: list[Match]) -> list[Match]:
    """The parent studies of :data:`PARENT_QUORUM` or more matched studies: a cohort's
    full name often appears only in its sub-studies' names (genomics, BioLINCC and
    TOPMed companions), so the cohort they share stands for the name."""
    children: dict[str, set[str]] = {}
    for match in matches:
        parent = match.row.parent_base
        if parent and parent != match.row.base and index.versions(parent):
            children.setdefault(parent, set()).add(match.row.base)
    return [
        Match(index.preferred(parent), "parent_of_matches", f"parent of {', '.join(sorted(kids))}")
        for parent, kids in sorted(children.items())
        if len(kids) >= PARENT_QUORUM
    ]


def description_matches(
    release: Release, index: StudyIndex, query: str, terms: set[str]
) -> list[Match]:
    """Study versions whose name and description hold every content word of ``query``
    (BM25 preselects them, so this stays cheap on the full catalogue)."""
    mask = mask_from_sql(release, "source = 'dbgap' AND kind = 'study'", [])
    hits = keyword_candidates(release, query, mask, DESCRIPTION_POOL)
    rows = documents(release, [docno for docno, _ in hits])
    matches = []
    for docno, _ in hits:
        doc = rows[docno]
        row = index.by_id.get(doc["entity_id"])
        if row is not None and terms <= set(tokenize(f"{doc['title']} {doc['body'] or ''}")):
            matches.append(Match(row, "description_words", " ".join(sorted(terms))))
    return matches


def group_by_study(index: StudyIndex, matches: list[Match]) -> list[list[Match]]:
    """One list per study base, strongest match first (ties: more metadata). Every
    version of a matched study is listed: an explicitly asked version first, then the
    others in :func:`preference` order."""
    best: dict[str, Match] = {}
    for match in matches:
        current = best.get(match.row.study_id)
        if current is None or match.tier > current.tier:
            best[match.row.study_id] = match
    studies: dict[str, list[Match]] = {}
    for match in best.values():
        studies.setdefault(match.row.base, []).append(match)
    groups = []
    for base, found in studies.items():
        matched = {m.row.study_id: m for m in found}
        members = [
            matched.get(r.study_id, Match(r, "other_version", base)) for r in index.versions(base)
        ]
        members.sort(key=lambda m: m.reason != "accession")  # stable: preference otherwise
        groups.append((max(found, key=lambda m: m.tier), members))
    groups.sort(
        key=lambda g: (
            -g[0].tier,
            tuple(-n for n in metadata_weight(index.versions(g[0].row.base))),
            g[0].row.base,
        )
    )
    return [members for _, members in groups]


def version_warnings(index: StudyIndex, recommended: StudyVersion) -> list[str]:
    """What the agent should know about the recommended version's siblings."""
    warnings = []
    versions = index.versions(recommended.base)
    current = next((r for r in versions if r.is_current), None)
    if not recommended.has_variables:
        with_variables = [r for r in versions if r.has_variables]
        hint = (
            f"; {with_variables[0].study_id} has {with_variables[0].variable_count}"
            if with_variables
            else ""
        )
        warnings.append(f"{recommended.study_id} has no variable metadata in this release{hint}.")
    if current is not None and current.study_id != recommended.study_id:
        warnings.append(
            f"The current version is {current.study_id}"
            + ("" if current.has_variables else ", which has no variable metadata here")
            + "."
        )
    richer = [r for r in versions if r.variable_count > recommended.variable_count]
    if richer:
        top = max(richer, key=lambda r: r.variable_count)
        warnings.append(
            f"{top.study_id}, another version of this study, has {top.variable_count} "
            f"variables against {recommended.variable_count} in {recommended.study_id}; "
            "search it too when the recommended version lacks what you need."
        )
    return warnings


def similarity(index: StudyIndex, versions: list[StudyVersion], query: str) -> float:
    """How close ``query`` is to a study: the best spelling similarity (difflib ratio)
    to a name, acronym or accession of its versions, or the share of the query's
    content words found in a name."""
    matcher = difflib.SequenceMatcher(None, b=" ".join(query.lower().split()))
    texts = {versions[0].base}
    for row in versions:
        texts |= {row.name.lower(), row.study_id, *(a.lower() for a in row.acronyms)}
    best = 0.0
    for text in texts:
        matcher.set_seq1(text)
        if matcher.real_quick_ratio() > best and matcher.quick_ratio() > best:
            best = max(best, matcher.ratio())
    terms = {t for t in tokenize(query) if t not in GENERIC_TERMS}
    if terms:
        shared = max(len(terms & index.name_terms[r.study_id]) for r in versions)
        best = max(best, shared / len(terms))
    return best


def suggest(index: StudyIndex, query: str) -> list[dict[str, Any]]:
    """The studies closest to ``query`` (:func:`similarity`; ties: more metadata), each
    as its preferred version."""
    scored = sorted(
        (
            (-similarity(index, versions, query), *(-n for n in metadata_weight(versions)), base)
            for base, versions in index.by_base.items()
        ),
    )
    return [
        {
            **to_payload(index.preferred(base).summary(StudySummary)),
            "similarity": round(-score, 3),
        }
        for score, _, _, base in scored[:SUGGESTIONS]
    ]


@dataclass
class Resolution:
    """The outcome of :func:`resolve`: ranked candidates and what to tell the agent."""

    interpretation: Interpretation
    candidates: list[Match]
    studies: int
    warnings: list[str]


REBUILD = (
    "rebuild with `metabundle build --dbgap-studies {bases}` (or without --dbgap-studies "
    "and --profile dev for every study)"
)


def not_found_here(
    release: Release, asked: Interpretation, message: str, **details: Any
) -> ToolError:
    """``not_found`` for ``asked``: with reason ``not_in_release`` and the rebuild flag
    when dbGaP lists a matching study that this release's selection left out, else
    with reason ``not_listed_upstream`` (the release holds every study dbGaP lists, or
    none of the left-out ones matches either)."""
    listed: list[tuple[str, str | None, str | None]] = []
    if release.has_table("dbgap_unbuilt_study") and len(asked.text) >= 3:
        listed = unbuilt_studies(release, asked.base or "", asked.text, asked.form == "name")
    if not listed:
        return not_found(message, reason=NOT_LISTED, **details)
    bases = ",".join(base for base, _current, _name in listed)
    remedy = REBUILD.format(bases=bases)
    named = "; ".join(
        f"{base} ({name or current or 'no name listed'})" for base, current, name in listed
    )
    return not_found(
        f"{asked.text[:120]!r} matches {named}, which dbGaP lists but which was not built "
        f"into this release; {remedy}.",
        reason=NOT_IN_RELEASE,
        listed_upstream=[
            {"study_base": base, "current_accession": current, "name": name}
            for base, current, name in listed
        ],
        remedy=remedy,
        **details,
    )


def other_source(release: Release, text: str) -> tuple[str, str] | None:
    """(source, tool) when ``text`` names another source that this release holds (one
    of its descriptor's ``aliases``)."""
    name = " ".join(text.lower().replace("'", "").split())
    for source, descriptor in DESCRIPTORS.items():
        held = source != DBGAP.name and source in release.manifest["sources"]
        if held and descriptor.search_tool and name in descriptor.aliases:
            return source, descriptor.search_tool
    return None


def resolve(release: Release, query: str) -> Resolution:
    """Ranked study versions for ``query``; ``not_found`` with suggestions when none."""
    index = study_index(release)
    asked = interpret(query)
    warnings: list[str] = []
    if asked.form == "name":
        matches = name_matches(release, index, asked.text)
    else:
        matches, warnings = accession_matches(index, asked)
    other = other_source(release, asked.text) if asked.form == "name" else None
    if other is not None and not any(m.reason in STRONG_REASONS for m in matches):
        source, tool_name = other
        raise not_found(
            f"{asked.text[:80]!r} is a source of this release of its own, not a dbGaP "
            f"study: search it with {tool_name} (or search_all with sources=[{source!r}]).",
            reason="other_source",
            source=source,
            tool=tool_name,
        )
    if not matches:
        what = "accession" if asked.form != "name" else "name, acronym or accession"
        raise not_found_here(
            release,
            asked,
            f"No dbGaP study in this release matches the {what} {asked.text[:120]!r}; "
            "check the suggestions (closest studies) or ask the user for a phs accession.",
            suggestions=suggest(index, asked.base or asked.text),
        )
    groups = group_by_study(index, matches)
    candidates = [match for group in groups for match in group]
    if other is not None:
        warnings.append(
            f"{asked.text[:80]!r} is also a source of this release: search it with "
            f"{other[1]}; the dbGaP study below is its record in dbGaP."
        )
    if len(groups) > 1:
        warnings.append(
            f"{len(groups)} different studies matched; make sure the recommended one is "
            "the study the user means."
        )
    return Resolution(
        asked, candidates, len(groups), warnings + version_warnings(index, candidates[0].row)
    )
