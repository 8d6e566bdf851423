"""A release's exact vectors read by rows with positioned reads, for serving.

Re-scoring reads a thousand scattered rows of ``vectors.npy`` a query. Through a memory
map each of those reads makes the pages around it resident in the serving process (the
kernel maps up to 64 KB around a page fault), so a million-document release's process
held 230 MB of vector pages after five such reads and had to let them go after every
call (:mod:`metabundle.search.mapped_pages`), paying the faults again on the next.
:class:`VectorFile` reads the rows it is asked for with ``os.preadv`` instead: nearby
rows in one read, the bytes from the page cache, nothing left mapped. Where ``preadv``
is missing (not POSIX) it falls back to the memory map.
"""

from __future__ import annotations

import os
import weakref
from pathlib import Path
from typing import Any

import numpy as np

# Rows closer than this are read in one go: one system call costs about as much as
# copying this many bytes.
_GAP_BYTES = 16384

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
    integer array, ``len``, ``shape``, ``dtype``, ``np.asarray`` for the whole matrix."""

    def __init__(self, path: Path) -> None:
        mapped = load_vectors(path)
        if not mapped.flags.c_contiguous:
            raise ValueError(f"{path} holds a Fortran-ordered matrix, not rows")
        self.path = Path(path)
        self.shape: tuple[int, int] = (int(mapped.shape[0]), int(mapped.shape[1]))
        self.dtype = mapped.dtype
        self._mapped = mapped
        self._offset = int(mapped.offset)
        self._row_bytes = self.shape[1] * self.dtype.itemsize
        self._fd = os.open(self.path, os.O_RDONLY) if hasattr(os, "preadv") else None
        # the descriptor goes with the object even when nobody calls close()
        self._closer = weakref.finalize(self, os.close, self._fd) if self._fd is not None else None

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, rows: Any) -> np.ndarray:
        keys = np.asarray(rows)
        if keys.dtype.kind not in "iu":
            raise TypeError(f"rows of {self.path.name} are taken by integer row numbers")
        flat = keys.reshape(-1).astype(np.int64)
        if flat.size and (flat.min() < 0 or flat.max() >= self.shape[0]):
            raise IndexError(f"a row number outside 0..{self.shape[0] - 1} of {self.path.name}")
        taken = self._mapped[flat] if self._fd is None else self._read(flat)
        return taken.reshape(*keys.shape, self.shape[1])

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        whole = self[np.arange(self.shape[0])]
        return whole if dtype is None else whole.astype(dtype)

    def close(self) -> None:
        if self._closer is not None:
            self._closer()
        self._fd = None

    def _read(self, keys: np.ndarray) -> np.ndarray:
        """Rows ``keys`` (any order, repeats allowed) with one read per run of nearby rows."""
        width = self.shape[1]
        if not keys.size:
            return np.empty((0, width), self.dtype)
        order = np.argsort(keys, kind="stable")
        ordered = keys[order]
        breaks = np.flatnonzero(np.diff(ordered) > max(1, _GAP_BYTES // self._row_bytes)) + 1
        firsts = np.concatenate(([0], breaks))
        lasts = np.concatenate((breaks, [ordered.size])) - 1
        starts = ordered[firsts]
        lengths = ordered[lasts] - starts + 1
        bases = np.concatenate(([0], np.cumsum(lengths)[:-1]))
        buffer = np.empty((int(lengths.sum()), width), self.dtype)
        view = memoryview(buffer).cast("B")
        row = self._row_bytes
        spans = (self._offset + starts * row, lengths * row, bases * row)
        for at, size, into in zip(*(span.tolist() for span in spans), strict=True):
            if os.preadv(self._fd, [view[into : into + size]], at) != size:
                raise OSError(f"{self.path} ended before byte {at + size}")
        run = np.repeat(np.arange(firsts.size), lasts - firsts + 1)
        out = np.empty((keys.size, width), self.dtype)
        out[order] = buffer[bases[run] + ordered - starts[run]]
        return out
