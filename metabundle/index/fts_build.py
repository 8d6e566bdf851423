"""Build side of full-text search: the ``fts_*`` tables and the keyword arrays.

See :mod:`metabundle.index.fts` for the formats, the scoring and the query side.
This module needs polars and pyarrow.compute, which serving processes never import.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from metabundle.index.fts import K1, KEYWORD_FORMAT, TITLE_WEIGHT, B, term_hashes
from metabundle.index.tokenizer import SPLIT_PATTERN, TRIM_CHARS, fold, forms_terms

__all__ = ["FTS_SCHEMAS", "build_fts_tables", "write_keyword_arrays"]

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
