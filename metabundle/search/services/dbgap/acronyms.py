"""Acronyms a dbGaP study defines for itself in its own description.

Many cohorts are known by an acronym their study name does not carry: the record
"Framingham Cohort" says "the Framingham Heart Study (FHS)" in its description, and
"Women's Health Initiative" says "(WHI)". A parenthesized short form counts when the
words before it spell it (the Schwartz–Hearst rule: each character of the short form,
in order, in the long form, the first one starting a word) and that long form names
the study itself: at least half of its content words are words of the study's name,
and the other way round. So "Cardiovascular disease (CVD)" in Framingham's description
is not Framingham's acronym, while "Framingham Heart Study (FHS)" is. A short form that
the studies of more than :data:`MAX_FAMILIES` families (a study and the sub-studies
that declare it their parent) define this way names a topic (GWAS, AML), not a study,
and is dropped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from metabundle.index.variants import MIN_CAPITALS, MIN_SHORT_FORM, SHORT_FORM_RE, long_form

MIN_NAME_SHARE = 0.5
MAX_FAMILIES = 2


def defined_acronyms(
    name: str,
    description: str | None,
    terms: Callable[[str], Iterable[str]],
) -> tuple[str, ...]:
    """The acronyms ``description`` defines for the study called ``name``; ``terms``
    gives the content words of a text (the search tokenizer without generic words)."""
    name_terms = set(terms(name))
    found: list[str] = []
    for match in SHORT_FORM_RE.finditer(description or ""):
        short = match[1]
        if len(short) < MIN_SHORT_FORM or sum(c.isupper() for c in short) < MIN_CAPITALS:
            continue
        spelled = long_form(short, description[: match.start()] if description else "")
        if spelled is None:
            continue
        shared = len(set(terms(spelled)) & name_terms)
        if shared and shared >= MIN_NAME_SHARE * max(len(set(terms(spelled))), len(name_terms)):
            found.append(short)
    return tuple(dict.fromkeys(found))


@dataclass(frozen=True)
class Described:
    """What acronym mining needs of one study version."""

    study_id: str
    family: str  # the parent study's base, or the study's own
    name: str
    description: str | None


def study_acronyms(
    studies: Iterable[Described], terms: Callable[[str], Iterable[str]]
) -> dict[str, tuple[str, ...]]:
    """Each study version's :func:`defined_acronyms`, less the short forms more than
    :data:`MAX_FAMILIES` families define (matched ignoring case)."""
    defined = {
        s.study_id: (s.family, defined_acronyms(s.name, s.description, terms)) for s in studies
    }
    families: dict[str, set[str]] = {}
    for family, shorts in defined.values():
        for short in shorts:
            families.setdefault(short.lower(), set()).add(family)
    return {
        study_id: kept
        for study_id, (_family, shorts) in defined.items()
        if (kept := tuple(s for s in shorts if len(families[s.lower()]) <= MAX_FAMILIES))
    }
