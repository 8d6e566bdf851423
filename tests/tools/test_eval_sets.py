"""The evaluation sets (``tests/eval/<source>.jsonl``) say where each query came from,
lean on independent public material, and name only entities of the release they are
evaluated on.

Every line carries ``provenance``: ``kind`` is ``independent`` (public material that
names the answer: a published concept set, variable mapping, researcher's script,
paper or collection page) or ``derived`` (written for this project from the data),
``source`` a URL or citation and ``evidence`` what that source says. A line marked
``"corpus": "complete"`` is answered only by the complete mirror build; the others by
the session build.
"""

from __future__ import annotations

from collections import Counter

import pytest

from metabundle.search.release import Release
from tests.support.evaluation import CORPORA, EVAL_DIR, Query, corpus_of, load_eval

SOURCES = sorted(path.stem for path in EVAL_DIR.glob("*.jsonl"))
MIN_QUERIES = 150
PROVENANCE_KINDS = {"independent", "derived"}


def test_every_source_has_a_set() -> None:
    assert SOURCES == ["aou", "dbgap", "idc", "omop", "ukb"]


@pytest.mark.parametrize("source", SOURCES)
def test_every_line_records_where_it_came_from(source: str) -> None:
    for number, row in enumerate(load_eval(source, corpus=None), start=1):
        provenance = row.get("provenance")
        assert isinstance(provenance, dict), (source, number, row["query"])
        assert provenance.get("kind") in PROVENANCE_KINDS, (source, number, provenance)
        for key in ("source", "evidence"):
            assert isinstance(provenance.get(key), str) and provenance[key].strip(), (
                source,
                number,
                key,
            )
        assert corpus_of(row) in CORPORA, (source, number, row.get("corpus"))


@pytest.mark.parametrize("source", SOURCES)
def test_sets_are_large_and_mostly_independent(source: str) -> None:
    rows = load_eval(source, corpus=None)
    kinds = Counter(row["provenance"]["kind"] for row in rows)
    assert len(rows) >= MIN_QUERIES, (source, len(rows))
    assert kinds["independent"] * 2 >= len(rows), (source, dict(kinds))


def missing_ids(release: Release, source: str, rows: list[Query]) -> list[tuple[str, str]]:
    """(query, id) of every relevant id that names no entity of ``source`` in ``release``."""
    wanted = sorted({entity_id for row in rows for entity_id in row["relevant"]})
    present = {
        entity_id
        for (entity_id,) in release.query(
            "SELECT DISTINCT entity_id FROM search_doc WHERE source = ? "
            "AND entity_id IN (SELECT unnest(?::VARCHAR[]))",
            [source, wanted],
        )
    }
    return [(row["query"], i) for row in rows for i in row["relevant"] if i not in present]


@pytest.mark.parametrize("source", SOURCES)
def test_relevant_ids_exist_in_the_session_release(release: Release, source: str) -> None:
    rows = load_eval(source)
    assert rows, source
    assert missing_ids(release, source, rows) == []


def test_complete_lines_exist_in_the_complete_release(complete_release: Release) -> None:
    checked = 0
    for source in SOURCES:
        rows = load_eval(source, corpus="complete")
        assert missing_ids(complete_release, source, rows) == [], source
        checked += len(rows)
    assert checked, "no line is marked for the complete build"
