"""Filters on OMOP concepts: parameter values checked against the release and
canonicalized, and the restrictions they put on matched concepts, over
``omop_concept`` or over the concept documents of ``search_doc``."""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

import numpy as np

from metabundle.search.errors import invalid
from metabundle.search.release import Release
from metabundle.search.retrieval import mask_from_sql
from metabundle.search.services.omop.concepts import cached
from metabundle.search.services.omop.queries import known_ids, relationship_ids

# -- parameter values --------------------------------------------------------------------


def _canonical(
    release: Release, value: str, table: str, column: str, parameter: str, label: str
) -> str:
    known = known_ids(release, table, column)
    canonical = known.get(value.strip().lower())
    if canonical is None:
        suggestions = difflib.get_close_matches(value, sorted(known.values()), n=5, cutoff=0.5)
        raise invalid(
            f"Parameter '{parameter}': unknown {label} {value!r}; see {table} for the "
            f"{column} values.",
            suggestions=suggestions,
        )
    return canonical


def canonical_domain(release: Release, value: str | None) -> str | None:
    """``value`` as the release spells it (``condition`` → ``Condition``), or invalid."""
    if value is None:
        return None
    return _canonical(release, value, "omop_domain", "domain_id", "domain", "domain")


def canonical_vocabulary(release: Release, value: str | None) -> str | None:
    if value is None:
        return None
    return _canonical(
        release, value, "omop_vocabulary", "vocabulary_id", "vocabulary_id", "vocabulary"
    )


def canonical_relationship(release: Release, value: str | None) -> str | None:
    if value is None:
        return None
    canonical = relationship_ids(release).get(value.strip().lower())
    if canonical is None:
        raise invalid(
            f"Parameter 'relationship_id': unknown relationship {value!r}; see "
            "omop_relationship for the relationship_id values."
        )
    return canonical


# -- restrictions on matched concepts ------------------------------------------------------

#: Concepts (``omop_concept.concept_id``) descending from one of the parents given as
#: the three list parameters, or mapping ("Maps to") to such a descendant.
UNDER_PARENTS_SQL = """
    SELECT descendant_concept_id FROM omop_concept_ancestor
    WHERE ancestor_concept_id IN (SELECT unnest(?::BIGINT[]))
    UNION SELECT unnest(?::BIGINT[])
    UNION
    SELECT r.concept_id_1
    FROM omop_concept_relationship r
    JOIN omop_concept_ancestor a ON a.descendant_concept_id = r.concept_id_2
    WHERE r.relationship_id = 'Maps to' AND r.invalid_reason IS NULL
      AND a.ancestor_concept_id IN (SELECT unnest(?::BIGINT[]))
"""


@dataclass(frozen=True)
class ConceptFilter:
    """Restrictions on matched concepts, already validated and canonical."""

    domain: str | None = None
    vocabulary_id: str | None = None
    standard_only: bool = False
    active_only: bool = False
    parent_ids: tuple[int, ...] = ()

    def concept_sql(self, alias: str = "c") -> tuple[str, list[Any]]:
        """A WHERE fragment over ``omop_concept AS alias`` and its parameters."""
        clauses, params = ["TRUE"], []
        if self.domain is not None:
            clauses.append(f"{alias}.domain_id = ?")
            params.append(self.domain)
        if self.vocabulary_id is not None:
            clauses.append(f"{alias}.vocabulary_id = ?")
            params.append(self.vocabulary_id)
        if self.standard_only:
            clauses.append(f"{alias}.standard_concept = 'S'")
        if self.active_only:
            clauses.append(f"{alias}.invalid_reason IS NULL")
        if self.parent_ids:
            clauses.append(f"{alias}.concept_id IN ({UNDER_PARENTS_SQL})")
            params += [list(self.parent_ids)] * 3
        return " AND ".join(clauses), params

    def doc_mask(self, release: Release) -> np.ndarray:
        """The concept documents of ``search_doc`` passing the filter."""
        clauses, params = ["source = 'omop'", "kind = 'concept'"], []
        if self.domain is not None:
            clauses.append("domain = ?")
            params.append(self.domain)
        if self.vocabulary_id is not None:
            clauses.append("vocabulary = ?")
            params.append(self.vocabulary_id)
        if self.standard_only:
            clauses.append("standard_concept = 'S'")
        if self.active_only:
            clauses.append("is_valid")
        if self.parent_ids:
            clauses.append(f"TRY_CAST(entity_id AS BIGINT) IN ({UNDER_PARENTS_SQL})")
            params += [list(self.parent_ids)] * 3
        return mask_from_sql(release, " AND ".join(clauses), params)


def concept_doc_mask(release: Release) -> np.ndarray:
    """Every OMOP concept document (cached: the base of normalization and availability)."""
    return cached(release, "concept_mask", lambda: ConceptFilter().doc_mask(release))


def standard_doc_mask(release: Release) -> np.ndarray:
    """The standard concepts' documents (cached)."""
    return cached(
        release, "standard_mask", lambda: ConceptFilter(standard_only=True).doc_mask(release)
    )
