"""FTS tables, the memory-mapped BM25 index and the DuckDB ``fts_search`` macro."""

from __future__ import annotations

import math
import mmap
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import duckdb
import numpy as np
import polars as pl
import pyarrow as pa
import pytest

from metabundle.index.fts import TITLE_WEIGHT, KeywordIndex, bm25_macro_sql
from metabundle.index.fts_build import FTS_SCHEMAS, build_fts_tables, write_keyword_arrays
from metabundle.index.tokenizer import tokenize

CORPUS = [
    ("Smoking status", "Current tobacco smoking; smokes daily."),
    ("Sjögren syndrome", "Dry eyes and dry mouth, autoimmune."),
    (None, "Gastrointestinal haemorrhage, K92.2. COVID-19 admission."),
    ("Study phs000179.v3.p1", "COPDGene: smoking and lung function"),
    ("Field 21001", "Body mass index (BMI) f.21001.0.0, instance p21001_i0"),
    ("Glucose", "Glucose [Mass/volume] in Serum or Plasma, LOINC 2345-7"),
    ("Ever smoked", "Smoking_100CigsLifetime: smoked 100 cigarettes in lifetime"),
    ("Blood pressure", None),
    ("", ""),
    ("Blood pressure", "systolic blood pressure, automated reading"),
    ("Ins and outs", "ATs of the ifs"),  # stems equal to stop words: in, at, if
]


def docs_table(rows: list[tuple[str | None, str | None]]) -> pa.Table:
    return pa.table(
        {
            "docno": pa.array(range(len(rows)), pa.int32()),
            "title": pa.array([r[0] for r in rows], pa.string()),
            "body": pa.array([r[1] for r in rows], pa.string()),
        }
    )


@pytest.fixture(scope="module")
def tables() -> dict[str, pa.Table]:
    return build_fts_tables(docs_table(CORPUS))


@pytest.fixture(scope="module")
def index(tables, tmp_path_factory) -> KeywordIndex:
    directory = tmp_path_factory.mktemp("kw")
    write_keyword_arrays(tables, directory)
    return KeywordIndex.open(directory)


def load_database(path: Path, tables: dict[str, pa.Table], rows) -> None:
    con = duckdb.connect(str(path))
    for name, table in tables.items():
        con.register("incoming", table)
        con.execute(f"CREATE TABLE {name} AS SELECT * FROM incoming")
        con.unregister("incoming")
    con.register("incoming", docs_table(rows))
    con.execute("CREATE TABLE search_doc AS SELECT * FROM incoming")
    con.unregister("incoming")
    con.execute(bm25_macro_sql())
    con.close()


# ------------------------------------------------------------------------- tables


def test_tables_have_the_fixed_release_schemas(tables):
    assert set(tables) == {"fts_term", "fts_posting", "fts_doc", "fts_form", "fts_stats"}
    for name, table in tables.items():
        assert table.schema.equals(FTS_SCHEMAS[name]), name
    stats = tables["fts_stats"].to_pylist()
    assert stats == [
        {
            "n_docs": len(CORPUS),
            "avg_doc_len": pytest.approx(np.mean(tables["fts_doc"]["doc_len"].to_numpy())),
            "k1": 1.2,
            "b": 0.75,
        }
    ]


def test_term_ids_follow_sorted_term_order_and_df_counts_documents(tables):
    term = tables["fts_term"]
    terms = term["term"].to_pylist()
    assert term["term_id"].to_pylist() == list(range(len(terms)))
    assert terms == sorted(terms)
    posting = pl.from_arrow(tables["fts_posting"])
    assert posting.equals(posting.sort("term_id", "docno"))
    df = posting.group_by("term_id").len().sort("term_id")["len"].to_list()
    assert term["df"].to_pylist() == df


def test_postings_are_the_title_weighted_token_counts(tables):
    expected: Counter[tuple[str, int]] = Counter()
    for docno, (title, body) in enumerate(CORPUS):
        for term in tokenize(title):
            expected[(term, docno)] += TITLE_WEIGHT
        for term in tokenize(body):
            expected[(term, docno)] += 1
    terms = tables["fts_term"]["term"].to_pylist()
    posting = tables["fts_posting"].to_pydict()
    got = {
        (terms[t], d): tf
        for t, d, tf in zip(posting["term_id"], posting["docno"], posting["tf"], strict=True)
    }
    assert got == dict(expected)
    doc_len = [TITLE_WEIGHT * len(tokenize(title)) + len(tokenize(body)) for title, body in CORPUS]
    assert tables["fts_doc"].to_pydict() == {"docno": list(range(len(CORPUS))), "doc_len": doc_len}


def test_forms_map_surface_words_to_their_terms(tables):
    terms = tables["fts_term"]["term"].to_pylist()
    forms: dict[str, set[str]] = {}
    for form, term_id in zip(*tables["fts_form"].to_pydict().values(), strict=True):
        forms.setdefault(form, set()).add(terms[term_id])
    assert forms["smoking"] == {"smoke"}
    assert forms["smokes"] == {"smoke"}
    assert forms["sjogren"] == {"sjogren"}
    assert forms["phs000179.v3.p1"] == {"phs000179.v3.p1", "phs000179", "v3", "p1"}
    assert forms["k92.2"] == {"k92.2", "k92", "2"}
    assert "k92.2." not in forms  # trailing punctuation is trimmed, as in SQL
    assert not {"and", "in", "or", "the"} & set(forms)  # stop words are absent
    form_rows = pl.from_arrow(tables["fts_form"])
    assert form_rows.equals(form_rows.sort("form", "term_id"))


def test_build_is_deterministic(tables, tmp_path):
    again = build_fts_tables(pl.from_arrow(docs_table(CORPUS)))  # polars input too
    for name, table in tables.items():
        assert again[name].equals(table), name
    write_keyword_arrays(tables, tmp_path / "a")
    write_keyword_arrays(again, tmp_path / "b")
    for path in sorted((tmp_path / "a").iterdir()):
        assert path.read_bytes() == (tmp_path / "b" / path.name).read_bytes(), path.name


def test_keyword_arrays_from_unordered_tables_read_back(tables, index, tmp_path):
    shuffled = {
        name: table.take(np.random.default_rng(1).permutation(table.num_rows))
        for name, table in tables.items()
    }
    write_keyword_arrays(shuffled, tmp_path)
    again = KeywordIndex.open(tmp_path)
    for query in ("smoking", "blood pressure", "phs000179 K92.2"):
        docs, scores = again.search(query, 5)
        expected_docs, expected_scores = index.search(query, 5)
        assert docs.tolist() == expected_docs.tolist()
        assert scores.tolist() == expected_scores.tolist()


def test_docno_must_be_contiguous():
    bad = docs_table(CORPUS[:3]).set_column(0, "docno", pa.array([0, 2, 3], pa.int32()))
    with pytest.raises(ValueError, match="contiguous"):
        build_fts_tables(bad)


def test_empty_corpus_builds_empty_tables(tmp_path):
    tables = build_fts_tables(docs_table([]))
    assert tables["fts_term"].num_rows == 0
    assert tables["fts_stats"]["n_docs"].to_pylist() == [0]
    write_keyword_arrays(tables, tmp_path)
    docs, scores = KeywordIndex.open(tmp_path).search("anything", 5)
    assert len(docs) == len(scores) == 0


# ------------------------------------------------------------------------- search


HAND = [
    ("Smoking", "smoking status"),  # smoke tf 2+1=3, status 1, doc_len 4
    (None, "blood pressure"),  # blood 1, pressur 1, doc_len 2
    ("Blood", "smoke exposure"),  # blood 2, smoke 1, exposur 1, doc_len 4
]


def test_bm25_equals_a_hand_computed_value(tmp_path):
    write_keyword_arrays(build_fts_tables(docs_table(HAND)), tmp_path)
    index = KeywordIndex.open(tmp_path)
    # N = 3, avg_doc_len = 10/3, k1 = 1.2, b = 0.75; smoke and blood each have df = 2.
    idf = math.log(1 + (3 - 2 + 0.5) / (2 + 0.5))  # ln 1.6
    norm_len4 = 1.2 * (1 - 0.75 + 0.75 * 4 / (10 / 3))  # 1.38
    norm_len2 = 1.2 * (1 - 0.75 + 0.75 * 2 / (10 / 3))  # 0.84
    smoke0 = idf * 3 * 2.2 / (3 + norm_len4)
    smoke2 = idf * 1 * 2.2 / (1 + norm_len4)
    blood2 = idf * 2 * 2.2 / (2 + norm_len4)
    blood1 = idf * 1 * 2.2 / (1 + norm_len2)

    docs, scores = index.search("smoke", 10)
    assert docs.tolist() == [0, 2]
    np.testing.assert_allclose(scores, [smoke0, smoke2], rtol=1e-6)

    docs, scores = index.search("blood smoking", 10)
    expected = sorted([(0, smoke0), (1, blood1), (2, blood2 + smoke2)], key=lambda p: (-p[1], p[0]))
    assert docs.tolist() == [d for d, _ in expected]
    np.testing.assert_allclose(scores, [s for _, s in expected], rtol=1e-6)
    assert docs.dtype == np.int32
    assert scores.dtype == np.float32


def test_the_ideal_score_is_every_query_term_at_its_best_weight(tmp_path):
    write_keyword_arrays(build_fts_tables(docs_table(HAND)), tmp_path)
    index = KeywordIndex.open(tmp_path)
    best = {term: float(index.search(term, 10)[1].max()) for term in ("smoke", "blood")}
    assert index.ideal_score("blood smoking") == pytest.approx(sum(best.values()), rel=1e-6)
    assert index.ideal_score("smoke smoke") == pytest.approx(best["smoke"], rel=1e-6)
    assert index.ideal_score("zzzunknown the") == 0.0
    # no document scores more, and one holding a single term of two scores less
    _, scores = index.search("blood smoking", 10)
    assert scores.max() <= index.ideal_score("blood smoking") + 1e-6
    assert index.search("smoke", 1)[1][0] < index.ideal_score("blood smoke")


def test_query_matching(index):
    assert index.search("Sjogren", 3)[0].tolist() == [1]  # accent-folded
    assert index.search("SJÖGREN", 3)[0].tolist() == [1]
    assert set(index.search("smoke", 10)[0].tolist()) == {0, 3, 6}  # stemmed
    assert index.search("phs000179", 3)[0].tolist() == [3]  # code part
    assert index.search("p21001_i0", 3)[0].tolist() == [4]
    assert index.search("2345-7", 3)[0].tolist() == [5]
    assert index.search("K92.2.", 3)[0].tolist() == [2]
    assert index.search("COVID-19", 3)[0].tolist() == [2]
    assert len(index.search("the and of", 3)[0]) == 0  # only stop words
    assert len(index.search("zzzunknown", 3)[0]) == 0
    assert len(index.search("smoke", 0)[0]) == 0


def test_full_code_ranks_the_exact_code_first(tmp_path):
    rows = [("phs000179.v2.p1", None), ("phs000179.v3.p1", None), ("phs000180.v3.p1", None)]
    write_keyword_arrays(build_fts_tables(docs_table(rows)), tmp_path)
    docs, _ = KeywordIndex.open(tmp_path).search("phs000179.v3.p1", 3)
    assert docs.tolist()[0] == 1
    assert set(docs.tolist()) == {0, 1, 2}  # OR over whole code and its parts


def test_ties_are_broken_by_docno(tmp_path):
    rows = [("other words", None)] + [("same text", "here")] * 30
    write_keyword_arrays(build_fts_tables(docs_table(rows)), tmp_path)
    index = KeywordIndex.open(tmp_path)
    for query in ("same", "same here"):
        docs, scores = index.search(query, 7)
        assert docs.tolist() == list(range(1, 8))
        assert len(set(scores.tolist())) == 1


def test_ties_across_terms_are_broken_by_docno(tmp_path):
    rows = [("alpha", None)] * 10 + [("beta", None)] * 10  # equal df, tf and length
    write_keyword_arrays(build_fts_tables(docs_table(rows)), tmp_path)
    docs, scores = KeywordIndex.open(tmp_path).search("beta alpha", 5)
    assert docs.tolist() == [0, 1, 2, 3, 4]
    assert len(set(scores.tolist())) == 1


def test_allowed_mask_applies_before_top_k(tmp_path):
    strong = [("glucose glucose", "glucose level")] * 20
    weak = [(None, f"glucose with many other words number {i} padding text") for i in range(20)]
    write_keyword_arrays(build_fts_tables(docs_table(strong + weak)), tmp_path)
    index = KeywordIndex.open(tmp_path)
    assert set(index.search("glucose", 5)[0].tolist()) <= set(range(20))
    allowed = np.zeros(index.n_docs, dtype=bool)
    allowed[25:40] = True
    for query in ("glucose", "glucose level number"):
        docs, _ = index.search(query, 5, allowed=allowed)
        assert len(docs) == 5
        assert all(allowed[docs])
    with pytest.raises(ValueError, match="shape"):
        index.search("glucose", 5, allowed=np.ones(3, dtype=bool))


def brute_force_bm25(tables: dict[str, pa.Table], query: str) -> dict[int, float]:
    """Double-precision BM25 straight from the release tables (no index arrays)."""
    stats = tables["fts_stats"].to_pylist()[0]
    term_ids = {t: i for i, t in enumerate(tables["fts_term"]["term"].to_pylist())}
    df = tables["fts_term"]["df"].to_numpy()
    posting = tables["fts_posting"].to_pydict()
    doc_len = tables["fts_doc"]["doc_len"].to_numpy()
    wanted = {term_ids[t] for t in tokenize(query) if t in term_ids}
    n, k1, b, avg = stats["n_docs"], stats["k1"], stats["b"], stats["avg_doc_len"]
    scores: dict[int, float] = {}
    for t, d, tf in zip(posting["term_id"], posting["docno"], posting["tf"], strict=True):
        if t in wanted:
            idf = math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5))
            norm = k1 * (1 - b + b * doc_len[d] / avg)
            scores[d] = scores.get(d, 0.0) + idf * tf * (k1 + 1) / (tf + norm)
    return scores


@pytest.fixture(scope="module")
def random_corpus(tmp_path_factory):
    rng = np.random.default_rng(7)
    words = [f"{w}{s}" for w in ("blood", "smok", "glucos", "heart", "sleep") for s in "aeiou"]
    words += ["rare", "k92.2", "phs000007.v31.p12", "21001"]
    p = 1.0 / np.arange(1, len(words) + 1)
    p /= p.sum()
    rows = [
        (
            " ".join(rng.choice(words, rng.integers(0, 4), p=p)),
            " ".join(rng.choice(words, rng.integers(0, 12), p=p)),
        )
        for _ in range(600)
    ]
    tables = build_fts_tables(docs_table(rows))
    directory = tmp_path_factory.mktemp("random")
    write_keyword_arrays(tables, directory)
    queries = [" ".join(rng.choice(words, rng.integers(1, 5))) for _ in range(60)]
    return tables, KeywordIndex.open(directory), queries, directory, rows


def test_search_matches_brute_force_bm25(random_corpus):
    tables, index, queries, _, _ = random_corpus
    rng = np.random.default_rng(3)
    for query in queries:
        allowed = rng.random(index.n_docs) < 0.5
        for mask in (None, allowed):
            truth = brute_force_bm25(tables, query)
            if mask is not None:
                truth = {d: s for d, s in truth.items() if mask[d]}
            docs, scores = index.search(query, 10, allowed=mask)
            best = sorted(truth.values(), reverse=True)[:10]
            assert len(docs) == len(best)
            np.testing.assert_allclose(scores, best, rtol=1e-5)
            for d, s in zip(docs.tolist(), scores.tolist(), strict=True):
                assert truth[d] == pytest.approx(s, rel=1e-5)
            assert np.all(np.diff(scores) <= 0)


def test_search_is_thread_safe(random_corpus):
    _, index, queries, _, _ = random_corpus
    sequential = [index.search(q, 10) for q in queries * 4]
    with ThreadPoolExecutor(max_workers=4) as pool:
        parallel = list(pool.map(lambda q: index.search(q, 10), queries * 4))
    for (d1, s1), (d2, s2) in zip(sequential, parallel, strict=True):
        assert d1.tolist() == d2.tolist()
        assert s1.tolist() == s2.tolist()


def mapped(array: np.ndarray) -> bool:
    """Whether ``array`` is (a view of) a memory map rather than a loaded copy."""
    base = array
    while base is not None:
        if isinstance(base, mmap.mmap):
            return True
        base = getattr(base, "base", None)
    return False


def test_index_is_memory_mapped(random_corpus):
    _, _, _, directory, _ = random_corpus
    index = KeywordIndex.open(directory)
    for array in (index.docno, index.weight, index.offsets, index.term_hash):
        assert mapped(array)
    assert "n_docs=600" in repr(index)


# ---------------------------------------------------------------------- SQL macro


def test_sql_macro_equals_python_scores(random_corpus, tmp_path):
    tables, index, queries, _, rows = random_corpus
    path = tmp_path / "release.duckdb"
    load_database(path, tables, rows)
    con = duckdb.connect(str(path), read_only=True)  # the macro persisted
    try:
        for query in [*queries, "Phs000007.V31.P12.", "K92.2"]:
            sql_rows = con.execute("SELECT docno, score FROM fts_search(?)", [query]).fetchall()
            docs, scores = index.search(query, 10)
            assert [d for d, _ in sql_rows] == docs.tolist(), query
            np.testing.assert_allclose([s for _, s in sql_rows], scores, atol=1e-4)
        few = con.execute("SELECT docno FROM fts_search('smoka heartu', k := 3)").fetchall()
        assert [d for (d,) in few] == index.search("smoka heartu", 3)[0].tolist()
    finally:
        con.close()


def test_sql_macro_on_the_readable_corpus_and_join_to_search_doc(tables, index, tmp_path):
    path = tmp_path / "release.duckdb"
    load_database(path, tables, CORPUS)
    con = duckdb.connect(str(path), read_only=True)
    try:
        queries = (
            "Sjögren",
            "smoking",
            "K92.2.",
            "phs000179",
            "phs000179.v9.p2 lung",  # unseen code: its digit-bearing parts match
            "COVID-19 haemorrhage",
            "smoking in the lifetime of it, at all",  # stop words match nothing
            "ins outs",
        )
        for query in queries:
            sql_rows = con.execute("SELECT * FROM fts_search(?, k := 5)", [query]).fetchall()
            docs, scores = index.search(query, 5)
            assert [d for d, _ in sql_rows] == docs.tolist(), query
            np.testing.assert_allclose([s for _, s in sql_rows], scores, atol=1e-4)
        joined = con.execute(
            """
            SELECT d.title FROM fts_search('smoking status') AS s
            JOIN search_doc AS d USING (docno) ORDER BY s.score DESC, s.docno
            """
        ).fetchall()
        assert joined[0] == ("Smoking status",)
        assert con.execute("SELECT * FROM fts_search('the of and')").fetchall() == []
    finally:
        con.close()
