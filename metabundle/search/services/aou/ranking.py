"""All of Us search: the catalogue filters and :func:`rank_items`, which ranks through
the pipeline with the ``aou_catalog`` policy of :mod:`metabundle.search.ranking.policies`
(exact identifiers first by role, BM25 and a title-similarity fallback fused by
reciprocal rank for keyword, BM25, cosine and the title match weighted for hybrid,
answers folded into their questions, intent signals, at most two results per title and
domain).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from metabundle.search.ranking.pipeline import rank
from metabundle.search.ranking.policies import AOU_CATALOG
from metabundle.search.release import Release
from metabundle.search.retrieval import Hit, Retrieval, mask_from_sql
from metabundle.search.services.aou.models import SearchFilters
from metabundle.search.services.aou.queries import SOURCE, item_rows


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

    def describe(self) -> SearchFilters:
        """The filters given, as answers show them."""
        return SearchFilters.model_validate(
            {k: v for k, v in self.__dict__.items() if v is not None}
        )


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
