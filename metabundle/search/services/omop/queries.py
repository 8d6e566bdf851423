"""The SQL of the OMOP tools: parameterized reads of the release's vocabulary tables
and of the ``concept_crosswalk`` table, returning rows (``omop_concept`` rows carry
:data:`.concepts.CONCEPT_FIELDS`)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from metabundle.schemas.omop import LOOKUP_COPIES
from metabundle.search.release import Release
from metabundle.search.services.omop.concepts import (
    CONCEPT_COLUMNS,
    IS_A,
    MAPS_TO,
    SELF,
    athena_url_sql,
    cached,
    is_standard,
)

DATED_COLUMNS = f"{CONCEPT_COLUMNS}, c.valid_start_date, c.valid_end_date"


@dataclass(frozen=True)
class Listing:
    """The first rows of a list (up to its limit) and what the whole list holds."""

    rows: list[dict[str, Any]]
    total: int
    not_in_release: int = 0
    by_relationship: dict[str, int] = field(default_factory=dict)

    @property
    def truncated(self) -> bool:
        return self.total > len(self.rows)


# -- ids the release knows ---------------------------------------------------------------


def known_ids(release: Release, table: str, column: str) -> dict[str, str]:
    """Lower-cased id → canonical id of the domains or vocabularies of the release (the
    ``column`` values of ``table`` and of ``omop_concept``)."""

    def compute() -> dict[str, str]:
        rows = release.query(
            f"SELECT {column} FROM {table} UNION SELECT {column} FROM omop_concept"
        )
        return {str(r[0]).lower(): str(r[0]) for r in rows if r[0] is not None}

    return cached(release, f"ids:{table}", compute)


def relationship_ids(release: Release) -> dict[str, str]:
    """Lower-cased relationship id → as the release spells it."""

    def compute() -> dict[str, str]:
        rows = release.query(
            "SELECT relationship_id FROM omop_relationship UNION "
            "SELECT DISTINCT relationship_id FROM omop_concept_relationship"
        )
        return {str(r[0]).lower(): str(r[0]) for r in rows}

    return cached(release, "relationship_ids", compute)


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


def lookup_table(release: Release, name: str, *, by_other_key: bool) -> str:
    """``name``, or with ``by_other_key`` its copy sorted by its other key
    (:data:`metabundle.schemas.omop.LOOKUP_COPIES`) where the release has one, so a
    lookup by a concept's ancestors or inbound relationships reads a few row groups."""
    if not by_other_key:
        return name
    copy = LOOKUP_COPIES[name].name
    return copy if cached(release, f"has:{copy}", lambda: release.has_table(copy)) else name


# -- concepts ----------------------------------------------------------------------------


def concepts_by_id(release: Release, ids: Iterable[int]) -> dict[int, dict[str, Any]]:
    """Concept rows of ``ids`` present in the release, keyed by id. ``list_contains``
    lets DuckDB read them through the primary key's index (``IN (SELECT unnest(...))``
    is a join that reads the whole table)."""
    wanted = list(dict.fromkeys(int(i) for i in ids))
    if not wanted:
        return {}
    rows = release.query_dicts(
        f"SELECT {CONCEPT_COLUMNS} FROM omop_concept c "
        "WHERE list_contains(?::BIGINT[], c.concept_id)",
        [wanted],
    )
    return {int(r["concept_id"]): r for r in rows}


def concepts_by_docno(release: Release, docnos: list[int]) -> dict[int, dict[str, Any]]:
    """Concept rows of concept documents, keyed by docno: the documents' concept ids
    from the release's rows file, their rows by :func:`concepts_by_id`."""
    concept_of = {
        int(row["docno"]): int(row["entity_id"])
        for row in release.shown_rows(docnos, ["docno", "source", "entity_id"])
        if row["source"] == "omop" and str(row["entity_id"]).isdigit()
    }
    rows = concepts_by_id(release, concept_of.values())
    return {docno: dict(rows[c]) for docno, c in concept_of.items() if c in rows}


def concept_docno(release: Release, concept_id: int) -> int | None:
    """The docno of the concept's document, if it has one."""
    rows = release.query(
        "SELECT docno FROM search_doc WHERE source = 'omop' AND kind = 'concept' AND entity_id = ?",
        [str(concept_id)],
    )
    return int(rows[0][0]) if rows else None


def dated_concept_row(release: Release, concept_id: int) -> dict[str, Any] | None:
    """The concept row of ``concept_id`` with its validity dates, if present."""
    rows = release.query_dicts(
        f"SELECT {DATED_COLUMNS} FROM omop_concept c WHERE c.concept_id = ?", [concept_id]
    )
    return rows[0] if rows else None


def concept_rows_with_code(release: Release, vocabulary_id: str, code: str) -> list[dict[str, Any]]:
    """The concept rows (with validity dates) holding the code in the vocabulary,
    ignoring case: exact case first, then valid ones, by id."""
    return release.query_dicts(
        f"SELECT {DATED_COLUMNS} FROM omop_concept c "
        "WHERE c.vocabulary_id = ? AND lower(c.concept_code) = lower(?) "
        "ORDER BY (c.concept_code = ?) DESC, (c.invalid_reason IS NULL) DESC, c.concept_id",
        [vocabulary_id, code, code],
    )


def codes_starting_with(release: Release, vocabulary_id: str, prefix: str) -> list[str]:
    """Up to 500 codes of the vocabulary starting with ``prefix``, ignoring case."""
    rows = release.query(
        "SELECT DISTINCT concept_code FROM omop_concept WHERE vocabulary_id = ? "
        "AND starts_with(lower(concept_code), lower(?)) ORDER BY concept_code LIMIT 500",
        [vocabulary_id, prefix],
    )
    return [r[0] for r in rows]


def vocabularies_with_code(release: Release, code: str) -> list[str]:
    """Up to 10 vocabularies holding ``code``, ignoring case."""
    rows = release.query(
        "SELECT DISTINCT vocabulary_id FROM omop_concept WHERE lower(concept_code) = lower(?) "
        "ORDER BY vocabulary_id LIMIT 10",
        [code],
    )
    return [r[0] for r in rows]


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


def vocabulary_counts(release: Release, ids: list[int]) -> dict[str, int]:
    """How many of ``ids`` each vocabulary holds (``(not in release)`` for the others),
    most first."""
    rows = release.query(
        "SELECT coalesce(vocabulary_id, '(not in release)'), count(*) FROM "
        "(SELECT unnest(?::BIGINT[]) AS concept_id) s LEFT JOIN omop_concept USING (concept_id) "
        "GROUP BY 1 ORDER BY 2 DESC, 1",
        [ids],
    )
    return {str(k): int(v) for k, v in rows}


# -- standard concepts and ancestry --------------------------------------------------------


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


def is_a_parents(release: Release, ids: list[int]) -> list[tuple[int, int]]:
    """Valid ``(child, parent)`` "Is a" edges of ``ids`` to concepts of the release."""
    rows = release.query(
        "SELECT r.concept_id_1, r.concept_id_2 FROM omop_concept_relationship r "
        "JOIN omop_concept c ON c.concept_id = r.concept_id_2 "
        "WHERE r.concept_id_1 IN (SELECT unnest(?::BIGINT[])) AND r.relationship_id = ? "
        "AND r.invalid_reason IS NULL ORDER BY 2, 1",
        [ids, IS_A],
    )
    return [(int(a), int(b)) for a, b in rows]


def valid_edges(
    release: Release, frontier: list[int], forward: bool, within_domain: bool
) -> list[tuple[int, str, int]]:
    """Valid edges ``(from, relationship_id, to)`` leaving ``frontier`` (or, backward,
    entering it), between concepts of the release."""
    near, far = ("concept_id_1", "concept_id_2") if forward else ("concept_id_2", "concept_id_1")
    domain = "AND a.domain_id = b.domain_id" if within_domain else ""
    table = lookup_table(release, "omop_concept_relationship", by_other_key=not forward)
    rows = release.query(
        f"SELECT r.{near}, r.relationship_id, r.{far} FROM {table} r "
        f"JOIN omop_concept a ON a.concept_id = r.{near} "
        f"JOIN omop_concept b ON b.concept_id = r.{far} "
        f"WHERE r.{near} IN (SELECT unnest(?::BIGINT[])) AND r.invalid_reason IS NULL "
        f"AND r.{near} <> r.{far} {domain} ORDER BY r.{far}, r.{near}, r.relationship_id",
        [frontier],
    )
    return [(int(a), str(rel), int(b)) for a, rel, b in rows]


# -- a concept's bounded lists (concept_get) ------------------------------------------------

RELATIONSHIP_ORDER = (
    "CASE r.relationship_id WHEN 'Maps to' THEN 0 WHEN 'Is a' THEN 1 "
    "WHEN 'Subsumes' THEN 2 ELSE 3 END, r.relationship_id"
)
#: A related concept, which may be missing from the release (``in_release`` false).
RELATED_COLUMNS = (
    "c.concept_name, c.vocabulary_id, c.domain_id, c.concept_class_id, "
    "CASE WHEN c.concept_id IS NOT NULL THEN coalesce(c.standard_concept = 'S', FALSE) END "
    "AS standard_concept, c.concept_id IS NOT NULL AS in_release"
)


def _bounded(
    release: Release, count_sql: str, items_sql: str, params: list[Any], limit: int
) -> Listing:
    total = int(release.query(count_sql, params)[0][0])
    rows = release.query_dicts(items_sql + " LIMIT ?", [*params, limit]) if total else []
    return Listing(rows, total)


def synonym_listing(release: Release, concept_id: int, limit: int) -> Listing:
    """The concept's synonyms, English first."""
    return _bounded(
        release,
        "SELECT count(*) FROM omop_concept_synonym WHERE concept_id = ?",
        "SELECT concept_synonym_name, language_concept_id FROM omop_concept_synonym "
        "WHERE concept_id = ? ORDER BY language_concept_id <> 4180186, concept_synonym_name",
        [concept_id],
        limit,
    )


def relationship_listing(
    release: Release, concept_id: int, relationship_id: str | None, limit: int
) -> Listing:
    """The concept's outbound relationships ("Maps to", "Is a", "Subsumes" first), of
    ``relationship_id`` only when given, counted by relationship."""
    where, args = "r.concept_id_1 = ?", [concept_id]
    if relationship_id is not None:
        where += " AND r.relationship_id = ?"
        args.append(relationship_id)
    listing = _bounded(
        release,
        f"SELECT count(*) FROM omop_concept_relationship r WHERE {where}",
        f"SELECT r.relationship_id, r.concept_id_2 AS concept_id, {RELATED_COLUMNS}, "
        f"r.invalid_reason, {athena_url_sql('r.concept_id_2')} FROM omop_concept_relationship r "
        f"LEFT JOIN omop_concept c ON c.concept_id = r.concept_id_2 WHERE {where} "
        f"ORDER BY {RELATIONSHIP_ORDER}, (c.concept_id IS NULL), r.concept_id_2",
        args,
        limit,
    )
    counts = release.query(
        f"SELECT r.relationship_id, count(*) FROM omop_concept_relationship r WHERE {where} "
        "GROUP BY 1 ORDER BY 1",
        args,
    )
    return Listing(listing.rows, listing.total, by_relationship={k: int(v) for k, v in counts})


def relative_listing(release: Release, concept_id: int, limit: int, *, ancestors: bool) -> Listing:
    """The concept's ancestors (or descendants), self excluded, nearest first."""
    this, other = ("descendant", "ancestor") if ancestors else ("ancestor", "descendant")
    where = f"a.{this}_concept_id = ? AND a.{other}_concept_id <> ?"
    return _bounded(
        release,
        f"SELECT count(*) FROM omop_concept_ancestor a WHERE {where}",
        f"SELECT a.{other}_concept_id AS concept_id, {RELATED_COLUMNS}, "
        "a.min_levels_of_separation, a.max_levels_of_separation, "
        f"{athena_url_sql(f'a.{other}_concept_id')} "
        f"FROM omop_concept_ancestor a LEFT JOIN omop_concept c "
        f"ON c.concept_id = a.{other}_concept_id WHERE {where} "
        f"ORDER BY a.min_levels_of_separation, a.{other}_concept_id",
        [concept_id, concept_id],
        limit,
    )


# -- the concept graph ----------------------------------------------------------------------


def hierarchy_listing(
    release: Release,
    concept_id: int,
    min_depth: int,
    max_depth: int,
    limit: int,
    *,
    ancestors: bool,
) -> Listing:
    """The concept's ancestors (or descendants) between ``min_depth`` and ``max_depth``
    levels, nearest first, each with its levels of separation; those missing from the
    release are counted, not listed."""
    this, other = ("descendant", "ancestor") if ancestors else ("ancestor", "descendant")
    table = lookup_table(release, "omop_concept_ancestor", by_other_key=ancestors)
    where = f"a.{this}_concept_id = ? AND a.min_levels_of_separation BETWEEN ? AND ?"
    args = [concept_id, min_depth, max_depth]
    ((total, known),) = release.query(
        f"SELECT count(*), count(c.concept_id) FROM {table} a "
        f"LEFT JOIN omop_concept c ON c.concept_id = a.{other}_concept_id WHERE {where}",
        args,
    )
    rows = release.query_dicts(
        f"SELECT {CONCEPT_COLUMNS}, a.min_levels_of_separation, a.max_levels_of_separation "
        f"FROM {table} a JOIN omop_concept c ON c.concept_id = a.{other}_concept_id "
        f"WHERE {where} ORDER BY a.min_levels_of_separation, c.concept_id LIMIT ?",
        [*args, limit],
    )
    return Listing(rows, int(known), int(total) - int(known))


def edge_listing(
    release: Release,
    concept_id: int,
    *,
    inbound: bool,
    relationship_id: str | None,
    hierarchical_only: bool,
    active_only: bool,
    limit: int,
) -> Listing:
    """The concept's outbound (``concept_id_1``) or inbound relationships, by
    relationship and concept, each row with ``relationship_invalid_reason`` and the
    related concept; those to concepts missing from the release are counted, not
    listed."""
    here, there = ("concept_id_2", "concept_id_1") if inbound else ("concept_id_1", "concept_id_2")
    table = lookup_table(release, "omop_concept_relationship", by_other_key=inbound)
    clauses, args = [f"r.{here} = ?"], [concept_id]
    if relationship_id is not None:
        clauses.append("r.relationship_id = ?")
        args.append(relationship_id)
    if hierarchical_only:
        clauses.append(
            "r.relationship_id IN (SELECT relationship_id FROM omop_relationship "
            "WHERE is_hierarchical = '1')"
        )
    if active_only:
        clauses.append("r.invalid_reason IS NULL")
    where = " AND ".join(clauses)
    ((total, known),) = release.query(
        f"SELECT count(*), count(c.concept_id) FROM {table} r "
        f"LEFT JOIN omop_concept c ON c.concept_id = r.{there} WHERE {where}",
        args,
    )
    rows = release.query_dicts(
        f"SELECT r.relationship_id, r.invalid_reason AS relationship_invalid_reason, "
        f"{CONCEPT_COLUMNS} FROM {table} r "
        f"JOIN omop_concept c ON c.concept_id = r.{there} WHERE {where} "
        "ORDER BY r.relationship_id, c.concept_id LIMIT ?",
        [*args, limit],
    )
    counts = release.query(
        f"SELECT r.relationship_id, count(*) FROM {table} r "
        f"JOIN omop_concept c ON c.concept_id = r.{there} WHERE {where} GROUP BY 1 ORDER BY 1",
        args,
    )
    return Listing(rows, int(known), int(total) - int(known), {k: int(v) for k, v in counts})


# -- the crosswalk --------------------------------------------------------------------------

CROSSWALK = "concept_crosswalk"
LINK_COLUMNS = (
    "x.entity_kind, x.entity_id, x.entity_label, x.concept_id, x.source_concept_id, "
    "x.source_vocabulary_id, x.source_code, x.relationship_id, x.method, x.link_type, "
    "x.score, x.provenance"
)
LINK_ORDER = "(x.link_type <> 'curated'), x.score DESC NULLS FIRST, x.entity_id, x.concept_id"


def is_linked(release: Release, concept_id: int) -> bool:
    """Whether any source links to the concept."""
    return release.has_table(CROSSWALK) and bool(
        release.query(f"SELECT 1 FROM {CROSSWALK} WHERE concept_id = ? LIMIT 1", [concept_id])
    )


def concept_links(
    release: Release,
    concept_id: int,
    *,
    include_descendants: bool,
    include_similarity: bool,
    limit: int,
) -> tuple[list[tuple[str, int, int]], list[dict[str, Any]]]:
    """Links to the concept (and its descendants): ``(source, links, entities)`` per
    source, and the first ``limit`` links of each source (:data:`LINK_COLUMNS` and
    ``source``), curated first; nothing when the release has no crosswalk."""
    if not release.has_table(CROSSWALK):
        return [], []
    wanted = "SELECT ?::BIGINT"
    args: list[Any] = [concept_id]
    if include_descendants:
        wanted += (
            " UNION SELECT descendant_concept_id FROM omop_concept_ancestor "
            "WHERE ancestor_concept_id = ?"
        )
        args.append(concept_id)
    where = f"x.concept_id IN ({wanted})"
    if not include_similarity:
        where += " AND x.link_type = 'curated'"
    counts = release.query(
        f"SELECT x.source, count(*), count(DISTINCT x.entity_id) FROM {CROSSWALK} x "
        f"WHERE {where} GROUP BY 1 ORDER BY 1",
        args,
    )
    rows = release.query_dicts(
        f"SELECT x.source, {LINK_COLUMNS} FROM {CROSSWALK} x WHERE {where} "
        f"QUALIFY row_number() OVER (PARTITION BY x.source ORDER BY {LINK_ORDER}) <= ? "
        f"ORDER BY x.source, {LINK_ORDER}",
        [*args, limit],
    )
    return [(str(s), int(n), int(e)) for s, n, e in counts], rows


def entity_links(release: Release, source: str, entity_id: str) -> list[dict[str, Any]]:
    """The links of one entity, curated first (empty when the release has no crosswalk)."""
    if not release.has_table(CROSSWALK):
        return []
    return release.query_dicts(
        f"SELECT x.concept_id, x.relationship_id, x.method, x.link_type, x.score, "
        f"x.provenance FROM {CROSSWALK} x WHERE x.source = ? AND x.entity_id = ? "
        f"ORDER BY {LINK_ORDER}",
        [source, entity_id],
    )
