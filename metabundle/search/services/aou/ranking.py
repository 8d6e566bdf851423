"""All of Us search: the catalogue filters, the ``aou_item`` rows of ranked documents,
and :func:`rank_items`, which ranks through the pipeline with the ``aou_catalog``
policy of :mod:`metabundle.search.ranking.policies` (exact identifiers first by role,
BM25 and a title-similarity fallback fused by reciprocal rank for keyword, BM25, cosine
and the title match weighted for hybrid, answers folded into their questions, intent
signals, at most two results per title and domain).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from metabundle.search.ranking.pipeline import rank
from metabundle.search.ranking.policies import AOU_CATALOG
from metabundle.search.release import Release
from metabundle.search.retrieval import Hit, Retrieval, mask_from_sql

SOURCE = "aou"


@dataclass(frozen=True)
class AouFilters:
    """The catalogue filters; every value already validated against the release."""

    variable_type: str | None = None
    ehr_domain: str | None = None
    ehr_role: str | None = None
    ehr_vocabulary: str | None = None

    def where(self) -> tuple[str, list[Any]]:
        """A parameterized ``search_doc`` WHERE clause selecting the filtered items."""
        clauses, params = ["source = ?"], [SOURCE]
        for column, value in (
            ("variable_type", self.variable_type),
            ("domain", self.ehr_domain),
            ("role", self.ehr_role),
            ("vocabulary", self.ehr_vocabulary),
        ):
            if value is not None:
                clauses.append(f"{column} = ?")
                params.append(value)
        return " AND ".join(clauses), params

    def describe(self) -> dict[str, str]:
        return {k: v for k, v in self.__dict__.items() if v is not None}


# -- item rows --------------------------------------------------------------------------

ITEM_COLUMNS = (
    "result_id",
    "kind",
    "search_role",
    "is_variable",
    "variable_type",
    "title",
    "subtitle",
    "domain",
    "vocabulary",
    "concept_id",
    "concept_code",
    "ehr_role",
    "canonical_url",
)


def item_rows(release: Release, docnos: list[int]) -> dict[int, dict[str, Any]]:
    """The ``aou_item`` rows of ``docnos`` (search documents), keyed by docno."""
    if not docnos:
        return {}
    columns = ", ".join(f"i.{name}" for name in ITEM_COLUMNS)
    rows = release.query_dicts(
        f"SELECT d.docno, {columns} FROM search_doc d "
        f"JOIN aou_item i ON i.result_id = d.entity_id "
        f"WHERE d.source = ? AND d.docno IN (SELECT unnest(?::INTEGER[]))",
        [SOURCE, list(docnos)],
    )
    return {int(row.pop("docno")): row for row in rows}


def rank_items(
    release: Release,
    query: str,
    *,
    method: str,
    filters: AouFilters,
    limit: int,
    explain: bool = False,
) -> tuple[list[Hit], dict[int, dict[str, Any]], Retrieval]:
    """The top ``limit`` items for ``query`` within ``filters``, their ``aou_item``
    rows (by docno) and the retrieval block."""
    hits, retrieval = rank(
        release,
        query,
        policy=AOU_CATALOG,
        method=method,
        mask=mask_from_sql(release, *filters.where()),
        limit=limit,
        explain=explain,
    )
    return hits, item_rows(release, [h.docno for h in hits]), retrieval
