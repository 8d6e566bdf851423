"""The release's rows file: the shown ``search_doc`` columns by docno, which search
answers are hydrated from."""

from __future__ import annotations

from pathlib import Path

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
