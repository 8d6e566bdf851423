"""Reading OMOP concepts for the concept tools: rows, filters, "Maps to" and ancestry.

Everything here is parameterized SQL over the CDM v5.4 vocabulary tables of the
release (``omop_concept``, ``omop_concept_synonym``, ``omop_concept_relationship``,
``omop_concept_ancestor``, ``omop_domain``, ``omop_vocabulary``) and the concept
documents of ``search_doc`` (kind ``concept``, filter columns ``domain``,
``vocabulary``, ``standard_concept``, ``is_valid``).

Conventions shared by every OMOP tool:

* a concept is returned as :data:`CONCEPT_FIELDS`, with ``standard_concept`` as a
  boolean (true only for ``S``; classification concepts ``C`` are not standard);
* a standard target of "Maps to" is a concept of the release with
  ``standard_concept = 'S'`` and no ``invalid_reason``, reached by a relationship row
  with no ``invalid_reason``; targets missing from the release are not reported (the
  mirror's subsets hold relationships to concepts they do not ship);
* a domain or vocabulary filter is checked against ``omop_domain``/``omop_vocabulary``
  (and the ids concepts actually use), case-insensitively, and canonicalized.
"""

from __future__ import annotations

import difflib
import threading
import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from metabundle.schemas.omop import LOOKUP_COPIES
from metabundle.search.errors import invalid
from metabundle.search.release import Release
from metabundle.search.retrieval import mask_from_sql

MAX_CONCEPT_ID = 2**63 - 1
MAPS_TO = "Maps to"
SELF = "self"

#: The fields of a concept in every result, in the contract's order.
CONCEPT_FIELDS = (
    "concept_id",
    "concept_name",
    "concept_code",
    "vocabulary_id",
    "domain_id",
    "concept_class_id",
    "standard_concept",
    "invalid_reason",
)
CONCEPT_COLUMNS = ", ".join(f"c.{name}" for name in CONCEPT_FIELDS)


ATHENA_TERMS = "https://athena.ohdsi.org/search-terms/terms/"


def athena_url(concept_id: int) -> str:
    """The concept's page on OHDSI Athena (any concept id, in this release or not)."""
    return f"{ATHENA_TERMS}{int(concept_id)}"


def athena_url_sql(column: str) -> str:
    """SQL for the Athena page of the concept id in ``column``, as ``athena_url``."""
    return f"'{ATHENA_TERMS}' || {column} AS athena_url"


def concept_item(row: dict[str, Any]) -> dict[str, Any]:
    """The public shape of a concept row (``standard_concept`` as a boolean), with its
    Athena page."""
    item = {name: row[name] for name in CONCEPT_FIELDS}
    item["concept_id"] = int(item["concept_id"])
    item["standard_concept"] = row["standard_concept"] == "S"
    item["athena_url"] = athena_url(item["concept_id"])
    return item


def is_standard(row: dict[str, Any]) -> bool:
    return row["standard_concept"] == "S" and row["invalid_reason"] is None


# -- per-release caches -------------------------------------------------------------

_cache: weakref.WeakKeyDictionary[Release, dict[str, Any]] = weakref.WeakKeyDictionary()
_cache_lock = threading.Lock()


def cached(release: Release, key: str, compute: Callable[[], Any]) -> Any:
    """``compute()`` once per opened release (releases are immutable)."""
    with _cache_lock:
        entry = _cache.setdefault(release, {})
        if key in entry:
            return entry[key]
    value = compute()
    with _cache_lock:
        return _cache[release].setdefault(key, value)


# -- filter validation -----------------------------------------------------------------


def _known_ids(release: Release, table: str, column: str) -> dict[str, str]:
    """Lower-cased id → canonical id of the domains or vocabularies of the release."""

    def compute() -> dict[str, str]:
        rows = release.query(
            f"SELECT {column} FROM {table} UNION SELECT {column} FROM omop_concept"
        )
        return {str(r[0]).lower(): str(r[0]) for r in rows if r[0] is not None}

    return cached(release, f"ids:{table}", compute)


def _canonical(
    release: Release, value: str, table: str, column: str, parameter: str, label: str
) -> str:
    known = _known_ids(release, table, column)
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


# -- filters ---------------------------------------------------------------------------

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


# -- lookups ---------------------------------------------------------------------------


def lookup_table(release: Release, name: str, *, by_other_key: bool) -> str:
    """``name``, or with ``by_other_key`` its copy sorted by its other key
    (:data:`metabundle.schemas.omop.LOOKUP_COPIES`) where the release has one, so a
    lookup by a concept's ancestors or inbound relationships reads a few row groups."""
    if not by_other_key:
        return name
    copy = LOOKUP_COPIES[name].name
    return copy if cached(release, f"has:{copy}", lambda: release.has_table(copy)) else name


def concepts_by_id(release: Release, ids: Iterable[int]) -> dict[int, dict[str, Any]]:
    """Concept rows of ``ids`` present in the release, keyed by id."""
    wanted = list(dict.fromkeys(int(i) for i in ids))
    if not wanted:
        return {}
    rows = release.query_dicts(
        f"SELECT {CONCEPT_COLUMNS} FROM omop_concept c "
        "WHERE c.concept_id IN (SELECT unnest(?::BIGINT[]))",
        [wanted],
    )
    return {int(r["concept_id"]): r for r in rows}


def concepts_by_docno(release: Release, docnos: list[int]) -> dict[int, dict[str, Any]]:
    """Concept rows of concept documents, keyed by docno."""
    if not docnos:
        return {}
    rows = release.query_dicts(
        f"SELECT d.docno, {CONCEPT_COLUMNS} FROM search_doc d "
        "JOIN omop_concept c ON c.concept_id = TRY_CAST(d.entity_id AS BIGINT) "
        "WHERE d.source = 'omop' AND d.docno IN (SELECT unnest(?::INTEGER[]))",
        [list(docnos)],
    )
    return {int(r.pop("docno")): r for r in rows}


def synonyms_of(release: Release, ids: Iterable[int]) -> dict[int, list[str]]:
    """Distinct synonyms of each concept (every language), shortest first."""
    wanted = list(dict.fromkeys(int(i) for i in ids))
    if not wanted:
        return {}
    rows = release.query(
        "SELECT DISTINCT concept_id, concept_synonym_name FROM omop_concept_synonym "
        "WHERE concept_id IN (SELECT unnest(?::BIGINT[])) "
        "ORDER BY concept_id, length(concept_synonym_name), concept_synonym_name",
        [wanted],
    )
    found: dict[int, list[str]] = {}
    for concept_id, name in rows:
        found.setdefault(int(concept_id), []).append(name)
    return found


def standard_targets(release: Release, ids: Iterable[int]) -> dict[int, list[dict[str, Any]]]:
    """Valid standard "Maps to" targets of each concept, by target id (may be empty)."""
    wanted = list(dict.fromkeys(int(i) for i in ids))
    if not wanted:
        return {}
    rows = release.query_dicts(
        f"SELECT r.concept_id_1 AS source_id, {CONCEPT_COLUMNS} "
        "FROM omop_concept_relationship r "
        "JOIN omop_concept c ON c.concept_id = r.concept_id_2 "
        "WHERE r.concept_id_1 IN (SELECT unnest(?::BIGINT[])) "
        "AND r.relationship_id = 'Maps to' AND r.invalid_reason IS NULL "
        "AND c.standard_concept = 'S' AND c.invalid_reason IS NULL "
        "ORDER BY r.concept_id_1, c.concept_id",
        [wanted],
    )
    targets: dict[int, list[dict[str, Any]]] = {i: [] for i in wanted}
    for row in rows:
        targets[int(row.pop("source_id"))].append(row)
    return targets


def to_standard(
    release: Release, rows: list[dict[str, Any]]
) -> dict[int, list[tuple[dict[str, Any], str]]]:
    """For each concept row: its standard equivalents as ``(row, relationship_id)``.

    A valid standard concept is its own equivalent (``self``); any other concept gets
    its valid standard "Maps to" targets, possibly none.
    """
    mapped = standard_targets(release, [r["concept_id"] for r in rows if not is_standard(r)])
    result: dict[int, list[tuple[dict[str, Any], str]]] = {}
    for row in rows:
        concept_id = int(row["concept_id"])
        if is_standard(row):
            result[concept_id] = [(row, SELF)]
        else:
            result[concept_id] = [(target, MAPS_TO) for target in mapped.get(concept_id, [])]
    return result


def descending_from(release: Release, ids: Iterable[int], parent_ids: Iterable[int]) -> set[int]:
    """The ``ids`` that are one of ``parent_ids`` or descend from one of them."""
    wanted, parents = list(dict.fromkeys(ids)), list(parent_ids)
    if not wanted or not parents:
        return set()
    rows = release.query(
        "SELECT DISTINCT descendant_concept_id FROM omop_concept_ancestor "
        "WHERE descendant_concept_id IN (SELECT unnest(?::BIGINT[])) "
        "AND ancestor_concept_id IN (SELECT unnest(?::BIGINT[]))",
        [wanted, parents],
    )
    return {int(r[0]) for r in rows} | (set(wanted) & set(parents))


def known_hierarchy_ids(release: Release, ids: Iterable[int]) -> set[int]:
    """The ``ids`` known to the release as a concept or as an ancestor in the hierarchy."""
    wanted = list(dict.fromkeys(ids))
    rows = release.query(
        "SELECT concept_id FROM omop_concept WHERE concept_id IN (SELECT unnest(?::BIGINT[])) "
        "UNION SELECT ancestor_concept_id FROM omop_concept_ancestor "
        "WHERE ancestor_concept_id IN (SELECT unnest(?::BIGINT[]))",
        [wanted, wanted],
    )
    return {int(r[0]) for r in rows}
