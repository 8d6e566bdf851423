"""Semantic search speed and recall: our ANN path versus the raw library and brute force.

Vectors are the release's own document embeddings (``ann/vectors.npy``; a seeded sample
when the mode asks for fewer); queries are the evaluation-set queries and document
titles, embedded by the release's model. For each backend (usearch, hnswlib) an index
is built over those vectors by the production :func:`build_ann_index` (default
parameters, one thread) and four paths answer every query, interleaved:

* ``ours``: :func:`filtered_search` without a filter, what ``semantic_candidates``
  runs per source: the index wrapper's search plus exact re-scoring from the
  memory-mapped float16 vectors;
* ``ours_index``: the wrapper's :meth:`AnnIndex.search` alone (query normalisation,
  ordering), to separate its cost from the re-scoring's;
* ``raw``: the library call on its own handle of the same file (usearch
  ``Index.search``; hnswlib ``knn_query``), same ``ef``, one thread;
* ``exact``: brute force over a float32 copy in RAM (``matrix @ q`` + partition), the
  ground truth of recall@10.

``ours`` asks the index for ``RESCORE_MARGIN`` × 10 keys and keeps the best 10 after
exact re-scoring (near ties that f16 index distances swap come back in order; identical
vectors indexed once come back with all their keys); ``ours_pool`` asks for the 50
that ``rank`` pools for a page of 10 (the beam, ``expansion_search``, not ``k``, bounds
what is found). ``raw_expansion_sweep`` gives the raw call's recall and p50 at a few
``expansion_search`` values, the knob that trades one for the other. Recall is
tie-aware (see :func:`recall`); the strict variant is reported beside it.

:func:`release_path` measures what a tool actually gets: ``semantic_candidates`` (query
embedding, one filtered search per source index, exact re-scoring, merge) over the whole
release, its top 10 against brute force over every vector of the release, for the
release's own backend; and ``per_source``, each source's index as a source's own tool
and ``search_all`` search it (the 50 candidates of a page of 10 among that source's
documents, their top 10 against brute force over that source's vectors), with the
backend and the search breadth its build chose. The release-wide figure hides a weak
source whose documents rarely reach the release's top 10.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import SEED, interleaved, latency, profile_top, ratio, timed
from benchmarks.quality import load_sets
from metabundle.index.ann import (
    BACKENDS,
    AnnIndex,
    build_ann_index,
    filtered_search,
    load_vectors,
    open_ann_index,
    save_vectors,
)
from metabundle.index.vector_file import Vectors
from metabundle.search.release import Release

K = 10
POOL = 50  # rank() pools max(50, 5 * limit) candidates per list
EF_SWEEP = (64, 128, 256)  # expansion_search (ef) values of the raw recall/latency sweep


def query_texts(release: Release, n: int) -> list[str]:
    """``n`` query texts: the evaluation queries, then random document titles."""
    texts = [case.query for cases in load_sets().values() for case in cases][:n]
    if len(texts) < n:
        docnos = sample_rows(release.n_docs, n - len(texts)).tolist()
        titles = release.query(
            "SELECT title FROM search_doc WHERE docno IN (SELECT unnest(?::INTEGER[])) "
            "ORDER BY docno",
            [docnos],
        )
        texts += [row[0] for row in titles]
    return texts


def sample_rows(total: int, wanted: int | None, seed: int = SEED) -> np.ndarray:
    """Sorted row numbers: all of them, or a seeded sample of ``wanted``."""
    if wanted is None or wanted >= total:
        return np.arange(total)
    return np.sort(np.random.default_rng(seed).choice(total, wanted, replace=False))


def raw_searcher(path: Path, backend: str, expansion: int) -> Any:
    """The library's own search call on a fresh handle of the index at ``path``
    (bitscan, which has no library: its Hamming estimate alone, without re-scoring)."""
    if backend == "bitscan":
        index = open_ann_index(path)
        return lambda q: index.search(q, K)[0]
    if backend == "usearch":
        from usearch.index import Index

        index = Index.restore(os.fspath(path), view=True, expansion_search=expansion)
        return lambda q: np.asarray(index.search(q, K, threads=1).keys)
    import hnswlib

    info = open_ann_index(path).info
    index = hnswlib.Index(space="ip", dim=int(info["dimension"]))
    index.load_index(os.fspath(path))
    index.set_ef(expansion)
    index.set_num_threads(1)
    return lambda q: index.knn_query(q, k=K, num_threads=1)[0][0]


def exact_top(matrix: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Keys of the ``K`` best inner products, brute force."""
    scores = matrix @ query
    top = np.argpartition(scores, len(scores) - K)[-K:]
    return top[np.argsort(-scores[top])]


#: Rows of a release's vectors scored at a time by :func:`exact_tops`.
EXACT_BLOCK_ROWS = 65_536


def exact_tops(
    vectors: Vectors, queries: np.ndarray, start: int = 0, stop: int | None = None
) -> list[np.ndarray]:
    """Each query's ``K`` best rows of ``vectors[start:stop]`` by inner product, best
    first: brute force, one matrix product per block of rows for every query, so a
    release of ten million vectors is never read whole into memory."""
    stop = len(vectors) if stop is None else stop
    wanted = np.asarray(queries, dtype=np.float32)
    rows = np.empty((0, len(wanted)), np.int64)
    scores = np.empty((0, len(wanted)), np.float32)
    for first in range(start, stop, EXACT_BLOCK_ROWS):
        block = np.asarray(vectors[first : min(first + EXACT_BLOCK_ROWS, stop)], np.float32)
        block_rows = np.arange(first, first + len(block))[:, None]
        scores = np.concatenate([scores, block @ wanted.T])
        rows = np.concatenate([rows, np.broadcast_to(block_rows, (len(block), len(wanted)))])
        if len(scores) > K:
            keep = np.argpartition(-scores, K - 1, axis=0)[:K]
            scores = np.take_along_axis(scores, keep, axis=0)
            rows = np.take_along_axis(rows, keep, axis=0)
    order = np.argsort(-scores, axis=0, kind="stable")
    best = np.take_along_axis(rows, order, axis=0)
    return [best[:, i] for i in range(len(wanted))]


def recall(
    found: list[np.ndarray], truth: list[np.ndarray], matrix: Vectors, queries: list
) -> dict[str, float]:
    """Recall@10 against brute force, tie-aware and strict.

    ``tie_aware``: a found key counts when its exact score reaches the true 10th best
    score (the corpus holds many identical vectors, e.g. UK Biobank coding values
    "Yes"/"No", whose order among themselves is arbitrary); ``strict``: the share of
    the true top-10 keys found.
    """
    tie_aware, strict = [], []
    for keys, best, query in zip(found, truth, queries, strict=True):
        keys = np.unique(np.asarray(keys, dtype=np.int64))[:K]
        threshold = float(matrix[best[-1]] @ query) - 1e-5
        tie_aware.append(min(K, int((matrix[keys] @ query >= threshold).sum())) / K)
        strict.append(len(set(keys.tolist()) & set(best.tolist())) / K)
    return {
        "tie_aware": round(float(np.mean(tie_aware)), 4),
        "strict": round(float(np.mean(strict)), 4),
    }


def measure_backend(
    backend: str, vectors: np.ndarray, queries: np.ndarray, folder: Path
) -> dict[str, Any]:
    """Build, open and time one backend over ``vectors`` (float32, unit rows)."""
    path = folder / f"bench.{backend}"
    keys = np.arange(len(vectors), dtype=np.int64)
    build_s, _ = timed(lambda: build_ann_index(vectors, keys, path, backend))
    open_s, index = timed(lambda: open_ann_index(path))
    stored = load_vectors(folder / "vectors.npy")
    expansion = int(index.info["params"].get("expansion_search", 0))
    raw = raw_searcher(path, backend, expansion)
    exact_matrix = np.asarray(stored, dtype=np.float32)
    unit = [q / np.linalg.norm(q) for q in queries]
    samples, results = interleaved(
        {
            "ours": lambda q: filtered_search(index, stored, q, K, None)[0],
            "ours_index": lambda q: index.search(q, K)[0],
            "ours_pool": lambda q: filtered_search(index, stored, q, POOL, None)[0][:K],
            "raw": raw,
            "exact": lambda q: exact_top(exact_matrix, q),
        },
        unit,
    )
    truth = results["exact"]
    stats = {name: latency(values) for name, values in samples.items()}
    sweep = {}
    for ef in EF_SWEEP if backend != "bitscan" else ():  # a scan has no beam
        searcher = raw_searcher(path, backend, ef)
        ef_samples, ef_results = interleaved({"raw": searcher}, unit)
        sweep[ef] = {
            "p50_ms": latency(ef_samples["raw"])["p50_ms"],
            "recall_at_10": recall(ef_results["raw"], truth, exact_matrix, unit)["tie_aware"],
        }
    return {
        "build_s": round(build_s, 2),
        "build_vectors_per_s": round(len(vectors) / build_s, 1) if build_s else None,
        "open_ms": round(open_s * 1e3, 2),
        "file_mib": round(path.stat().st_size / 2**20, 1),
        "latency": stats,
        "recall_at_10": recall(results["ours"], truth, exact_matrix, unit),
        "raw_recall_at_10": recall(results["raw"], truth, exact_matrix, unit),
        "pool_recall_at_10": recall(results["ours_pool"], truth, exact_matrix, unit),
        "raw_expansion_sweep": sweep,
        "p50_ratio_vs_raw": ratio(stats["ours"]["p50_ms"], stats["raw"]["p50_ms"]),
        "p50_ratio_vs_exact": ratio(stats["ours"]["p50_ms"], stats["exact"]["p50_ms"]),
    }


def compare(release_vectors: Vectors, queries: np.ndarray, n_vectors: int | None) -> dict[str, Any]:
    """Both backends over a sample of the release's vectors; ``queries`` (q, d)."""
    rows = sample_rows(len(release_vectors), n_vectors)
    vectors = np.asarray(release_vectors[rows], dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    vectors = vectors[(norms > 0).ravel()] / norms[norms > 0][:, None]
    out: dict[str, Any] = {
        "vectors": len(vectors),
        "dimension": int(vectors.shape[1]),
        "queries": len(queries),
        "k": K,
    }
    with tempfile.TemporaryDirectory(prefix="bench-ann-") as tmp:
        save_vectors(vectors, Path(tmp) / "vectors.npy")
        for backend in BACKENDS:
            out[backend] = measure_backend(backend, vectors, queries, Path(tmp))
    return out


def release_path(release: Release, texts: list[str], profile_queries: int = 0) -> dict[str, Any]:
    """Recall@10 and latency of ``semantic_candidates`` over the whole release."""
    from metabundle.search.retrieval import semantic_candidates

    vectors = release.vectors
    assert vectors is not None, "the release has no vectors"
    queries = release.embedder().embed(texts)
    truth = exact_tops(vectors, queries)
    samples, results = interleaved(
        {
            "embed_query": lambda t: release.embed_query(t),
            "semantic_candidates": lambda t: [
                d for d, _ in semantic_candidates(release, t, None, POOL)[:K]
            ],
        },
        texts,
    )
    stats = {name: latency(values) for name, values in samples.items()}
    profiled = texts[:profile_queries]
    top = profile_top(lambda: [semantic_candidates(release, t, None, POOL) for t in profiled])
    return {
        "backend": {source: release.ann_backend(source) for source in release.source_masks},
        "profile": {"queries": len(profiled), "top": top} if profiled else None,
        "vectors": len(vectors),
        "queries": len(texts),
        "latency": stats,
        "recall_at_10": recall(results["semantic_candidates"], truth, vectors, list(queries)),
        "per_source": per_source(release, vectors, queries),
    }


def per_source(release: Release, vectors: Vectors, queries: np.ndarray) -> dict[str, Any]:
    """Recall@10 and p50 of each source's index searched on its own for a page of 10
    (sources of fewer than 10 documents left out: every search finds all of them)."""
    out: dict[str, Any] = {}
    for source, docnos in release.source_ranges.items():
        index = release.ann_index(source)
        if index is None or len(docnos) < K:
            continue
        truth = exact_tops(vectors, queries, docnos.start, docnos.stop)

        def search(query: np.ndarray, index: AnnIndex = index) -> np.ndarray:
            return filtered_search(index, release.vectors, query, POOL, None)[0][:K]

        samples, results = interleaved({"search": search}, list(queries))
        out[source] = {
            "backend": index.backend,
            "breadth": index.breadth,
            "vectors": len(docnos),
            "recall_at_10": recall(results["search"], truth, vectors, list(queries)),
            "p50_ms": latency(samples["search"])["p50_ms"],
        }
    return out
