"""Keyword search speed: metabundle's memory-mapped BM25 versus SQLite FTS5.

A standalone measurement script, not a test. It generates a synthetic corpus
of biomedical-ish metadata (a fixed seed; words drawn with their observed
frequencies from the UK Biobank field titles/notes and dbGaP data-dictionary
descriptions in ``../shared/upstream`` when present, read at run time and never
stored; plus dbGaP/UKB/ICD-10/LOINC-like codes), indexes it both ways and runs
the same queries through both:

* metabundle: ``KeywordIndex.search(query, 10)`` (tokenization included);
* SQLite FTS5: ``SELECT rowid, bm25(t) FROM t WHERE t MATCH ? ORDER BY bm25(t)
  LIMIT 10`` over one column holding the *same* terms (title terms twice, as in
  our field weighting), queried with the same terms OR-ed.

It prints p50/p95/mean latency of each and the ratio, plus the top-10 overlap
(the two idf variants differ slightly, so overlap is high but not 100 %).

``--build-docs N`` instead times ``build_fts_tables`` + ``write_keyword_arrays``
+ ``KeywordIndex.open`` on an N-document corpus and reports peak memory.

Usage::

    PYTHONPATH=. python benchmarks/fts_vs_sqlite.py                      # 200k docs
    PYTHONPATH=. python benchmarks/fts_vs_sqlite.py --build-docs 1000000 # build timing
"""

from __future__ import annotations

import argparse
import re
import resource
import sqlite3
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa

from metabundle.index.fts import KeywordIndex, bm25_macro_sql
from metabundle.index.fts_build import build_fts_tables, write_keyword_arrays
from metabundle.index.tokenizer import tokenize, tokenize_many

UPSTREAM = Path(__file__).resolve().parents[2] / "shared" / "upstream"
SEED = 20260127
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]+|[0-9]+")
_DESCRIPTION = re.compile(r"<description>([^<]*)</description>")

FALLBACK_TEXT = (
    "blood pressure systolic diastolic heart rate smoking status alcohol intake "
    "body mass index weight height waist hip circumference glucose cholesterol "
    "triglycerides diabetes hypertension asthma cancer diagnosis medication "
    "participant visit assessment centre questionnaire age sex ethnicity "
    "education income sleep duration physical activity diet fruit vegetable "
    "coffee tea frequency ever never current former pack years cigarettes "
    "hospital inpatient record date onset family history mother father sibling"
)


def _upstream_texts(limit_files: int = 600) -> list[str]:
    """Titles, notes and descriptions from the local upstream mirror, if any."""
    texts: list[str] = []
    fields = UPSTREAM / "ukb" / "scdown" / "1.txt"
    if fields.exists():
        lines = fields.read_text(encoding="utf-8").splitlines()
        header = lines[0].split("\t")
        title, notes = header.index("title"), header.index("notes")
        for line in lines[1:]:
            cols = line.split("\t")
            texts.extend(cols[i] for i in (title, notes) if i < len(cols))
    dicts = sorted((UPSTREAM / "dbgap" / "studies").glob("*/*/pheno_variable_summaries/*.xml"))
    for path in dicts[:limit_files]:
        texts.extend(_DESCRIPTION.findall(path.read_text(encoding="utf-8", errors="ignore")))
    return texts


def vocabulary() -> tuple[list[str], np.ndarray]:
    """Words and their sampling probabilities (observed frequencies)."""
    counts: Counter[str] = Counter()
    for text in _upstream_texts():
        counts.update(_WORD.findall(text))
    if len(counts) < 1000:
        counts = Counter({w: 1 + i % 7 for i, w in enumerate(FALLBACK_TEXT.split())})
    words = sorted(counts)
    freq = np.array([counts[w] for w in words], dtype=np.float64)
    return words, freq / freq.sum()


def _codes(rng: np.random.Generator, n: int) -> np.ndarray:
    """Identifier-like tokens: dbGaP accessions, UKB field ids, ICD-10, LOINC."""
    kind = rng.integers(0, 4, n)
    num = rng.integers(1, 3000, n)
    out = np.empty(n, dtype=object)
    for i in range(n):
        k, x = kind[i], num[i]
        out[i] = (
            f"phs{x:06d}.v{x % 9 + 1}.p1",
            f"f.{20000 + x}.0.0",
            f"K{x % 99:02d}.{x % 10}",
            f"{x}-{x % 10}",
        )[k]
    return out


def make_corpus(n_docs: int, seed: int = SEED) -> pa.Table:
    """A reproducible corpus of ``n_docs`` short titles and bodies."""
    rng = np.random.default_rng(seed)
    words, prob = vocabulary()
    words_arr = np.array(words, dtype=object)
    title_len = rng.integers(2, 8, n_docs)
    body_len = rng.integers(5, 20, n_docs)
    title_words = words_arr[rng.choice(len(words), int(title_len.sum()), p=prob)]
    body_words = words_arr[rng.choice(len(words), int(body_len.sum()), p=prob)]
    codes = _codes(rng, n_docs)
    has_code = rng.random(n_docs) < 0.3
    titles, bodies = [], []
    t_pos = b_pos = 0
    for i in range(n_docs):
        t_end, b_end = t_pos + title_len[i], b_pos + body_len[i]
        titles.append(" ".join(title_words[t_pos:t_end]))
        body = " ".join(body_words[b_pos:b_end])
        bodies.append(f"{body} {codes[i]}." if has_code[i] else body)
        t_pos, b_pos = t_end, b_end
    return pa.table(
        {
            "docno": pa.array(np.arange(n_docs, dtype=np.int32)),
            "title": pa.array(titles, pa.string()),
            "body": pa.array(bodies, pa.string()),
        }
    )


def make_queries(corpus: pa.Table, n_queries: int, seed: int = SEED + 1) -> list[str]:
    """1-4 words each, picked from random documents (so they occur)."""
    rng = np.random.default_rng(seed)
    titles = corpus["title"].to_pylist()
    bodies = corpus["body"].to_pylist()
    queries: list[str] = []
    while len(queries) < n_queries:
        doc = int(rng.integers(0, len(titles)))
        pool = f"{titles[doc]} {bodies[doc]}".split()
        n = int(rng.integers(1, 5))
        picks = rng.choice(len(pool), size=min(n, len(pool)), replace=False)
        query = " ".join(pool[i].rstrip(".") for i in sorted(picks))
        if tokenize(query):  # all stop words: nothing to compare
            queries.append(query)
    return queries


def build_sqlite(corpus: pa.Table, path: Path) -> sqlite3.Connection:
    """FTS5 table over our terms (title twice), so both sides index the same tokens."""
    titles = tokenize_many(corpus["title"].to_pylist())
    bodies = tokenize_many(corpus["body"].to_pylist())
    con = sqlite3.connect(path)
    con.execute("CREATE VIRTUAL TABLE t USING fts5(x, tokenize = \"unicode61 tokenchars '._-'\")")
    rows = ((i, " ".join(t + t + b)) for i, (t, b) in enumerate(zip(titles, bodies, strict=True)))
    con.executemany("INSERT INTO t(rowid, x) VALUES (?, ?)", rows)
    con.execute("INSERT INTO t(t) VALUES ('optimize')")
    con.commit()
    return con


def sqlite_match(query: str) -> str:
    return " OR ".join(f'"{term}"' for term in dict.fromkeys(tokenize(query)))


def percentiles(samples: list[float]) -> tuple[float, float, float]:
    ordered = sorted(samples)
    p50 = ordered[len(ordered) // 2]
    p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
    return p50, p95, statistics.fmean(ordered)


def compare(n_docs: int, n_queries: int, repeats: int) -> None:
    t0 = time.perf_counter()
    corpus = make_corpus(n_docs)
    queries = make_queries(corpus, n_queries)
    print(f"corpus: {n_docs} docs generated in {time.perf_counter() - t0:.1f}s")
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        tables = build_fts_tables(corpus)
        write_keyword_arrays(tables, Path(tmp) / "kw")
        index = KeywordIndex.open(Path(tmp) / "kw")
        print(
            f"metabundle index: {time.perf_counter() - t0:.1f}s, "
            f"{tables['fts_term'].num_rows} terms, {tables['fts_posting'].num_rows} postings"
        )
        t0 = time.perf_counter()
        con = build_sqlite(corpus, Path(tmp) / "fts.sqlite")
        print(f"sqlite fts5 index: {time.perf_counter() - t0:.1f}s")
        sql = "SELECT rowid, bm25(t) FROM t WHERE t MATCH ? ORDER BY bm25(t) LIMIT 10"
        matches = [sqlite_match(q) for q in queries]
        ours, theirs, overlap = [], [], []
        for _ in range(repeats):
            for query, match in zip(queries, matches, strict=True):
                t0 = time.perf_counter()
                docs, _ = index.search(query, 10)
                ours.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                rows = con.execute(sql, (match,)).fetchall()
                theirs.append(time.perf_counter() - t0)
                overlap.append(len(set(docs.tolist()) & {r[0] for r in rows}) / max(1, len(rows)))
        con.close()
        macro = time_duckdb_macro(tables, index, queries[:50])
    report("metabundle KeywordIndex.search", ours)
    report("SQLite FTS5 bm25", theirs)
    report("DuckDB fts_search macro", macro)
    (p50_a, p95_a, _), (p50_b, p95_b, _) = percentiles(ours), percentiles(theirs)
    print(f"ratio sqlite/metabundle: p50 {p50_b / p50_a:.1f}x, p95 {p95_b / p95_a:.1f}x")
    print(f"mean top-10 overlap: {statistics.fmean(overlap):.3f}")


def time_duckdb_macro(tables: dict, index: KeywordIndex, queries: list[str]) -> list[float]:
    """Latency of the SQL macro (in-memory DuckDB); also checks it agrees with Python."""
    con = duckdb.connect()
    for name, table in tables.items():
        con.register("incoming", table)
        con.execute(f"CREATE TABLE {name} AS SELECT * FROM incoming")
        con.unregister("incoming")
    con.execute(bm25_macro_sql())
    samples, mismatches = [], 0
    for query in queries:
        t0 = time.perf_counter()
        rows = con.execute("SELECT docno, score FROM fts_search(?)", [query]).fetchall()
        samples.append(time.perf_counter() - t0)
        _, scores = index.search(query, 10)
        sql_scores = np.array([s for _, s in rows])
        mismatches += len(sql_scores) != len(scores) or not np.allclose(
            sql_scores, scores, atol=1e-4
        )
    con.close()
    print(f"DuckDB macro vs Python: {mismatches} of {len(queries)} queries differ in scores")
    return samples


def report(label: str, samples: list[float]) -> None:
    p50, p95, mean = percentiles(samples)
    print(
        f"{label:32s} n={len(samples)} p50 {p50 * 1e3:.3f} ms  "
        f"p95 {p95 * 1e3:.3f} ms  mean {mean * 1e3:.3f} ms"
    )


def build_timing(n_docs: int) -> None:
    t0 = time.perf_counter()
    corpus = make_corpus(n_docs)
    print(f"corpus: {n_docs} docs generated in {time.perf_counter() - t0:.1f}s")
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        tables = build_fts_tables(corpus)
        t_build = time.perf_counter() - t0
        t0 = time.perf_counter()
        write_keyword_arrays(tables, Path(tmp) / "kw")
        t_write = time.perf_counter() - t0
        t0 = time.perf_counter()
        index = KeywordIndex.open(Path(tmp) / "kw")
        t_open = time.perf_counter() - t0
        t0 = time.perf_counter()
        index.search("blood pressure", 10)
        t_first = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    postings = tables["fts_posting"].num_rows
    print(f"build_fts_tables: {t_build:.1f}s ({postings} postings)")
    print(f"write_keyword_arrays: {t_write:.1f}s; KeywordIndex.open: {t_open * 1e3:.2f} ms")
    print(f"first query: {t_first * 1e3:.2f} ms")
    print(f"peak RSS: {peak / 1024:.0f} MiB (after corpus generation: {base / 1024:.0f} MiB)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=200_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--build-docs", type=int, default=0)
    args = parser.parse_args(argv)
    if args.build_docs:
        build_timing(args.build_docs)
    else:
        compare(args.docs, args.queries, args.repeats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
