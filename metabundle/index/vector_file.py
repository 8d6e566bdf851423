"""A release's exact vectors read by rows, for serving, with nothing left resident.

Re-scoring reads a thousand scattered rows of ``vectors.npy`` a query. Through a plain
memory map each of those reads makes pages around it resident in the serving process
(the kernel maps the whole page-cache folio around a fault, often hundreds of KB), so a
million-document release's process held the better part of its 485 MB vector file after
one query's reads. :class:`VectorFile` gathers the rows from its map and lets the map's
pages go (:class:`~metabundle.mapped.MappedFile`): the rows are copied out, the file
stays in the page cache, and the process keeps none of it. At 1M documents that takes
1.3 ms for 1,000 rows where one ``preadv`` a row took 2.9 ms (``benchmarks/README.md``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from metabundle.mapped import MappedFile

UNRELATED_PAIRS = 4000
UNRELATED_SHARE = 0.001
UNRELATED_SEED = 20261201


def load_vectors(path: Path) -> np.ndarray:
    """Memory-map a ``.npy`` written by :func:`~metabundle.index.ann.save_vectors`
    (read-only)."""
    matrix = np.load(Path(path), mmap_mode="r", allow_pickle=False)
    if matrix.ndim != 2:
        raise ValueError(f"{path} holds shape {matrix.shape}, not (n, d)")
    return matrix


def mapped_rows(path: Path, *, writable: bool = False) -> tuple[MappedFile, np.ndarray]:
    """The map of the 2-D ``.npy`` at ``path`` and its matrix, a view of the map (read
    in place, or written when ``writable``)."""
    header = load_vectors(path)
    if not header.flags.c_contiguous:
        raise ValueError(f"{path} holds a Fortran-ordered matrix, not rows")
    shape, dtype, offset = header.shape, header.dtype, int(header.offset)
    del header
    mapped = MappedFile(path, writable=writable)
    matrix = np.frombuffer(mapped.map, dtype, count=shape[0] * shape[1], offset=offset)
    return mapped, matrix.reshape(shape)


def create_rows(path: Path, shape: tuple[int, int], dtype: Any) -> tuple[MappedFile, np.ndarray]:
    """A new ``.npy`` of ``shape`` at ``path`` (zeros), mapped for writing
    (:func:`mapped_rows`)."""
    np.lib.format.open_memmap(path, mode="w+", dtype=dtype, shape=shape).flush()
    return mapped_rows(path, writable=True)


def unrelated_cosine(vectors: Any) -> float | None:
    """The cosine that only the closest :data:`UNRELATED_SHARE` of random pairs of
    ``vectors``' rows reach (``None`` for fewer than two rows): a query whose best match
    is no closer has found nothing the model tells apart from chance. A fixed seed keeps
    it reproducible; ``vectors`` is anything indexed like an array (a memory map, a
    :class:`VectorFile`), and the same rows give the same figure."""
    if len(vectors) < 2:
        return None
    rng = np.random.default_rng(UNRELATED_SEED)
    left, right = (rng.integers(0, len(vectors), UNRELATED_PAIRS) for _ in range(2))
    cosines = np.einsum("ij,ij->i", vectors[left], vectors[right])
    return float(np.quantile(cosines, 1.0 - UNRELATED_SHARE))


class VectorFile:
    """The rows of a 2-D ``.npy`` matrix (as :func:`~metabundle.index.ann.save_vectors`
    writes it), indexed like a read-only array: ``vectors[rows]`` for an integer or an
    integer array or a slice, ``len``, ``shape``, ``dtype``, ``np.asarray`` for the
    whole matrix. Every read is a copy, after which none of the file stays resident."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._map: MappedFile | None
        self._map, self._rows = mapped_rows(self.path)
        self.shape: tuple[int, int] = (int(self._rows.shape[0]), int(self._rows.shape[1]))
        self.dtype = self._rows.dtype

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, rows: Any) -> np.ndarray:
        if isinstance(rows, slice):  # a block of rows
            rows = np.arange(*rows.indices(self.shape[0]))
        keys = np.asarray(rows)
        if keys.dtype.kind not in "iu":
            raise TypeError(f"rows of {self.path.name} are taken by integer row numbers")
        flat = keys.reshape(-1).astype(np.int64)
        if flat.size and (flat.min() < 0 or flat.max() >= self.shape[0]):
            raise IndexError(f"a row number outside 0..{self.shape[0] - 1} of {self.path.name}")
        if self._map is None:
            raise ValueError(f"{self.path.name} is closed")
        taken = self._rows[flat]  # a copy: numpy gathers into new memory
        self._map.let_go()
        return taken.reshape(*keys.shape, self.shape[1])

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        whole = self[np.arange(self.shape[0])]
        return whole if dtype is None else whole.astype(dtype)

    def close(self) -> None:
        """Let the map go (reads after this are refused)."""
        if self._map is not None:
            del self._rows  # the view holds the map open
            self._map.close()
            self._map = None
