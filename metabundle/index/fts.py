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

from metabundle.index.tokenizer import SPLIT_PATTERN, TRIM_CHARS, tokenize
from metabundle.index.variants import ALTERNATIVE_WEIGHT, TermVariants

__all__ = [
    "K1",
    "KEYWORD_FORMAT",
    "TITLE_WEIGHT",
    "B",
    "KeywordIndex",
    "bm25_macro_sql",
    "term_hashes",
]

#: How many times a title term counts relative to a body term (BM25F-like weight).
TITLE_WEIGHT = 2
#: BM25 term-frequency saturation.
K1 = 1.2
#: BM25 document-length normalisation.
B = 0.75
#: Format tag written to, and required in, ``meta.json``.
KEYWORD_FORMAT = "metabundle-keyword-v1"


def term_hashes(terms: list[str]) -> np.ndarray:
    """Stable 64-bit hashes of ``terms``: blake2b-8 of UTF-8, read little-endian."""
    digests = b"".join(hashlib.blake2b(t.encode(), digest_size=8).digest() for t in terms)
    return np.frombuffer(digests, dtype="<u8").astype(np.uint64)


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
    variants: TermVariants | None
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
            variants=TermVariants.open(directory),
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
                buf[docs] += weights  # a term's postings hold each document once
            docs = np.concatenate(touched)
            scores = np.take(buf, docs)
        finally:
            for docs_part in touched:
                buf[docs_part] = 0
        return docs, scores

    def ideal_score(self, query: str) -> float:
        """The BM25 a document would score holding every query term at its best weight
        in the corpus: the sum over the query's distinct terms of their highest posting
        weight (0.0 when no term is in the vocabulary). No document scores more, so
        ``score / ideal_score`` says how much of the query a match covers."""
        return self._ideal(tokenize(query))

    def _ideal(self, terms: list[str]) -> float:
        total = 0.0
        for term_id in self.term_ids(terms):
            start, end = self.offsets[term_id], self.offsets[term_id + 1]
            if end > start:
                total += float(self.weight[start:end].max())
        return total

    def search(
        self, query: str, k: int, allowed: np.ndarray | None = None, *, variants: bool = False
    ) -> tuple[np.ndarray, np.ndarray]:
        """Top ``k`` docs for ``query`` by BM25: ``(docnos int32, scores float32)``.

        OR semantics over the query's distinct terms. ``allowed`` is an optional
        boolean mask of length ``n_docs``; documents outside it are dropped
        before the top-k cut, so up to ``k`` allowed documents come back. Ties
        are broken by docno ascending. Thread-safe (per-thread score buffers).
        With ``variants``, each alternative of the query (:mod:`.variants`) is
        searched too and a document keeps its best score, an alternative's in the
        query's units (its BM25 times the query's ideal score over its own) times
        :data:`~metabundle.index.variants.ALTERNATIVE_WEIGHT`.
        """
        if allowed is not None:
            allowed = np.asarray(allowed, dtype=bool)
            if allowed.shape != (self.n_docs,):
                raise ValueError(f"allowed must have shape ({self.n_docs},)")
        terms = tokenize(query)
        docs, scores = self._search_terms(terms, k, allowed)
        alternatives = self.variants.alternatives(query) if variants and self.variants else []
        if not alternatives:
            return docs, scores
        ideal = self._ideal(terms)
        found_docs, found_scores = [docs], [scores]
        for alternative in alternatives:
            own = self._ideal(alternative)
            if own <= 0:
                continue
            alt_docs, alt_scores = self._search_terms(alternative, k, allowed)
            scale = ALTERNATIVE_WEIGHT * (ideal / own if ideal > 0 else 1.0)
            found_docs.append(alt_docs)
            found_scores.append((alt_scores * scale).astype(np.float32))
        docs, scores = np.concatenate(found_docs), np.concatenate(found_scores)
        order = np.lexsort((-scores, docs))
        first = np.ones(len(order), dtype=bool)
        first[1:] = docs[order][1:] != docs[order][:-1]
        best = order[first]
        docs, scores = _top_k(docs[best], scores[best], k)
        return docs.astype(np.int32, copy=False), scores.astype(np.float32, copy=False)

    def _search_terms(
        self, terms: list[str], k: int, allowed: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray]:
        term_ids = self.term_ids(terms)
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
