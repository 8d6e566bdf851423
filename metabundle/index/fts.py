"""BM25 full-text-search tables, their memory-mapped fast path and a DuckDB macro.

Stock DuckDB wheels cannot load the ``fts`` extension offline, so the build
computes its own inverted index with :mod:`metabundle.index.tokenizer` and
ships it three ways:

1. **Release tables** (:func:`build_fts_tables`), plain Arrow tables with fixed
   column names that the release writers store in DuckDB/Parquet:

   * ``fts_term(term_id int32, term string, df int32)``: the vocabulary;
     ``term_id`` is the rank of ``term`` in byte-wise sorted order; ``df`` is
     the number of documents containing the term;
   * ``fts_posting(term_id int32, docno int32, tf int32)`` sorted by
     ``(term_id, docno)``; ``tf`` is the field-weighted term frequency
     ``TITLE_WEIGHT * tf_title + tf_body``;
   * ``fts_doc(docno int32, doc_len int32)``: field-weighted document length,
     ``TITLE_WEIGHT * len(title terms) + len(body terms)``, one row per docno;
   * ``fts_form(form string, term_id int32)``: every surface form of the corpus
     (folded, split and trimmed as in SQL, see the tokenizer) and the term(s)
     the tokenizer makes of it; a code maps to itself and its parts; stop words
     and single letters are absent;
   * ``fts_stats(n_docs int64, avg_doc_len double, k1 double, b double)``.

2. **Keyword arrays** (:func:`write_keyword_arrays`, :class:`KeywordIndex`): a
   directory of ``.npy`` files memory-mapped by the Python search path. Opening
   reads a small JSON file and maps the arrays; nothing is parsed or hashed, so
   it takes milliseconds whatever the corpus size. Files:

   * ``meta.json``: format tag, counts and BM25 parameters;
   * ``offsets.npy`` (int64, n_terms + 1): CSR row pointers, term id → postings;
   * ``docno.npy`` (int32, n_postings): posting docnos, ascending per term;
   * ``weight.npy`` (float32, n_postings): the finished BM25 contribution
     ``idf(t) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * doc_len / avg_doc_len))``
     of each posting, so a query is a gather and an add per term;
   * ``doc_len.npy`` (int32, n_docs);
   * ``term_hash.npy`` (uint64, sorted) and ``term_hash_id.npy`` (int32): the
     term dictionary, the first 8 bytes (little-endian) of ``blake2b`` of each
     term's UTF-8, looked up with ``np.searchsorted``;
   * ``term_bytes.npy`` (uint8) and ``term_bytes_offsets.npy`` (int64): the term
     strings, used to confirm a hash hit, so lookups are exact.

3. **A DuckDB table macro** (:func:`bm25_macro_sql`) ``fts_search(q, k := 10)``
   for users of the release without our code.

Scoring is BM25 with Lucene's always-positive idf
``ln(1 + (N - df + 0.5) / (df + 0.5))`` and the classic ``(k1 + 1)`` numerator,
``k1 = 1.2`` and ``b = 0.75`` (stored in ``fts_stats``). Title terms count
:data:`TITLE_WEIGHT` times, a simple BM25F-like field weight applied to both
``tf`` and ``doc_len``. Queries have OR semantics over their *distinct* terms (a
term repeated in the query counts once), so a document's score is the sum of
the weights of the query terms it contains. Results are ordered by score
descending, then docno ascending.
"""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from metabundle.index.tokenizer import SPLIT_PATTERN, TRIM_CHARS, fold, forms_terms, tokenize

__all__ = [
    "FTS_SCHEMAS",
    "K1",
    "KEYWORD_FORMAT",
    "TITLE_WEIGHT",
    "B",
    "KeywordIndex",
    "bm25_macro_sql",
    "build_fts_tables",
    "term_hashes",
    "write_keyword_arrays",
]

#: How many times a title term counts relative to a body term (BM25F-like weight).
TITLE_WEIGHT = 2
#: BM25 term-frequency saturation.
K1 = 1.2
#: BM25 document-length normalisation.
B = 0.75
#: Format tag written to, and required in, ``meta.json``.
KEYWORD_FORMAT = "metabundle-keyword-v1"

_FORM_PATTERN = SPLIT_PATTERN.replace("[^", "[", 1)  # the complement: one form
_NON_ASCII = r"[^\x00-\x7F]"

FTS_SCHEMAS: dict[str, pa.Schema] = {
    "fts_term": pa.schema([("term_id", pa.int32()), ("term", pa.string()), ("df", pa.int32())]),
    "fts_posting": pa.schema([("term_id", pa.int32()), ("docno", pa.int32()), ("tf", pa.int32())]),
    "fts_doc": pa.schema([("docno", pa.int32()), ("doc_len", pa.int32())]),
    "fts_form": pa.schema([("form", pa.string()), ("term_id", pa.int32())]),
    "fts_stats": pa.schema(
        [
            ("n_docs", pa.int64()),
            ("avg_doc_len", pa.float64()),
            ("k1", pa.float64()),
            ("b", pa.float64()),
        ]
    ),
}


# --------------------------------------------------------------------------- build


def _as_frame(docs: pa.Table | pl.DataFrame) -> pl.DataFrame:
    """Validate the input documents and return them as a polars frame."""
    frame = docs if isinstance(docs, pl.DataFrame) else pl.from_arrow(docs)
    if not isinstance(frame, pl.DataFrame):
        raise TypeError("docs must be a table, not a single column")
    missing = {"docno", "title", "body"} - set(frame.columns)
    if missing:
        raise ValueError(f"docs lacks column(s) {sorted(missing)}")
    frame = frame.select(
        pl.col("docno").cast(pl.Int32),
        pl.col("title").cast(pl.String),
        pl.col("body").cast(pl.String),
    )
    docno = frame["docno"].to_numpy()
    if not np.array_equal(docno, np.arange(len(docno), dtype=np.int32)):
        raise ValueError("docno must be 0..N-1, contiguous and sorted")
    return frame


def _fold_column(texts: pl.Series) -> pl.Series:
    """Fold a text column: ASCII rows in polars, the rest through ``fold``."""
    folded = texts.str.to_lowercase()
    non_ascii = np.flatnonzero(texts.str.contains(_NON_ASCII).fill_null(False).to_numpy())
    if len(non_ascii):
        values = [fold(t) for t in texts.gather(non_ascii).to_list()]
        folded = folded.scatter(non_ascii, pl.Series(values, dtype=pl.String))
    return folded


@dataclass(frozen=True)
class _Occurrences:
    """Every raw form occurrence of one field: its docno and raw (untrimmed) text."""

    docno: np.ndarray  # int32
    raw: pa.Array  # strings, aligned with docno


def _field_occurrences(texts: pl.Series) -> _Occurrences:
    """Split one text column into raw form occurrences (set-at-a-time, no Python loop)."""
    lists = _fold_column(texts).str.extract_all(_FORM_PATTERN).to_arrow()
    parents = pc.list_parent_indices(lists).to_numpy().astype(np.int32)
    return _Occurrences(docno=parents, raw=pc.list_flatten(lists))


@dataclass(frozen=True)
class _Lexicon:
    """Distinct raw forms → term ids (CSR), the vocabulary and the ``fts_form`` rows."""

    raw_offsets: np.ndarray  # int64, n_raw + 1
    raw_terms: np.ndarray  # int32 term ids
    vocab: list[str]
    form_rows: pa.Table


def _lexicon(raw_forms: list[str]) -> _Lexicon:
    """Tokenize each distinct raw form once and assign sorted term ids."""
    trimmed = [r.strip(TRIM_CHARS) for r in raw_forms]
    forms = sorted({f for f in trimmed if f})
    terms_of = dict(zip(forms, forms_terms(forms), strict=True))
    vocab = sorted({t for terms in terms_of.values() for t in terms})
    term_id = {t: i for i, t in enumerate(vocab)}
    ids_of = {f: sorted(term_id[t] for t in terms) for f, terms in terms_of.items()}
    per_raw = [ids_of.get(f, []) for f in trimmed]
    counts = np.fromiter(map(len, per_raw), dtype=np.int64, count=len(per_raw))
    raw_offsets = np.zeros(len(per_raw) + 1, dtype=np.int64)
    np.cumsum(counts, out=raw_offsets[1:])
    raw_terms = np.fromiter(
        (i for ids in per_raw for i in ids), dtype=np.int32, count=int(raw_offsets[-1])
    )
    form_rows = pa.table(
        {
            "form": [f for f in forms for _ in ids_of[f]],
            "term_id": pa.array([i for f in forms for i in ids_of[f]], pa.int32()),
        }
    )
    return _Lexicon(raw_offsets, raw_terms, vocab, form_rows)


def _expand(docno: np.ndarray, raw_index: np.ndarray, lexicon: _Lexicon) -> np.ndarray:
    """Posting keys ``term_id << 32 | docno``, one per emitted term occurrence."""
    counts = np.diff(lexicon.raw_offsets)[raw_index]
    total = int(counts.sum())
    first = np.cumsum(counts) - counts  # where each occurrence's terms start in the output
    pos = np.arange(total, dtype=np.int64) - np.repeat(
        first - lexicon.raw_offsets[raw_index], counts
    )
    terms = lexicon.raw_terms[pos].astype(np.int64)
    return (terms << 32) | np.repeat(docno, counts).astype(np.int64)


def _count_keys(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sort posting keys and count runs: ``(term_id, docno, tf)``."""
    keys = np.sort(keys)
    if len(keys) == 0:
        empty = np.zeros(0, dtype=np.int32)
        return empty, empty, empty
    starts = np.concatenate([[0], np.flatnonzero(np.diff(keys)) + 1])
    tf = np.diff(np.append(starts, len(keys))).astype(np.int32)
    unique = keys[starts]
    return (unique >> 32).astype(np.int32), (unique & 0xFFFFFFFF).astype(np.int32), tf


def build_fts_tables(docs: pa.Table | pl.DataFrame) -> dict[str, pa.Table]:
    """Tokenize ``docs`` (``docno``, ``title``, ``body``) into the five ``fts_*`` tables.

    Tokenization runs once per *distinct* surface form; everything else is
    Arrow/numpy set-at-a-time work (regex split, dictionary encoding, one sort
    of 64-bit ``term_id << 32 | docno`` keys whose run lengths are the term
    frequencies), so memory stays at a few dozen bytes per token.
    """
    frame = _as_frame(docs)
    n_docs = frame.height
    title, body = _field_occurrences(frame["title"]), _field_occurrences(frame["body"])
    encoded = pc.dictionary_encode(pa.concat_arrays([title.raw, body.raw]))
    lexicon = _lexicon(encoded.dictionary.to_pylist())
    raw_index = encoded.indices.to_numpy()
    n_title = len(title.docno)
    title_keys = _expand(title.docno, raw_index[:n_title], lexicon)
    body_keys = _expand(body.docno, raw_index[n_title:], lexicon)
    del encoded, raw_index
    term_ids, docnos, tf = _count_keys(np.concatenate([title_keys] * TITLE_WEIGHT + [body_keys]))
    del title_keys, body_keys
    df = np.bincount(term_ids, minlength=len(lexicon.vocab)).astype(np.int32)
    doc_len = np.bincount(docnos, weights=tf, minlength=n_docs).astype(np.int32)
    avg_doc_len = float(doc_len.mean()) if n_docs else 0.0
    tables = {
        "fts_term": pa.table(
            {
                "term_id": np.arange(len(lexicon.vocab), dtype=np.int32),
                "term": pa.array(lexicon.vocab, pa.string()),
                "df": df,
            }
        ),
        "fts_posting": pa.table({"term_id": term_ids, "docno": docnos, "tf": tf}),
        "fts_doc": pa.table({"docno": np.arange(n_docs, dtype=np.int32), "doc_len": doc_len}),
        "fts_form": lexicon.form_rows,
        "fts_stats": pa.table(
            {"n_docs": [n_docs], "avg_doc_len": [avg_doc_len], "k1": [K1], "b": [B]}
        ),
    }
    return {name: _conform(tables[name], schema) for name, schema in FTS_SCHEMAS.items()}


def _conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """Cast ``table`` to ``schema`` (large/view strings to string, column order)."""
    table = table.select(schema.names)
    return table.cast(schema).combine_chunks()


# ---------------------------------------------------------------- keyword arrays


def term_hashes(terms: list[str]) -> np.ndarray:
    """Stable 64-bit hashes of ``terms``: blake2b-8 of UTF-8, read little-endian."""
    digests = b"".join(hashlib.blake2b(t.encode(), digest_size=8).digest() for t in terms)
    return np.frombuffer(digests, dtype="<u8").astype(np.uint64)


def _bm25_weights(
    offsets: np.ndarray, docno: np.ndarray, tf: np.ndarray, doc_len: np.ndarray, stats: dict
) -> np.ndarray:
    """Per-posting BM25 contributions (idf × saturated tf) as float32."""
    n, k1, b = stats["n_docs"], stats["k1"], stats["b"]
    df = np.diff(offsets).astype(np.float64)
    idf = np.log1p((n - df + 0.5) / (df + 0.5))
    avg = stats["avg_doc_len"] or 1.0
    tf64 = tf.astype(np.float64)
    norm = k1 * (1.0 - b + b * doc_len[docno].astype(np.float64) / avg)
    return (np.repeat(idf, np.diff(offsets)) * tf64 * (k1 + 1.0) / (tf64 + norm)).astype(np.float32)


def _term_strings(terms: list[str]) -> tuple[np.ndarray, np.ndarray]:
    encoded = [t.encode() for t in terms]
    lengths = np.fromiter((len(e) for e in encoded), dtype=np.int64, count=len(encoded))
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return np.frombuffer(b"".join(encoded), dtype=np.uint8), offsets


def _sorted_postings(posting: pa.Table) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(term_id, docno, tf)`` of ``fts_posting`` in (term_id, docno) order.

    Tables straight from :func:`build_fts_tables` are already in order; tables
    read back from a database may not be.
    """
    term_id = posting["term_id"].to_numpy().astype(np.int32)
    docno = posting["docno"].to_numpy().astype(np.int32)
    tf = posting["tf"].to_numpy()
    keys = (term_id.astype(np.int64) << 32) | docno.astype(np.int64)
    if len(keys) > 1 and not bool(np.all(keys[1:] > keys[:-1])):
        order = np.argsort(keys, kind="stable")
        term_id, docno, tf = term_id[order], docno[order], tf[order]
    return term_id, docno, tf


def write_keyword_arrays(tables: dict[str, pa.Table], directory: Path) -> None:
    """Write the memory-mappable keyword index of ``tables`` into ``directory``."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    stats = tables["fts_stats"].to_pylist()[0]
    term = tables["fts_term"].sort_by("term_id")
    if not np.array_equal(term["term_id"].to_numpy(), np.arange(term.num_rows)):
        raise ValueError("fts_term.term_id must be 0..n_terms-1")
    terms = term["term"].to_pylist()
    term_id, docno, tf = _sorted_postings(tables["fts_posting"])
    offsets = np.zeros(len(terms) + 1, dtype=np.int64)
    np.cumsum(np.bincount(term_id, minlength=len(terms)), out=offsets[1:])
    doc_len = tables["fts_doc"].sort_by("docno")["doc_len"].to_numpy().astype(np.int32)
    weight = _bm25_weights(offsets, docno, tf, doc_len, stats)
    hashes = term_hashes(terms)
    order = np.argsort(hashes, kind="stable")
    if len(order) > 1 and bool(np.any(np.diff(hashes[order]) == 0)):
        raise ValueError("blake2b-8 collision between two terms; cannot build the index")
    term_bytes, term_bytes_offsets = _term_strings(terms)
    arrays = {
        "offsets": offsets,
        "docno": docno,
        "weight": weight,
        "doc_len": doc_len,
        "term_hash": hashes[order],
        "term_hash_id": order.astype(np.int32),
        "term_bytes": term_bytes,
        "term_bytes_offsets": term_bytes_offsets,
    }
    for name, array in arrays.items():
        np.save(directory / f"{name}.npy", np.ascontiguousarray(array))
    meta = {
        "format": KEYWORD_FORMAT,
        "n_docs": int(stats["n_docs"]),
        "n_terms": len(terms),
        "n_postings": len(docno),
        "avg_doc_len": float(stats["avg_doc_len"]),
        "k1": float(stats["k1"]),
        "b": float(stats["b"]),
        "title_weight": TITLE_WEIGHT,
    }
    (directory / "meta.json").write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")


# ------------------------------------------------------------------------ search


_EMPTY_DOCS = np.zeros(0, dtype=np.int32)
_EMPTY_SCORES = np.zeros(0, dtype=np.float32)


def _top_k(docs: np.ndarray, scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` best ``(docs, scores)`` by score desc, docno asc; docs distinct."""
    n = len(docs)
    if n > k:
        kth = np.partition(scores, n - k)[n - k]  # the k-th largest score
        above = np.flatnonzero(scores > kth)
        ties = np.flatnonzero(scores == kth)
        need = k - len(above)
        if len(ties) > need:
            ties = ties[np.argpartition(docs[ties], need - 1)[:need]]
        keep = np.concatenate([above, ties])
        docs, scores = docs[keep], scores[keep]
    order = np.lexsort((docs, -scores))
    return docs[order], scores[order]


@dataclass(frozen=True, eq=False, repr=False)
class KeywordIndex:
    """A memory-mapped BM25 index written by :func:`write_keyword_arrays`."""

    directory: Path
    meta: dict[str, Any]
    offsets: np.ndarray
    docno: np.ndarray
    weight: np.ndarray
    doc_len: np.ndarray
    term_hash: np.ndarray
    term_hash_id: np.ndarray
    term_bytes: np.ndarray
    term_bytes_offsets: np.ndarray
    _local: threading.local

    @classmethod
    def open(cls, directory: Path) -> KeywordIndex:
        """Map the index in ``directory`` (milliseconds: no parsing, no hashing)."""
        directory = Path(directory)
        meta = json.loads((directory / "meta.json").read_text())
        if meta.get("format") != KEYWORD_FORMAT:
            raise ValueError(f"{directory} is not a {KEYWORD_FORMAT} index")

        def load(name: str) -> np.ndarray:
            # a plain ndarray view of the map: slicing a np.memmap costs microseconds
            return np.load(directory / f"{name}.npy", mmap_mode="r").view(np.ndarray)

        return cls(
            directory=directory,
            meta=meta,
            offsets=load("offsets"),
            docno=load("docno"),
            weight=load("weight"),
            doc_len=load("doc_len"),
            term_hash=load("term_hash"),
            term_hash_id=load("term_hash_id"),
            term_bytes=load("term_bytes"),
            term_bytes_offsets=load("term_bytes_offsets"),
            _local=threading.local(),
        )

    def __repr__(self) -> str:
        return (
            f"KeywordIndex({str(self.directory)!r}, n_docs={self.n_docs}, "
            f"n_terms={self.meta['n_terms']}, n_postings={self.meta['n_postings']})"
        )

    @property
    def n_docs(self) -> int:
        """Number of documents (the length of an ``allowed`` mask)."""
        return int(self.meta["n_docs"])

    def term(self, term_id: int) -> str:
        """The term string of ``term_id``."""
        start, end = self.term_bytes_offsets[term_id], self.term_bytes_offsets[term_id + 1]
        return bytes(self.term_bytes[start:end]).decode()

    def term_ids(self, terms: list[str]) -> list[int]:
        """Ids of the distinct ``terms`` present in the vocabulary, in first-seen order."""
        if not terms or len(self.term_hash) == 0:
            return []
        unique = list(dict.fromkeys(terms))
        hashes = term_hashes(unique)
        pos = np.minimum(np.searchsorted(self.term_hash, hashes), len(self.term_hash) - 1)
        found = []
        for term, h, p in zip(unique, hashes, pos, strict=True):
            if self.term_hash[p] == h:
                term_id = int(self.term_hash_id[p])
                if self.term(term_id) == term:
                    found.append(term_id)
        return found

    def _buffer(self) -> np.ndarray:
        """This thread's all-zero float32 accumulator of length ``n_docs``."""
        buf = getattr(self._local, "scores", None)
        if buf is None:
            buf = np.zeros(self.n_docs, dtype=np.float32)
            self._local.scores = buf
        return buf

    def _postings(self, term_id: int, allowed: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """Docnos (as ``intp``: numpy's fast index type) and weights of one term."""
        start, end = self.offsets[term_id], self.offsets[term_id + 1]
        docs, weights = self.docno[start:end].astype(np.intp), self.weight[start:end]
        if allowed is not None:
            keep = np.take(allowed, docs)
            docs, weights = docs[keep], weights[keep]
        return docs, weights

    def _accumulate(
        self, term_ids: list[int], allowed: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Summed scores of every doc matching any term: ``(docs, scores)``, docs distinct."""
        buf = self._buffer()
        touched: list[np.ndarray] = []
        try:
            for term_id in term_ids:
                docs, weights = self._postings(term_id, allowed)
                touched.append(docs[np.take(buf, docs) == 0])  # weights > 0: 0 means unseen
                np.add.at(buf, docs, weights)
            docs = np.concatenate(touched)
            scores = np.take(buf, docs)
        finally:
            for docs_part in touched:
                buf[docs_part] = 0
        return docs, scores

    def search(
        self, query: str, k: int, allowed: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Top ``k`` docs for ``query`` by BM25: ``(docnos int32, scores float32)``.

        OR semantics over the query's distinct terms. ``allowed`` is an optional
        boolean mask of length ``n_docs``; documents outside it are dropped
        before the top-k cut, so up to ``k`` allowed documents come back. Ties
        are broken by docno ascending. Thread-safe (per-thread score buffers).
        """
        if allowed is not None:
            allowed = np.asarray(allowed, dtype=bool)
            if allowed.shape != (self.n_docs,):
                raise ValueError(f"allowed must have shape ({self.n_docs},)")
        term_ids = self.term_ids(tokenize(query))
        if k <= 0 or not term_ids:
            return _EMPTY_DOCS, _EMPTY_SCORES
        if len(term_ids) == 1:
            docs, scores = self._postings(term_ids[0], allowed)
        else:
            docs, scores = self._accumulate(term_ids, allowed)
        docs, scores = _top_k(docs, scores, k)
        return docs.astype(np.int32, copy=False), scores.astype(np.float32, copy=False)


# --------------------------------------------------------------------- SQL macro


def bm25_macro_sql() -> str:
    """DuckDB SQL creating the persistent table macro ``fts_search(q, k := 10)``.

    Run it once on a database holding the ``fts_*`` tables. The macro returns
    ``(docno, score)`` ordered by score descending then docno ascending, at most
    ``k`` rows, with the same BM25 as :meth:`KeywordIndex.search`::

        SELECT s.docno, s.score, d.title
        FROM fts_search('smoking status', k := 20) AS s
        JOIN search_doc AS d USING (docno)
        ORDER BY s.score DESC, s.docno;

    To filter before the top-k cut, ask for a generous ``k`` and filter in the
    join, or copy the macro body and add the predicate to its ``scored`` step.
    The macro names the ``fts_*`` tables unqualified, so call it with the
    release as the default database: open the file directly, or after
    ``ATTACH 'metabundle.duckdb' AS mb (READ_ONLY)`` run ``USE mb`` first
    (``mb.fts_search(...)`` alone does not find the tables).

    Query parsing is the SQL twin of the tokenizer: ``lower(strip_accents(q))``
    split on ``[^a-z0-9._-]+``, each piece trimmed of ``._-``, each form mapped
    to its terms through ``fts_form``. A form absent from the corpus (hence
    from ``fts_form``) is matched the way the tokenizer would treat it where
    that needs no stemmer: the form itself and its ``[._-]``-separated parts,
    each only if it contains a digit or a separator (the tokenizer keeps those
    verbatim), matched exactly against ``fts_term``; so ``phs000179`` or
    ``phs000179.v9.p1`` still find ``phs000179.v3.p1``. Unseen plain words (say
    a new inflection) find nothing here, whereas the Python path stems them;
    stop words find nothing on either path. Scores agree with the Python path
    (float32 there, double here) for every query whose words occur in the
    corpus or contain digits.
    """
    return f"""
CREATE OR REPLACE MACRO fts_search(q, k := 10) AS TABLE
WITH query_form AS (
    SELECT DISTINCT trim(piece, '{TRIM_CHARS}') AS form
    FROM (
        SELECT unnest(regexp_split_to_array(lower(strip_accents(q)), '{SPLIT_PATTERN}'))
            AS piece
    )
    WHERE trim(piece, '{TRIM_CHARS}') <> ''
),
unseen_piece AS (
    SELECT form AS piece FROM query_form WHERE form NOT IN (SELECT form FROM fts_form)
    UNION
    SELECT unnest(regexp_split_to_array(form, '[{TRIM_CHARS}]+')) AS piece
    FROM query_form WHERE form NOT IN (SELECT form FROM fts_form)
),
query_term AS (
    SELECT f.term_id
    FROM query_form AS w JOIN fts_form AS f ON f.form = w.form
    UNION
    SELECT t.term_id
    FROM unseen_piece AS u JOIN fts_term AS t ON t.term = u.piece
    WHERE regexp_matches(u.piece, '[0-9{TRIM_CHARS}]')
),
term_idf AS (
    SELECT t.term_id, ln(1 + (s.n_docs - t.df + 0.5) / (t.df + 0.5)) AS idf
    FROM fts_term AS t JOIN query_term USING (term_id) CROSS JOIN fts_stats AS s
),
scored AS (
    SELECT p.docno,
           sum(i.idf * p.tf * (s.k1 + 1)
               / (p.tf + s.k1 * (1 - s.b + s.b * d.doc_len / s.avg_doc_len))) AS score
    FROM term_idf AS i
    JOIN fts_posting AS p USING (term_id)
    JOIN fts_doc AS d USING (docno)
    CROSS JOIN fts_stats AS s
    GROUP BY p.docno
)
SELECT docno, score FROM scored ORDER BY score DESC, docno ASC LIMIT k
""".strip()
