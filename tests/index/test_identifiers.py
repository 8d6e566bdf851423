"""The release's identifiers file: ``search_identifier`` in identifier order, which every
search request looks its query up in before ranking."""

from __future__ import annotations

from metabundle.release.identifiers import IDENTIFIERS_FILE
from metabundle.search.release import Release
from metabundle.search.tools import call_tool


def test_the_identifiers_file_holds_search_identifier_in_identifier_order(
    release: Release,
) -> None:
    with release.cursor() as cur:
        expected = cur.sql(
            "SELECT identifier, docno FROM search_identifier ORDER BY identifier, docno"
        ).to_arrow_table()
    identifiers = release.identifiers
    assert identifiers.num_rows == expected.num_rows > 0
    stored = [batch.to_pylist() for batch in identifiers.batches]
    assert [row for batch in stored for row in batch] == expected.to_pylist()


def test_a_lookup_finds_every_document_of_an_identifier(release: Release) -> None:
    """Identifiers held by several documents, at the first and last rows of the file's
    batches and at every few hundredth row, are found with all their documents, as
    DuckDB finds them; identifiers that are not there (before the first, after the
    last, a prefix, between two) find none."""
    identifiers = release.identifiers
    starts = [0]
    for batch in identifiers.batches:
        starts.append(starts[-1] + len(batch))
    rows = release.query(
        "SELECT identifier, list(docno ORDER BY docno) FROM search_identifier GROUP BY 1"
    )
    by_identifier = {identifier: tuple(docnos) for identifier, docnos in rows}
    column = [value for batch in identifiers.batches for value in batch["identifier"].to_pylist()]
    sampled = {column[i] for i in {*starts[:-1], *(s - 1 for s in starts[1:]), 0}}
    sampled |= set(column[:: max(1, len(column) // 300)])
    shared = [i for i, docnos in by_identifier.items() if len(docnos) > 1]
    assert shared, "the release has no identifier held by several documents"
    sampled |= set(shared[:50])
    for identifier in sorted(sampled):
        assert release.identified(identifier) == by_identifier[identifier], identifier
    first, last = column[0], column[-1]
    absent = {"", last + "~", first + "\x00", column[len(column) // 2] + "\x00"}
    for identifier in absent - set(by_identifier):
        assert release.identified(identifier) == ()


def test_an_exact_identifier_query_is_answered_from_the_file(release: Release) -> None:
    """``search_all`` resolves an accession through the file: the entity comes first."""
    assert IDENTIFIERS_FILE in {entry["path"] for entry in release.manifest["files"]}
    (docno,) = release.identified("21001")
    (row,) = release.shown_rows([docno], ("doc_id",))
    payload = call_tool(release, "search_all", {"query": "21001", "method": "keyword"})
    assert payload["results"][0]["doc_id"] == row["doc_id"]


def test_an_identifier_is_looked_up_in_the_file_not_in_duckdb(release: Release) -> None:
    """Lookups leave no DuckDB memory behind (its index nodes and table blocks stay for
    the life of a connection): a new connection holds as much after forty lookups as
    before them."""
    column = release.identifiers.batches[0]["identifier"]
    sample = [column[i].as_py() for i in range(0, len(column), max(1, len(column) // 40))]
    with Release.open(release.path) as fresh:
        used = "SELECT count(*), sum(memory_usage_bytes) FROM duckdb_memory()"
        before = fresh.query(used)
        assert all(fresh.identified(identifier) for identifier in sample)
        assert fresh.query(used) == before
