"""Keyword search speed: our memory-mapped BM25 versus SQLite FTS5 ``bm25()``.

The synthetic corpus (:mod:`.corpus`) is indexed both ways and the same queries run
through both, interleaved query by query:

* ours: ``KeywordIndex.search(query, 10)``, tokenization included: the keyword
  candidate generator of every search tool (``retrieval.keyword_candidates``);
* SQLite FTS5: ``SELECT rowid, bm25(t) FROM t WHERE t MATCH ? ORDER BY bm25(t)
  LIMIT 10`` over one column holding the *same* terms (title terms twice, as in our
  field weighting), queried with the same terms OR-ed.

Reported: p50/p95/mean of both, their ratio (ours / FTS5; target <= 1), the mean top-10
overlap (the idf variants differ slightly, so it is high but not 1), the index build
times of both, and the release's DuckDB macro ``fts_search`` on a few queries (its
latency, and whether its scores agree with the Python path).

Standalone: ``python -m benchmarks.keyword [--docs N] [--queries N] [--repeats N]``
(formerly the script ``benchmarks/fts_vs_sqlite.py``; its ``--build-docs`` timing is
the ``build_s`` of every run now, and the whole search-index build is :mod:`.build`).
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa

from benchmarks.common import interleaved, latency, ratio, timed
from benchmarks.corpus import make_corpus, make_queries, vocabulary
from metabundle.index.fts import KeywordIndex, bm25_macro_sql
from metabundle.index.fts_build import build_fts_tables, write_keyword_arrays
from metabundle.index.tokenizer import tokenize, tokenize_many

FTS5_SQL = "SELECT rowid, bm25(t) FROM t WHERE t MATCH ? ORDER BY bm25(t) LIMIT 10"
MACRO_QUERIES = 30


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
    """The FTS5 MATCH expression of ``query``: its distinct terms OR-ed."""
    return " OR ".join(f'"{term}"' for term in dict.fromkeys(tokenize(query)))


def build_ours(corpus: pa.Table, directory: Path) -> tuple[KeywordIndex, dict[str, pa.Table]]:
    """Our FTS tables and keyword arrays of ``corpus``, opened for search."""
    tables = build_fts_tables(corpus)
    write_keyword_arrays(tables, directory)
    return KeywordIndex.open(directory), tables


def macro_check(tables: dict[str, pa.Table], index: KeywordIndex, queries: list[str]) -> dict:
    """Latency of the release's SQL macro (in-memory DuckDB) and whether it agrees."""
    con = duckdb.connect()
    for name, table in tables.items():
        con.register("incoming", table)
        con.execute(f"CREATE TABLE {name} AS SELECT * FROM incoming")
        con.unregister("incoming")
    con.execute(bm25_macro_sql())
    samples, mismatches = [], 0
    for query in queries:
        seconds, rows = timed(
            lambda q=query: con.execute("SELECT docno, score FROM fts_search(?)", [q]).fetchall()
        )
        samples.append(seconds)
        _, scores = index.search(query, 10)
        sql_scores = np.array([s for _, s in rows])
        mismatches += len(sql_scores) != len(scores) or not np.allclose(
            sql_scores, scores, atol=1e-4
        )
    con.close()
    return {**latency(samples), "queries_with_different_scores": int(mismatches)}


def compare(n_docs: int, n_queries: int, repeats: int) -> dict[str, Any]:
    """Build both indexes over an ``n_docs`` corpus and time ``n_queries`` queries."""
    generate_s, corpus = timed(lambda: make_corpus(n_docs))
    queries = make_queries(corpus, n_queries)
    with tempfile.TemporaryDirectory(prefix="bench-kw-") as tmp:
        ours_build_s, (index, tables) = timed(lambda: build_ours(corpus, Path(tmp) / "kw"))
        fts5_build_s, con = timed(lambda: build_sqlite(corpus, Path(tmp) / "fts.sqlite"))
        matches = {q: sqlite_match(q) for q in queries}
        samples, results = interleaved(
            {
                "ours": lambda q: index.search(q, 10)[0],
                "fts5": lambda q: con.execute(FTS5_SQL, (matches[q],)).fetchall(),
            },
            queries,
            repeats,
        )
        con.close()
        overlap = [
            len(set(docs.tolist()) & {row[0] for row in rows}) / max(1, len(rows))
            for docs, rows in zip(results["ours"], results["fts5"], strict=True)
        ]
        macro = macro_check(tables, index, queries[:MACRO_QUERIES])
        terms, postings = tables["fts_term"].num_rows, tables["fts_posting"].num_rows
    ours, fts5 = latency(samples["ours"]), latency(samples["fts5"])
    return {
        "docs": n_docs,
        "queries": n_queries,
        "repeats": repeats,
        "vocabulary_from_mirror": vocabulary()[2],
        "terms": terms,
        "postings": postings,
        "generate_s": round(generate_s, 2),
        "build_s": {"ours": round(ours_build_s, 2), "fts5": round(fts5_build_s, 2)},
        "ours": ours,
        "fts5": fts5,
        "p50_ratio_vs_fts5": ratio(ours["p50_ms"], fts5["p50_ms"]),
        "p95_ratio_vs_fts5": ratio(ours["p95_ms"], fts5["p95_ms"]),
        "top10_overlap": round(statistics.fmean(overlap), 4),
        "duckdb_macro": macro,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=200_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    result = compare(args.docs, args.queries, args.repeats)
    result["wall_s"] = round(time.perf_counter() - started, 1)
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
