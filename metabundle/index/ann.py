"""Vector indexes behind one small interface: HNSW graphs (usearch and hnswlib) and
``bitscan``, a scan of one-bit sign codes whose nearest candidates are re-scored
exactly; :func:`build_source_index` picks one per source.

Build side: :func:`build_ann_index` writes the index file atomically (temporary file +
rename) and a JSON sidecar ``path.with_suffix(".json")`` holding backend, dimension,
count, dtype, metric and parameters; :func:`save_vectors` writes the exact vectors as
``.npy`` (row ``i`` = key ``i``), the source of truth for exact re-scoring.

Read side: :func:`open_ann_index` picks the backend from the sidecar. usearch indexes are
memory-mapped (``Index.restore(path, view=True)``): opening is instant whatever the size
and pages load on demand. hnswlib cannot map its files: ``load_index`` reads the whole
index into RAM, so opening costs time and memory proportional to its size (a known
limitation; use usearch for large releases).

``bitscan`` stores, for every indexed vector, the sign of each dimension after the
corpus mean is subtracted (32 bytes for 256 dimensions) in one memory-mapped ``uint64``
matrix; a query computes the Hamming distance to every code (a few hundred microseconds
for 100k vectors), ranks the nearest again by its own coordinates and hands the best
:data:`BITSCAN_POOL` (or the pool its build chose) to exact re-scoring. It
finds what a graph misses in crowded neighbourhoods (the release's many near-identical
titles), at a cost linear in the number of vectors. The build's default, ``auto``
(:func:`build_source_index`), measures each source's usearch graph on its own vectors
and keeps it where it finds 99 % of their neighbours, a scan elsewhere, whatever the
size: a graph of 1.8M crowded vectors found 0.85 of them, where a scan of its codes
costs about 7 ms a query.

Similarity: vectors are unit length, so cosine = inner product. usearch uses its ``cos``
metric (exact for unit vectors and correct for its f16/i8 storage), hnswlib its ``ip``
space; both report ``1 - cosine`` distances, which :meth:`AnnIndex.search` turns into
cosine scores (higher is better).

Identical vectors (two documents with the same text: a "Yes" answer in many codings,
one description shared by many dbGaP variables) are indexed once: a group of identical
rows enters the graph as its first key, and the sidecar's ``duplicates`` lists every
other key with the key it is a copy of. Search expands each found key to its copies,
which share its score, so results name every document while the graph holds no
zero-distance clusters (those saturate HNSW neighbour lists and cost recall).

Determinism: with ``threads=1`` (the default) both backends insert in input order and
produce byte-identical files for the same input (tested). usearch draws node levels from
a fixed internal seed (the ``seed`` argument does not apply to it); hnswlib uses ``seed``.
Multi-threaded insertion is faster but not reproducible.

Filtered search (:func:`filtered_search`) keeps returning ``k`` results when a filter is
selective: small allowed sets are scored exactly; large ones oversample the ANN and fall
back to exact scoring when the oversampled candidates still hold too few allowed keys.
Every result is re-scored from the ``.npy`` vectors, so scores are the same whichever
path produced them; ties are broken by key ascending.
"""

from __future__ import annotations

import json
import math
import os
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from metabundle.extras import MissingExtra, install_hint
from metabundle.index.vector_file import Vectors, load_vectors

__all__ = [
    "BACKENDS",
    "AnnIndex",
    "StoredUnitRows",
    "UnitMatrix",
    "build_ann_index",
    "build_source_index",
    "filtered_search",
    "load_vectors",
    "open_ann_index",
    "save_vectors",
]

BACKENDS = ("usearch", "hnswlib", "bitscan")
Progress = Callable[[int, int], None]
"""Called with (done, total) as an index is built."""
SIDECAR_FORMAT = 1
_USEARCH_DTYPES = ("f32", "f16", "bf16", "i8")
_EXACT_CHUNK = 65536
SAVE_ROWS = 65536  # rows written at a time by save_vectors
RESCORE_MARGIN = 2
"""An unfiltered search asks the index for this many times ``k`` keys and keeps the ``k``
best after exact re-scoring: index distances of f16 storage can swap near ties (many
queries' 10th and 11th neighbours lie within 1e-3), the exact scores do not."""
AUTO_MIN_RECALL = 0.99
"""``auto`` (the build's default) keeps a source's usearch graph when its recall@10 on
the source's own vectors reaches this (:func:`self_recall`), else scans sign codes.
Documents as queries are easier than people's queries (UK Biobank's wordllama graph:
0.98 on its own vectors, 0.92 on the evaluation queries and titles of the benchmark),
hence a bar above the 0.98 the benchmark asks for."""
AUTO_SAMPLE = 200
SELF_RECALL_SEED = 20261202
AUTO_SAMPLE_VECTORS = 50_000
"""``auto`` measures a graph of this many of a larger source's vectors before building
the whole graph (a single-threaded usearch graph inserts about 2,500 vectors a second
here: 20 s for the sample, 5 min for 750k vectors)."""
BITSCAN_POOL = 1000
"""A ``bitscan`` search re-scores at least this many candidates exactly (the nearest
codes, see :class:`_BitscanIndex`) unless its sidecar names another ``rescore_pool``.
On the release's wordllama vectors (114k, 256 dimensions) the true 10 nearest lie among
the 500 nearest codes for 98 % of queries and among the 1,000 nearest for 99 %
(``benchmarks/README.md``); the build widens it where a source needs more."""
REFINE_FACTOR = 8
"""A scan ranks this many times its pool of nearest codes by Hamming distance again by
the query's coordinates before exact re-scoring. On a 1M-document release (wordllama
vectors) the pool of 1,000 then holds the true 10 nearest of 0.97 of the evaluation
queries on All of Us (0.88 by Hamming distance alone) and 0.998 on UK Biobank (0.98),
for 0.6 to 3 ms more a query (``benchmarks/README.md``)."""
_BYTE_SIGNS = (np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1) * 2.0 - 1.0).astype(
    np.float32
)
"""Row ``b``: the signs (+1 for a set bit, most significant first) of code byte ``b``."""
BLOCK_ROWS = 65_536
"""Rows handled at a time where a build would otherwise copy the whole matrix
(gathering and normalizing it, hashing rows, adding rows to a graph, packing sign
codes): a copy of OMOP's 1.8M vectors is 1.8 GB."""
SCAN_ROWS = 65_536
"""Codes a bitscan search compares with the query's at a time (scratch of 576 KB)."""
BREADTH_PARAMS = {
    "usearch": "expansion_search",
    "hnswlib": "expansion_search",
    "bitscan": "rescore_pool",
}
"""The sidecar parameter that holds each backend's search breadth."""


def _atomic_write(path: Path, write: Callable[[Path], None]) -> None:
    """Call ``write(tmp)`` on a temporary sibling of ``path``, then rename it to ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:12]}.tmp")
    try:
        write(tmp)
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    """float32 C-contiguous copy of a 2-D array with unit rows (zero rows stay zero)."""
    matrix = np.array(vectors, dtype=np.float32, order="C", copy=True)
    if matrix.ndim != 2 or matrix.shape[1] == 0:
        raise ValueError(f"expected a (n, d) matrix, got shape {matrix.shape}")
    if not np.isfinite(matrix).all():
        raise ValueError("vectors contain NaN or infinity")
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    np.divide(matrix, norms, out=matrix, where=norms > 0)
    return matrix


UNIT_TOLERANCE = 1e-4
"""A row whose squared length is this close to 1 counts as unit length."""


def as_unit_rows(vectors: Any) -> UnitMatrix:
    """``vectors`` itself when it already is a float32 C-contiguous matrix of unit (or
    zero) rows, else :func:`unit_rows`'s normalized copy; stored rows
    (:class:`StoredUnitRows`, what the build's ANN step reads) are unit rows already
    and come back as they are, so no part of the step copies them (a copy per part
    held three at once, 25 GB at 6.5M vectors)."""
    if isinstance(vectors, StoredUnitRows):
        return vectors
    if (
        isinstance(vectors, np.ndarray)
        and vectors.dtype == np.float32
        and vectors.ndim == 2
        and vectors.shape[1]
        and vectors.flags.c_contiguous
    ):
        squared = np.einsum("ij,ij->i", vectors, vectors)
        if np.all((np.abs(squared - 1.0) < UNIT_TOLERANCE) | (squared == 0.0)):
            return vectors
    return unit_rows(vectors)


def gather_unit_rows(vectors: Vectors, rows: np.ndarray) -> np.ndarray:
    """``unit_rows(vectors[rows])``, gathered a block of rows at a time into one float32
    matrix: a memory-mapped float16 vector file is never copied whole in its own type
    beside the float32 matrix."""
    rows = np.asarray(rows, dtype=np.int64)
    matrix = np.empty((rows.size, vectors.shape[1]), np.float32)
    for start in range(0, rows.size, BLOCK_ROWS):
        block = rows[start : start + BLOCK_ROWS]
        matrix[start : start + block.size] = unit_rows(vectors[block])
    return matrix


class StoredUnitRows:
    """Some rows of a stored vector matrix, read as float32 unit rows when asked for:
    ``rows[i]``, ``rows[array]`` and ``rows[start:stop]`` give :func:`unit_rows` of the
    stored rows ``picked[...]``, ``len`` and ``shape`` those of the matrix they make.

    The ANN step builds from it a block of rows at a time, so what it holds does not
    grow with the source: a gathered float32 copy of OMOP's rows was 2.5 GB of the 7.4 GB
    the step held at 3M documents, and would have been 8.7 GB at 10M. ``vectors`` is
    best a :class:`~metabundle.index.vector_file.VectorFile`, whose reads leave none of
    the file resident."""

    dtype = np.dtype(np.float32)

    def __init__(self, vectors: Vectors, picked: np.ndarray) -> None:
        self._vectors = vectors
        self._picked = np.asarray(picked, dtype=np.int64)
        self.shape = (int(self._picked.size), int(vectors.shape[1]))

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, which: Any) -> np.ndarray:
        if isinstance(which, slice):
            return gather_unit_rows(self._vectors, self._picked[which])
        rows = np.asarray(which)
        return gather_unit_rows(self._vectors, self._picked[rows.reshape(-1)]).reshape(
            (*rows.shape, self.shape[1])
        )


UnitMatrix = np.ndarray | StoredUnitRows
"""Unit rows to build from: a float32 matrix, or stored rows read when needed."""


def _row_blocks(matrix: UnitMatrix) -> Iterator[tuple[int, np.ndarray]]:
    """``(first row, rows)`` of ``matrix`` a :data:`BLOCK_ROWS` block at a time (views of
    a matrix, reads of stored rows)."""
    for start in range(0, len(matrix), BLOCK_ROWS):
        yield start, matrix[start : start + BLOCK_ROWS]


def _unit_query(query: np.ndarray, dimension: int) -> np.ndarray:
    q = np.asarray(query, dtype=np.float32).reshape(-1)
    if q.shape != (dimension,):
        raise ValueError(f"query has shape {np.shape(query)}, expected ({dimension},)")
    norm = float(np.linalg.norm(q))
    if not math.isfinite(norm) or norm == 0.0:
        raise ValueError("query vector is zero or not finite")
    return q / norm


def _top_k(keys: np.ndarray, scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` best by score descending, ties by key ascending (exact at the boundary)."""
    if scores.size > k:
        kth = np.partition(scores, scores.size - k)[scores.size - k]
        keep = scores >= kth
        keys, scores = keys[keep], scores[keep]
    order = np.lexsort((keys, -scores))[:k]
    return keys[order].astype(np.int64, copy=False), scores[order].astype(np.float32, copy=False)


# -- index objects -------------------------------------------------------------------


class AnnIndex(ABC):
    """An opened, read-only HNSW index; keys are int64, scores cosine similarities.

    ``breadth`` is how widely it searches (a graph's beam, a scan's re-scoring pool):
    the sidecar's ``params[BREADTH_PARAMS[backend]]``, which the build widens until
    the index finds enough true neighbours (:mod:`metabundle.index.ann_breadth`)."""

    backend: str
    default_breadth = 64
    """The breadth of a sidecar that names none."""
    filter_share = 0.5
    """A filter keeping at least this share of the keys is searched through the index by
    :func:`filtered_search`, which asks it for its re-scoring pool over the share, even
    when the filter keeps few enough keys to score each: re-scoring the candidates costs
    less than converting every kept float16 row (about a microsecond each). A graph is
    asked for at most twice its pool: beyond that it misses neighbours a scan finds
    (``benchmarks/README.md``)."""

    def __init__(self, path: Path, info: dict[str, Any]) -> None:
        self.path = path
        self.info = info
        copies = info.get("duplicates") or {"keys": [], "of": []}
        copy_keys = np.asarray(copies["keys"], dtype=np.int64)
        originals = np.asarray(copies["of"], dtype=np.int64)
        if copy_keys.shape != originals.shape:
            raise ValueError(f"{path}: the duplicates' keys and originals differ in number")
        by_original = np.argsort(originals, kind="stable")
        # the copies of self._with_copy[i] are self._copy_keys[self._copy_starts[i]:...[i + 1]]
        self._copy_keys = copy_keys[by_original]
        self._with_copy, starts = np.unique(originals[by_original], return_index=True)
        self._copy_starts = np.append(starts, originals.size)
        self._indexed = int(info.get("indexed", info["count"]))

    @property
    def dimension(self) -> int:
        """Vector length."""
        return int(self.info["dimension"])

    def __len__(self) -> int:
        return int(self.info["count"])

    @property
    def breadth(self) -> int:
        """How widely a search looks (see the class docstring)."""
        params = self.info.get("params", {})
        return int(params.get(BREADTH_PARAMS[self.backend], self.default_breadth))

    def set_breadth(self, breadth: int) -> None:
        """Search ``breadth`` wide from now on (the sidecar is not touched)."""
        if breadth < 1:
            raise ValueError(f"a search breadth must be at least 1, not {breadth}")
        self.info = {**self.info, "params": {**self.info.get("params", {})}}
        self.info["params"][BREADTH_PARAMS[self.backend]] = int(breadth)
        self._widen(int(breadth))

    @abstractmethod
    def _widen(self, breadth: int) -> None:
        """Apply a new :attr:`breadth` to the backend."""

    def search(self, query: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Approximate ``k`` nearest keys to ``query`` (shape ``(d,)``) and their scores.

        Scores are cosine similarities as the index stores them (f16 storage rounds them
        slightly), clipped to [-1, 1]; sorted by score descending, ties by key ascending.
        Fewer than ``k`` come back only when the index holds fewer vectors or the graph
        cannot reach them.
        """
        q = _unit_query(query, self.dimension)
        count = min(int(k), len(self))
        if count <= 0:
            return np.empty(0, np.int64), np.empty(0, np.float32)
        keys, distances = self._search(q, min(count, self._indexed))
        keys = keys.astype(np.int64)
        scores = clip_cosine(1.0 - distances.astype(np.float64))
        if self._with_copy.size:
            keys, scores = self._with_copies(keys, scores)
        return _top_k(keys, scores, count)

    def _with_copies(self, keys: np.ndarray, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``keys`` and the keys of their identical vectors, each copy at its key's score."""
        owners = self._with_copy
        if not owners.size:
            return keys, scores
        at = np.minimum(np.searchsorted(owners, keys), owners.size - 1)
        holders = np.flatnonzero(owners[at] == keys)
        if not holders.size:
            return keys, scores
        groups = at[holders]
        firsts, ends = self._copy_starts[groups], self._copy_starts[groups + 1]
        sizes = ends - firsts
        group_of_copy = np.repeat(np.arange(groups.size), sizes)
        within = np.arange(int(sizes.sum())) - np.repeat(np.cumsum(sizes) - sizes, sizes)
        copy_keys = self._copy_keys[firsts[group_of_copy] + within]
        copy_scores = scores[holders][group_of_copy].astype(np.float32)
        return np.concatenate([keys, copy_keys]), np.concatenate([scores, copy_scores])

    def rescore_count(self, k: int) -> int:
        """How many candidates :func:`filtered_search` re-scores exactly for ``k`` results."""
        return RESCORE_MARGIN * k

    def candidates(self, query: np.ndarray, count: int) -> np.ndarray:
        """About ``count`` keys near a unit ``query``, copies included, in no particular
        order: what :func:`filtered_search` re-scores exactly."""
        return self.search(query, count)[0]

    @abstractmethod
    def _search(self, query: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
        """Backend search for a unit query: (keys, distances = 1 - cosine)."""


class _UsearchIndex(AnnIndex):
    backend = "usearch"

    def __init__(self, path: Path, info: dict[str, Any]) -> None:
        from usearch.index import Index

        super().__init__(path, info)
        index = Index.restore(os.fspath(path), view=True, expansion_search=self.breadth)
        if index is None:
            raise ValueError(f"{path} is not a usearch index")
        self._index = index

    def _widen(self, breadth: int) -> None:
        self._index.expansion_search = breadth

    def _search(self, query: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
        matches = self._index.search(query, count, threads=1)
        return np.asarray(matches.keys), np.asarray(matches.distances)


class _HnswlibIndex(AnnIndex):
    backend = "hnswlib"

    def __init__(self, path: Path, info: dict[str, Any]) -> None:
        try:
            import hnswlib
        except ModuleNotFoundError as exc:
            what = f"The hnswlib graph {path.name}"
            raise MissingExtra(install_hint("hnswlib", what, "hnswlib")) from exc

        super().__init__(path, info)
        index = hnswlib.Index(space=str(info.get("space", "ip")), dim=self.dimension)
        index.load_index(os.fspath(path))  # reads the whole file into RAM
        index.set_ef(self.breadth)
        index.set_num_threads(1)
        self._index = index

    def _widen(self, breadth: int) -> None:
        self._index.set_ef(breadth)

    def _search(self, query: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
        # hnswlib raises instead of returning fewer results when the graph search reaches
        # fewer than ``count`` nodes; ask for fewer until it answers.
        while True:
            try:
                labels, distances = self._index.knn_query(query, k=count, num_threads=1)
            except RuntimeError:
                if count <= 1:
                    return np.empty(0, np.int64), np.empty(0, np.float32)
                count = max(1, count * 3 // 4)
                continue
            return np.asarray(labels[0]), np.asarray(distances[0])


class _BitscanIndex(AnnIndex):
    """Sign codes scanned by Hamming distance: every indexed vector, centred on the
    corpus mean, as one bit per dimension (1 when above the mean). The file is one
    ``uint64`` matrix, row 0 the keys and each further row one 64-bit word of every
    vector's code, so a query reads each word row contiguously from the memory map.
    The :data:`REFINE_FACTOR` times the pool nearest codes are ranked again by the
    query's own coordinates (:meth:`_signed_dot`), and the pool best of them
    (:data:`BITSCAN_POOL` or the sidecar's ``rescore_pool``) are re-scored exactly by
    :func:`filtered_search`. Scores are the Hamming estimate of cosine
    (``cos(pi * h / bits)``)."""

    backend = "bitscan"
    default_breadth = BITSCAN_POOL
    filter_share = 0.1  # a scan ranks every code: ten times its pool loses nothing

    def __init__(self, path: Path, info: dict[str, Any]) -> None:
        super().__init__(path, info)
        table = np.load(path, mmap_mode="r", allow_pickle=False)
        words = _code_words(self.dimension)
        if table.dtype != np.uint64 or table.shape != (1 + words, self._indexed):
            raise ValueError(f"{path} is not a bitscan index of {self._indexed} vectors")
        plain = table.view(np.ndarray)  # the map itself, without np.memmap's slicing cost
        self._keys = plain[0].view(np.int64)
        self._words = plain[1:]
        self._mean = np.asarray(info["mean"], dtype=np.float32)
        self._pool = self.breadth

    def _widen(self, breadth: int) -> None:
        self._pool = breadth

    def rescore_count(self, k: int) -> int:
        return max(RESCORE_MARGIN * k, self._pool)

    def candidates(self, query: np.ndarray, count: int) -> np.ndarray:
        rows, _ = self._nearest(_unit_query(query, self.dimension), count)
        keys = self._keys[rows]
        return self._with_copies(keys, np.zeros(keys.size, np.float32))[0]

    def _search(self, query: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
        rows, distance = self._nearest(query, count)
        angle = np.pi * distance.astype(np.float64) / self.dimension
        return self._keys[rows], 1.0 - np.cos(np.minimum(angle, np.pi))

    def _nearest(self, query: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
        """Rows of about ``count`` codes nearest to the query (ascending) and their
        Hamming distances: the :data:`REFINE_FACTOR` times ``count`` nearest by Hamming
        distance, the ``count`` of them with the highest :meth:`_signed_dot`."""
        rows, distance = self._hamming_nearest(query, count * REFINE_FACTOR)
        if rows.size <= count:
            return rows, distance
        keep = np.sort(np.argpartition(-self._signed_dot(query, rows), count)[:count])
        return rows[keep], distance[keep]

    def _signed_dot(self, query: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """``query · s`` for the sign vector ``s`` (+1 above the mean, -1 below) of each
        row's code: a finer estimate than the Hamming distance, which rounds the query
        to signs as well. Summed a byte of code at a time from a table of the 256 sign
        patterns' partial sums."""
        words = self._words.shape[0]
        padded = np.zeros(64 * words, np.float32)
        padded[: query.size] = query
        # one row of 256 partial sums per code byte, flattened: byte j's value v at 256 j + v
        partial = (padded.reshape(8 * words, 8) @ _BYTE_SIGNS.T).ravel()
        # the codes' bytes in the order sign_codes packed them (little-endian words)
        codes = np.ascontiguousarray(self._words[:, rows].T, dtype="<u8").view(np.uint8)
        return partial[codes + np.arange(0, 256 * 8 * words, 256)].sum(axis=1)

    def _hamming_nearest(self, query: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
        """Rows of the ``count`` codes nearest to the query's by Hamming distance (ties
        at the edge kept) and their distances. The codes are scanned :data:`SCAN_ROWS`
        at a time into scratch arrays that stay in the CPU's cache, where whole-index
        temporaries cost a fresh allocation (and its page faults) per code word: 51 MB
        each at 6.4M codes."""
        code = _sign_codes((query - self._mean)[None, :])[:, 0]
        total = self._words.shape[1]
        distance = np.empty(total, np.uint16)
        histogram = np.zeros(64 * len(code) + 1, np.int64)
        xored = np.empty(min(total, SCAN_ROWS), np.uint64)
        bits_set = np.empty(xored.size, np.uint8)
        for start in range(0, total, SCAN_ROWS):
            block = distance[start : start + SCAN_ROWS]
            size = block.size
            block[:] = 0
            for word, bits in zip(self._words[:, start : start + size], code, strict=True):
                np.bitwise_xor(word, bits, out=xored[:size])
                np.bitwise_count(xored[:size], out=bits_set[:size])
                np.add(block, bits_set[:size], out=block)
            histogram += np.bincount(block, minlength=histogram.size)
        if count >= total:
            return np.arange(total), distance
        rows = np.flatnonzero(distance <= np.searchsorted(np.cumsum(histogram), count))
        return rows, distance[rows]


def _code_words(dimension: int) -> int:
    return max(1, math.ceil(dimension / 64))


def _sign_codes(centred: np.ndarray) -> np.ndarray:
    """One bit per dimension (1 above the mean) of each row, as ``(words, rows)`` uint64."""
    words = _code_words(centred.shape[1])
    packed = np.zeros((centred.shape[0], 8 * words), np.uint8)
    packed[:, : math.ceil(centred.shape[1] / 8)] = np.packbits(centred > 0, axis=1)
    return np.ascontiguousarray(packed.view("<u8").astype(np.uint64).T)


# -- build ----------------------------------------------------------------------------


def build_source_index(
    vectors: UnitMatrix,
    keys: np.ndarray,
    stem: Path,
    backend: str = "auto",
    progress: Progress | None = None,
) -> tuple[Path, float | None]:
    """Build one source's index at ``stem`` plus the backend's suffix; return its path
    and, for ``auto``, the usearch graph's :func:`self_recall`.

    ``auto`` builds usearch and keeps it when that recall reaches
    :data:`AUTO_MIN_RECALL`; otherwise it replaces the graph with a bitscan index.
    Crowded vectors (a static embedding model's, many near-identical titles) get the
    scan, where a graph misses neighbours; well-spread ones keep the faster graph. A
    source of more than :data:`AUTO_SAMPLE_VECTORS` vectors first measures a graph of
    a seeded sample of them: a graph's recall falls as it grows, so a sample graph that
    misses the bar rules the whole one out without building it (the recall returned is
    then the sample's). ``progress`` follows every usearch graph built (see
    :func:`build_ann_index`).
    """
    if backend != "auto":
        path = stem.with_name(f"{stem.name}.{backend}")
        build_ann_index(vectors, keys, path, backend, progress=progress)
        return path, None
    if len(keys) > AUTO_SAMPLE_VECTORS:
        rows = np.sort(
            np.random.default_rng(SELF_RECALL_SEED).choice(
                len(keys), AUTO_SAMPLE_VECTORS, replace=False
            )
        )
        recall = _graph_recall(vectors[rows], np.asarray(keys)[rows], stem, progress)
        if recall < AUTO_MIN_RECALL:
            return _build_scan(vectors, keys, stem), recall
    graph = stem.with_name(f"{stem.name}.usearch")
    build_ann_index(vectors, keys, graph, "usearch", progress=progress)
    recall = self_recall(open_ann_index(graph), vectors, keys)
    if recall >= AUTO_MIN_RECALL:
        return graph, recall
    _remove_index(graph)
    return _build_scan(vectors, keys, stem), recall


def _graph_recall(
    vectors: UnitMatrix, keys: np.ndarray, stem: Path, progress: Progress | None
) -> float:
    """:func:`self_recall` of a usearch graph of ``vectors``, built beside ``stem`` and
    removed again."""
    graph = stem.with_name(f"{stem.name}.sample.usearch")
    build_ann_index(vectors, keys, graph, "usearch", progress=progress)
    try:
        return self_recall(open_ann_index(graph), vectors, keys)
    finally:
        _remove_index(graph)


def _remove_index(path: Path) -> None:
    path.unlink()
    path.with_suffix(".json").unlink()


def _build_scan(vectors: UnitMatrix, keys: np.ndarray, stem: Path) -> Path:
    scan = stem.with_name(f"{stem.name}.bitscan")
    build_ann_index(vectors, keys, scan, "bitscan")
    return scan


def self_recall(
    index: AnnIndex, vectors: Any, keys: np.ndarray, sample: int = AUTO_SAMPLE
) -> float:
    """Recall@10 of ``index`` (built from ``vectors`` with ``keys``) as
    :func:`filtered_search` uses it (its candidates re-scored exactly): each of a
    seeded sample of its own vectors asks for its neighbours, itself left out, against
    brute force; tie-aware (a found key counts when its exact score reaches the true
    10th best, since identical vectors tie)."""
    matrix = as_unit_rows(vectors)
    if len(matrix) <= 11:
        return 1.0
    rows = np.random.default_rng(SELF_RECALL_SEED).choice(len(matrix), sample, replace=True)
    return recall_at_10(index, matrix, keys, matrix[rows], 11, rows)


def tenth_best(
    matrix: UnitMatrix, queries: np.ndarray, wanted: int, own_rows: np.ndarray | None = None
) -> np.ndarray:
    """Each unit query's ``wanted``-th best exact score over the rows of ``matrix``
    (``own_rows[i]``, when given, left out for query ``i``), by one matrix product per
    block of rows: the brute force :func:`recall_at_10` measures against, read once
    however many times an index is asked."""
    best = np.full((max(wanted, 0), len(queries)), -np.inf, np.float32)
    if wanted <= 0:
        return np.full(len(queries), -np.inf, np.float32)
    for start, block in _row_blocks(matrix):
        scores = block @ queries.T
        if own_rows is not None:
            inside = np.flatnonzero((own_rows >= start) & (own_rows < start + len(block)))
            scores[own_rows[inside] - start, inside] = -np.inf
        merged = np.concatenate([best, scores])
        best = -np.partition(-merged, wanted - 1, axis=0)[:wanted]
    return best.min(axis=0)


def recall_at_10(
    index: AnnIndex,
    matrix: UnitMatrix,
    keys: np.ndarray,
    queries: np.ndarray,
    depth: int,
    own_rows: np.ndarray | None = None,
    tenth: np.ndarray | None = None,
) -> float:
    """Tie-aware recall@10 of ``index`` over unit ``matrix`` (its rows the vectors of
    ``keys``) for unit ``queries``, each searched as :func:`filtered_search` does for
    ``depth`` results (the index's candidates re-scored exactly) against brute force.
    ``own_rows[i]``, when given, is the row that query ``i`` is, left out of both;
    ``tenth`` is :func:`tenth_best` of the queries where it is known already."""
    key_array = np.asarray(keys, dtype=np.int64)
    row_of = np.zeros(int(key_array.max()) + 1, np.int64)
    row_of[key_array] = np.arange(len(key_array))
    wanted = min(10, len(matrix) - (own_rows is not None))
    if not len(queries) or wanted <= 0:
        return 1.0
    if tenth is None:
        tenth = tenth_best(matrix, queries, wanted, own_rows)
    found = 0
    for i, query in enumerate(queries):
        candidates = row_of[index.candidates(query, index.rescore_count(depth))]
        if own_rows is not None:
            candidates = candidates[candidates != own_rows[i]]
        scores = matrix[candidates] @ query
        best = np.argsort(-scores, kind="stable")[:wanted]
        found += int((scores[best] >= tenth[i] - 1e-5).sum())
    return found / (wanted * len(queries))


def build_ann_index(
    vectors: Any,
    keys: np.ndarray,
    path: Path,
    backend: str = "usearch",
    *,
    dtype: str = "f16",
    connectivity: int = 16,
    expansion_add: int = 128,
    expansion_search: int = 128,
    seed: int = 100,
    threads: int = 1,
    progress: Progress | None = None,
) -> None:
    """Build an HNSW index over unit ``vectors`` (n, d) with int64 ``keys`` at ``path``.

    Rows not of unit length are normalized in a copy (:func:`as_unit_rows`); a float32
    matrix of unit rows is indexed as it is, without one. ``dtype`` is usearch's
    storage scalar (``f16`` default: half the size of f32, recall unchanged for unit
    vectors; also ``f32``, ``bf16``, ``i8``); hnswlib always stores f32 and records
    that. ``connectivity`` is HNSW ``M``; ``expansion_add``/``expansion_search`` are
    ``ef_construction``/``ef``. ``threads=1`` keeps the file reproducible (see the
    module docstring). ``bitscan`` takes none of these: it stores sign codes and the
    corpus mean. ``progress`` is called with (vectors inserted, vectors to insert) as a
    usearch graph grows (an hour for millions of vectors); the other backends take
    seconds and do not call it.
    """
    if backend not in BACKENDS:
        raise ValueError(f"unknown ANN backend {backend!r} (known: {', '.join(BACKENDS)})")
    matrix = as_unit_rows(vectors)
    key_array = np.asarray(keys, dtype=np.int64).reshape(-1)
    if key_array.shape[0] != matrix.shape[0]:
        raise ValueError(f"{key_array.shape[0]} keys for {matrix.shape[0]} vectors")
    if key_array.size and (key_array.min() < 0 or np.unique(key_array).size != key_array.size):
        raise ValueError("keys must be unique and non-negative")
    first, copies = _identical_rows(matrix)
    path = Path(path)
    if path.suffix == ".json":
        raise ValueError("an index path must not end in .json (that names its sidecar)")
    params = {
        "connectivity": connectivity,
        "expansion_add": expansion_add,
        "expansion_search": expansion_search,
        "seed": seed,
        "threads": threads,
    }
    if backend == "usearch":
        if dtype not in _USEARCH_DTYPES:
            raise ValueError(f"usearch dtype must be one of {_USEARCH_DTYPES}, got {dtype!r}")
        _atomic_write(
            path,
            lambda tmp: _build_usearch(
                matrix, first, key_array[first], tmp, dtype, params, progress
            ),
        )
        extra = {"dtype": dtype, "metric": "cos"}
    elif backend == "hnswlib":
        _atomic_write(
            path, lambda tmp: _build_hnswlib(matrix[first], key_array[first], tmp, params)
        )
        extra = {"dtype": "f32", "metric": "ip", "space": "ip"}
    else:
        mean = _mean_of_rows(matrix, first)
        _atomic_write(path, lambda tmp: _build_bitscan(matrix, first, key_array[first], tmp, mean))
        extra = {"dtype": "b1", "metric": "hamming", "mean": [float(x) for x in mean]}
        params = {"rescore_pool": BITSCAN_POOL}
    info = {
        "format": SIDECAR_FORMAT,
        "backend": backend,
        "dimension": int(matrix.shape[1]),
        "count": int(matrix.shape[0]),
        "indexed": int(first.size),
        "duplicates": {
            "keys": key_array[copies[:, 0]].tolist(),
            "of": key_array[copies[:, 1]].tolist(),
        },
        **extra,
        "score": "cosine similarity = 1 - distance",
        "params": params,
    }
    write_sidecar(path, info)


def write_sidecar(path: Path, info: dict[str, Any]) -> None:
    """Write ``info`` as the JSON sidecar of the index at ``path`` (atomically)."""
    text = json.dumps(info, indent=2, sort_keys=True) + "\n"
    _atomic_write(path.with_suffix(".json"), lambda tmp: tmp.write_text(text, encoding="utf-8"))


def _row_hashes(words: np.ndarray) -> np.ndarray:
    """A 64-bit hash of each row of ``words`` (uint32), a block of rows at a time."""
    multipliers = np.random.default_rng(SELF_RECALL_SEED).integers(
        1, 2**63, size=words.shape[1], dtype=np.uint64
    ) | np.uint64(1)
    hashes = np.empty(len(words), np.uint64)
    for start in range(0, len(words), BLOCK_ROWS):
        block = words[start : start + BLOCK_ROWS].astype(np.uint64)
        hashes[start : start + BLOCK_ROWS] = (block * multipliers).sum(axis=1, dtype=np.uint64)
    return hashes


def _row_words(rows: np.ndarray) -> np.ndarray:
    """The bytes of each float32 row as uint32 words (for hashing and comparing)."""
    return np.ascontiguousarray(rows).view(np.uint32).reshape(len(rows), -1)


def _identical_rows(
    matrix: UnitMatrix, row_hashes: Callable[[np.ndarray], np.ndarray] = _row_hashes
) -> tuple[np.ndarray, np.ndarray]:
    """Rows to index (the first of each group of identical rows, in input order) and
    the others as ``(row, first row of its group)`` pairs, by row.

    Rows are grouped by a hash of their bytes, then each row of a group is compared
    with the group's first byte for byte; only a group whose rows differ (two rows
    sharing a hash) is sorted out exactly. Rows are read a block at a time (hashing) or
    by row number (comparing), never as one copy: sorting the rows themselves held two
    more copies of the matrix (3.5 GB at 1.8M vectors)."""
    count = len(matrix)
    if not count:
        return np.arange(0), np.empty((0, 2), np.int64)
    hashes = np.empty(count, np.uint64)
    for start, block in _row_blocks(matrix):
        hashes[start : start + len(block)] = row_hashes(_row_words(block))
    order = np.argsort(hashes, kind="stable")
    hashes = hashes[order]
    starts = np.flatnonzero(np.r_[True, hashes[1:] != hashes[:-1]])
    del hashes
    group_of = np.repeat(np.arange(starts.size), np.diff(np.r_[starts, count]))
    first = np.empty(count, np.int64)
    first[order] = order[starts][group_of]  # the first row of each row's hash group
    del order, group_of
    own = np.arange(count)
    shared = np.flatnonzero(first != own)
    differs = np.zeros(count, bool)
    for start in range(0, shared.size, BLOCK_ROWS):
        block = shared[start : start + BLOCK_ROWS]
        differs[block] = (_row_words(matrix[block]) != _row_words(matrix[first[block]])).any(axis=1)
    for group_first in np.unique(first[differs]):  # rows that only share a hash
        members = np.flatnonzero(first == group_first)
        words = _row_words(matrix[members])
        rows = words.view(np.dtype((np.void, words.dtype.itemsize * words.shape[1])))
        _, first_of_group, group = np.unique(rows.ravel(), return_index=True, return_inverse=True)
        first[members] = members[first_of_group[group.ravel()]]
    copy_rows = np.flatnonzero(first != own)
    return np.flatnonzero(first == own), np.stack([copy_rows, first[copy_rows]], axis=1)


def _build_usearch(
    matrix: UnitMatrix,
    rows: np.ndarray,
    keys: np.ndarray,
    tmp: Path,
    dtype: str,
    params: dict[str, int],
    progress: Progress | None,
) -> None:
    """A graph of ``matrix[rows]`` keyed by ``keys``, its rows added a block at a time
    (in order, so the graph is the one a single call builds)."""
    from usearch.index import Index

    index = Index(
        ndim=matrix.shape[1],
        metric="cos",
        dtype=dtype,
        connectivity=params["connectivity"],
        expansion_add=params["expansion_add"],
        expansion_search=params["expansion_search"],
    )
    for start in range(0, rows.size, BLOCK_ROWS):
        block = rows[start : start + BLOCK_ROWS]
        index.add(
            keys[start : start + block.size].astype(np.uint64),
            matrix[block],
            threads=params["threads"],
            progress=None if progress is None else _usearch_tick(progress, start, rows.size),
        )
    index.save(os.fspath(tmp))


def _usearch_tick(progress: Progress, before: int, total: int) -> Callable[[int, int], bool]:
    """usearch's progress callback for a block added after ``before`` of ``total`` rows."""

    def tick(done: int, _block: int) -> bool:
        progress(before + done, total)
        return True

    # usearch compares the annotations with the types themselves, not their names
    tick.__annotations__ = {"done": int, "_block": int, "return": bool}
    return tick


def _build_hnswlib(matrix: UnitMatrix, keys: np.ndarray, tmp: Path, params: dict[str, int]) -> None:
    import hnswlib

    index = hnswlib.Index(space="ip", dim=matrix.shape[1])
    index.init_index(
        max_elements=max(1, len(keys)),
        M=params["connectivity"],
        ef_construction=params["expansion_add"],
        random_seed=params["seed"],
    )
    if len(keys):
        index.add_items(matrix, keys, num_threads=params["threads"])
    index.save_index(os.fspath(tmp))


def _mean_of_rows(matrix: UnitMatrix, rows: np.ndarray) -> np.ndarray:
    """The float32 mean of ``matrix[rows]`` (zeros for no rows), summed in float64 a
    block of rows at a time instead of from a copy of those rows."""
    total = np.zeros(matrix.shape[1], np.float64)
    for start in range(0, rows.size, BLOCK_ROWS):
        total += matrix[rows[start : start + BLOCK_ROWS]].sum(axis=0, dtype=np.float64)
    return (total / max(rows.size, 1)).astype(np.float32)


def _build_bitscan(
    matrix: UnitMatrix, rows: np.ndarray, keys: np.ndarray, tmp: Path, mean: np.ndarray
) -> None:
    """The scan of ``matrix[rows]`` keyed by ``keys``, its sign codes packed a block of
    rows at a time."""
    codes = [
        _sign_codes(matrix[rows[start : start + BLOCK_ROWS]] - mean)
        for start in range(0, rows.size, BLOCK_ROWS)
    ]
    words = _code_words(matrix.shape[1])
    signs = np.concatenate(codes, axis=1) if codes else np.zeros((words, 0), np.uint64)
    table = np.concatenate([keys.astype(np.uint64)[None, :], signs])
    with tmp.open("wb") as handle:  # a file object: np.save must not append ".npy"
        np.save(handle, table, allow_pickle=False)


# -- open -----------------------------------------------------------------------------


def read_sidecar(path: Path) -> dict[str, Any]:
    """The JSON sidecar written next to an index by :func:`build_ann_index`."""
    sidecar = Path(path).with_suffix(".json")
    try:
        info: dict[str, Any] = json.loads(sidecar.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise FileNotFoundError(f"ANN index sidecar {sidecar} is missing") from exc
    return info


def open_ann_index(path: Path, backend: str | None = None) -> AnnIndex:
    """Open the index at ``path`` read-only; the backend comes from its sidecar.

    A ``backend`` given explicitly must agree with the sidecar.
    """
    path = Path(path)
    info = read_sidecar(path)
    found = info.get("backend")
    if backend is not None and backend != found:
        raise ValueError(f"{path} was built with {found!r}, not {backend!r}")
    if not path.is_file():
        raise FileNotFoundError(f"ANN index {path} is missing")
    if found == "usearch":
        return _UsearchIndex(path, info)
    if found == "hnswlib":
        return _HnswlibIndex(path, info)
    if found == "bitscan":
        return _BitscanIndex(path, info)
    raise ValueError(f"{path}: unknown ANN backend {found!r} in its sidecar")


# -- exact vectors and filtered search ------------------------------------------------


def save_vectors(vectors: Vectors, path: Path, dtype: str = "float16") -> None:
    """Write ``vectors`` (n, d) as ``.npy`` in ``dtype`` (float16 default, or float32).

    float16 halves the file at a cost of about 1e-3 in cosine; scoring upcasts to
    float32. Row ``i`` must be the vector of key ``i``. Written atomically, a block of
    rows at a time through the file (the same bytes as :func:`numpy.save`), so neither
    the input (a matrix, a memory map, a :class:`VectorFile`) nor the output is held
    whole.
    """
    if dtype not in ("float16", "float32"):
        raise ValueError("dtype must be 'float16' or 'float32'")
    if len(vectors.shape) != 2:
        raise ValueError(f"expected a (n, d) matrix, got shape {vectors.shape}")
    header = {
        "descr": np.lib.format.dtype_to_descr(np.dtype(dtype)),
        "fortran_order": False,
        "shape": tuple(int(n) for n in vectors.shape),
    }

    def write(tmp: Path) -> None:
        with tmp.open("wb") as handle:
            np.lib.format.write_array_header_1_0(handle, header)
            for start in range(0, vectors.shape[0], SAVE_ROWS):
                block = vectors[start : start + SAVE_ROWS]
                handle.write(np.ascontiguousarray(block, dtype=dtype).data)

    _atomic_write(Path(path), write)


def clip_cosine(scores: np.ndarray) -> np.ndarray:
    """Cosine similarities clipped to [-1, 1]: half-precision storage and float sums
    can land just outside (1.000021), which no cosine is."""
    return np.clip(scores, -1.0, 1.0).astype(np.float32)


def _exact_scores(vectors: Vectors, rows: np.ndarray, query: np.ndarray) -> np.ndarray:
    return clip_cosine(np.asarray(vectors[rows], dtype=np.float32) @ query)


def _exact_top_k(
    vectors: Vectors, rows: np.ndarray, query: np.ndarray, k: int
) -> tuple[np.ndarray, np.ndarray]:
    """Brute-force top ``k`` among sorted ``rows``, in chunks to bound memory."""
    best_keys, best_scores = np.empty(0, np.int64), np.empty(0, np.float32)
    for start in range(0, len(rows), _EXACT_CHUNK):
        chunk = rows[start : start + _EXACT_CHUNK]
        keys = np.concatenate([best_keys, chunk])
        scores = np.concatenate([best_scores, _exact_scores(vectors, chunk, query)])
        best_keys, best_scores = _top_k(keys, scores, k)
    return best_keys, best_scores


def _sorted_contains(sorted_keys: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Which of ``keys`` are in ``sorted_keys`` (ascending, distinct), by binary search:
    a cost in the candidates, not in the allowed keys."""
    at = np.searchsorted(sorted_keys, keys)
    found = at < len(sorted_keys)
    found[found] = sorted_keys[at[found]] == keys[found]
    return found


def filtered_search(
    index: AnnIndex,
    vectors: Vectors,
    query: np.ndarray,
    k: int,
    allowed_keys: np.ndarray | None,
    *,
    exact_threshold: int = 20000,
    max_candidates: int = 50_000,
) -> tuple[np.ndarray, np.ndarray]:
    """Top ``k`` keys among ``allowed_keys`` (None = all) with exact cosine scores.

    Keys are row numbers into ``vectors``. Without a filter the index is asked for
    :meth:`AnnIndex.rescore_count` keys (:data:`RESCORE_MARGIN` times ``k``; a bitscan
    index at least :data:`BITSCAN_POOL`). Up to ``exact_threshold`` allowed keys, fewer
    than the index's :attr:`~AnnIndex.filter_share` of its keys, are scored by brute
    force; more use the ANN with ``k`` scaled by the filter's selectivity (the
    re-scoring pool times the share of keys allowed, x4 per retry, at most
    ``max_candidates`` candidates), then exact search over the allowed rows if the
    candidates still hold fewer than ``k`` allowed keys.
    Returns ``min(k, number allowed)`` results: score descending, key ascending.
    """
    q = _unit_query(query, vectors.shape[1])
    if k <= 0:
        return np.empty(0, np.int64), np.empty(0, np.float32)
    n = len(index)
    if allowed_keys is None:
        keys = index.candidates(q, index.rescore_count(k))
        return _top_k(keys, _exact_scores(vectors, keys, q), k)
    allowed = np.asarray(allowed_keys, dtype=np.int64)
    if allowed.size > 1 and not (allowed[1:] > allowed[:-1]).all():
        allowed = np.unique(allowed)  # sorted distinct keys are used as they are
    if allowed.size and (allowed[0] < 0 or allowed[-1] >= vectors.shape[0]):
        raise ValueError("allowed_keys must be row numbers of vectors")
    if n == 0 or (allowed.size <= exact_threshold and allowed.size < index.filter_share * n):
        return _exact_top_k(vectors, allowed, q, k)
    wanted = min(k, allowed.size)
    limit = min(n, max(max_candidates, k))
    count = min(limit, max(4 * k, math.ceil(index.rescore_count(k) * n / allowed.size)))
    while True:
        keys = index.candidates(q, count)
        hits = keys[_sorted_contains(allowed, keys)]
        if hits.size >= wanted:
            return _top_k(hits, _exact_scores(vectors, hits, q), k)
        if count >= limit:
            return _exact_top_k(vectors, allowed, q, k)
        count = min(limit, count * 4)
