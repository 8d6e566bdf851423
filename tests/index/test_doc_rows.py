"""The release's rows file: the shown ``search_doc`` columns by docno, which search
answers are hydrated from."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from metabundle.errors import ReleaseError
from metabundle.release.doc_rows import write_doc_rows
from metabundle.schemas import get_table
from metabundle.schemas.search import SHOWN_DOC_COLUMNS
from metabundle.search.release import Release
from metabundle.search.retrieval import documents


def test_the_rows_file_holds_every_document_as_search_doc_does(release: Release) -> None:
    assert set(SHOWN_DOC_COLUMNS) <= set(get_table("search_doc").column_names)
    with release.cursor() as cur:
        expected = cur.sql(
            f"SELECT {', '.join(SHOWN_DOC_COLUMNS)} FROM search_doc ORDER BY docno"
        ).to_arrow_table()
    assert release.doc_rows.num_rows == release.n_docs == expected.num_rows
    assert release.doc_rows.table().combine_chunks().equals(expected.combine_chunks())
    last = release.n_docs - 1
    rows = documents(release, [last, 3, 0, 3])
    assert sorted(rows) == [0, 3, last]
    assert rows[3] == expected.slice(3, 1).to_pylist()[0]
    with pytest.raises(ValueError, match="docnos must lie in"):
        release.shown_rows([release.n_docs])


def test_a_gap_in_the_docnos_is_refused(release: Release, tmp_path: Path) -> None:
    gapped = tmp_path / "search_doc.parquet"
    pq.write_table(release.doc_rows.table().take([0, 1, 3]), gapped)
    with pytest.raises(ReleaseError, match=r"do not run 0\.\.n-1 \(docno 2 is missing\)"):
        write_doc_rows(gapped, tmp_path / "doc_rows.arrow")


def test_rows_are_taken_with_the_columns_asked_for(release: Release) -> None:
    wanted = [0, 5, release.n_docs // 2, release.n_docs - 1]
    full = release.shown_rows(wanted)
    some = release.shown_rows(wanted, ("docno", "title", "kind"))
    assert [list(row) for row in some] == [["docno", "title", "kind"]] * len(wanted)
    assert some == [{k: row[k] for k in ("docno", "title", "kind")} for row in full]


def test_a_document_is_found_by_its_id_at_its_place(release: Release) -> None:
    """Docnos follow doc_id order, so an id's docno is found by binary search: every
    batch's first and last rows and rows between them, each source's first and last,
    and ids that are not there (before the first, after the last, between two)."""
    rows = release.doc_rows
    samples = sorted(
        {
            0,
            rows.num_rows - 1,
            *(int(s) for s in rows.starts[:-1]),
            *(int(s) - 1 for s in rows.starts[1:]),
        }
        | {r.start for r in release.source_ranges.values()}
        | {r.stop - 1 for r in release.source_ranges.values()}
        | set(range(0, rows.num_rows, 997))
    )
    ids = {row["doc_id"]: row["docno"] for row in release.shown_rows(samples, ("docno", "doc_id"))}
    assert release.docnos_of(ids) == ids
    first, last = min(ids), max(ids)
    absent = ["", first[:-1], last + "~", first + "\x00"]
    assert release.docnos_of(absent) == {}
    assert release.docnos_of([*absent, first]) == {first: ids[first]}


def test_docnos_out_of_doc_id_order_are_refused(release: Release, tmp_path: Path) -> None:
    swapped = release.doc_rows.table().slice(0, 4).to_pylist()
    swapped[1]["doc_id"], swapped[2]["doc_id"] = swapped[2]["doc_id"], swapped[1]["doc_id"]
    path = tmp_path / "search_doc.parquet"
    pq.write_table(pa.Table.from_pylist(swapped, schema=release.doc_rows.schema), path)
    with pytest.raises(
        ReleaseError, match=r"do not follow doc_id order \(docno 2 is out of order\)"
    ):
        write_doc_rows(path, tmp_path / "doc_rows.arrow")


@pytest.mark.parametrize(
    ("source", "kind"), [("ukb", "field"), ("aou", "question"), ("idc", "collection")]
)
def test_the_documents_under_an_id_prefix_are_found_at_their_places(
    release: Release, source: str, kind: str
) -> None:
    expected = {
        entity_id: docno
        for docno, entity_id in release.query(
            "SELECT docno, entity_id FROM search_doc WHERE source = ? AND kind = ?", [source, kind]
        )
    }
    assert expected
    assert release.doc_rows.docnos_under(f"{source}:{kind}:") == expected


def test_an_id_prefix_no_document_has_finds_nothing(release: Release) -> None:
    rows = release.doc_rows
    assert rows.docnos_under("ukb:no-such-kind:") == {}
    assert rows.docnos_under("~") == {}
    assert rows.docnos_under("") == {
        row["doc_id"]: row["docno"] for row in rows.table().select(["doc_id", "docno"]).to_pylist()
    }
