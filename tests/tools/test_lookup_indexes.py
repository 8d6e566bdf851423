"""The lookups every search request or grounding makes are keyed: DuckDB answers them
from an index instead of reading the table (``release/duckdb_file.py``,
``LOOKUP_INDEXES``)."""

from __future__ import annotations

import pytest

from metabundle.search.release import Release


@pytest.mark.parametrize(
    ("table", "condition"),
    [
        ("search_identifier", "identifier = '21001'"),
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
