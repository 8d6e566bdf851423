"""The lookups the OMOP concept tools make are keyed: DuckDB answers them from an index
instead of reading the table (``release/duckdb_file.py``, ``LOOKUP_INDEXES``). Search
requests look identifiers up in ``search/identifiers.arrow`` (``tests/index/
test_identifiers.py``)."""

from __future__ import annotations

import pytest

from metabundle.search.release import Release
from metabundle.search.services.omop.queries import concepts_by_id


@pytest.mark.parametrize(
    ("table", "condition"),
    [
        ("omop_concept", "lower(concept_name) = 'sepsis'"),
        ("omop_concept", "lower(concept_code) = lower('K92.2')"),
        ("omop_concept_synonym", "lower(concept_synonym_name) = 'heart attack'"),
    ],
)
def test_a_lookup_reads_an_index_not_the_table(
    release: Release, table: str, condition: str
) -> None:
    ((_, plan),) = release.query(f"EXPLAIN ANALYZE SELECT * FROM {table} WHERE {condition}")
    assert "Index Scan" in plan and "Sequential Scan" not in plan


def test_concepts_taken_by_their_ids_are_read_through_the_key_index(release: Release) -> None:
    """``concepts_by_id`` reads concept rows with ``list_contains``, which DuckDB answers
    from the primary key's index (``IN (SELECT unnest(?))`` read the whole table)."""
    ids = [row[0] for row in release.query("SELECT concept_id FROM omop_concept LIMIT 3")]
    assert set(concepts_by_id(release, ids)) == set(ids)
    ((_, plan),) = release.query(
        "EXPLAIN ANALYZE SELECT * FROM omop_concept WHERE list_contains(?::BIGINT[], concept_id)",
        [ids],
    )
    assert "Index Scan" in plan and "Sequential Scan" not in plan
