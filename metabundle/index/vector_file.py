"""A release's exact vectors read by rows, for serving, with nothing left resident.

Re-scoring reads a thousand scattered rows of ``vectors.npy`` a query. Through a plain
memory map each of those reads makes pages around it resident in the serving process
(the kernel maps the whole page-cache folio around a fault, often hundreds of KB), so a
million-document release's process held the better part of its 485 MB vector file after
one query's reads. :class:`VectorFile` reads rows in one of two ways that leave nothing
resident: it gathers them from its map and lets the map's pages go
(:class:`~metabundle.mapped.MappedFile`), or it reads them with ``preadv``, one read per
run of nearby rows. Which is faster is the kernel's doing, not ours: at 1M documents one
machine gathered 1,000 rows from the map in 1.3 ms against 2.9 by ``preadv``, another
(Linux 6.18) 5.7 µs a row against 1.6 (``benchmarks/README.md``). So a file times both
on its first :data:`CALIBRATION_READS` reads of at least :data:`CALIBRATION_ROWS` rows
and keeps the faster; the rows read are the same either way.
"""

from __future__ import annotations

import os
import threading
import time
import weakref
from pathlib import Path
from typing import Any, Literal

import numpy as np

from metabundle.mapped import MappedFile

VECTORS_FILE = "ann/vectors.npy"
"""Where a release holds its exact vectors (row ``i`` the vector of docno ``i``)."""
UNRELATED_PAIRS = 4000
UNRELATED_SHARE = 0.001
UNRELATED_SEED = 20261201
CALIBRATION_READS = 16
"""Reads that a :class:`VectorFile` times, half by each reader, before it keeps one."""
CALIBRATION_ROWS = 64
"""The fewest rows a read must ask for to be timed (a few rows time the call, not the reads)."""
GAP_BYTES = 4096
"""``preadv`` reads rows this close together, and the rows between them, in one read."""
Reader = Literal["map", "pread"]


def load_vectors(path: Path) -> np.ndarray:
    """Memory-map a ``.npy`` written by :func:`~metabundle.index.ann.save_vectors`
    (read-only)."""
    matrix = np.load(Path(path), mmap_mode="r", allow_pickle=False)
    if matrix.ndim != 2:
        raise ValueError(f"{path} holds shape {matrix.shape}, not (n, d)")
    return matrix


def _layout(path: Path) -> tuple[tuple[int, int], np.dtype, int]:
    """Shape, dtype and data offset of the row-major 2-D ``.npy`` at ``path``."""
    header = load_vectors(path)
    if not header.flags.c_contiguous:
        raise ValueError(f"{path} holds a Fortran-ordered matrix, not rows")
    return (int(header.shape[0]), int(header.shape[1])), header.dtype, int(header.offset)


def mapped_rows(path: Path, *, writable: bool = False) -> tuple[MappedFile, np.ndarray]:
    """The map of the 2-D ``.npy`` at ``path`` and its matrix, a view of the map (read
    in place, or written when ``writable``)."""
    return _mapped(path, _layout(path), writable=writable)


def _mapped(
    path: Path, layout: tuple[tuple[int, int], np.dtype, int], *, writable: bool
) -> tuple[MappedFile, np.ndarray]:
    """:func:`mapped_rows` of a file whose :func:`_layout` is known."""
    shape, dtype, offset = layout
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
    whole matrix. Every read is a copy, after which none of the file stays resident.
    ``reader`` fixes how rows are read (``"map"`` or ``"pread"``); by default the file
    times both and keeps the faster (see the module's docstring)."""

    def __init__(self, path: Path, *, reader: Reader | None = None) -> None:
        self.path = Path(path)
        self._map: MappedFile | None
        layout = _layout(self.path)
        self._map, self._rows = _mapped(self.path, layout, writable=False)
        self.shape: tuple[int, int] = layout[0]
        self.dtype = layout[1]
        self._offset = layout[2]
        self._row_bytes = self.shape[1] * self.dtype.itemsize
        self._fd: int | None = None
        if hasattr(os, "preadv"):
            self._fd = os.open(self.path, os.O_RDONLY)
            # the descriptor goes with the object even when nobody calls close()
            self._closer = weakref.finalize(self, os.close, self._fd)
        if reader == "pread" and self._fd is None:
            raise ValueError("preadv is not available on this system; read by map")
        self.reader: Reader | None = reader or (None if self._fd is not None else "map")
        self._timed: dict[Reader, list[float]] = {"map": [], "pread": []}  # seconds a row
        self._timing = threading.Lock()

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
        reader = self.reader or self._next_trial()
        started = time.perf_counter()
        taken = self._gathered(flat) if reader == "map" else self._read(flat)
        if self.reader is None and flat.size >= CALIBRATION_ROWS:
            self._note(reader, time.perf_counter() - started, flat.size)
        return taken.reshape(*keys.shape, self.shape[1])

    def _next_trial(self) -> Reader:
        with self._timing:
            return "map" if len(self._timed["map"]) <= len(self._timed["pread"]) else "pread"

    def _note(self, reader: Reader, seconds: float, rows: int) -> None:
        """Count one timed read; after :data:`CALIBRATION_READS`, keep the reader with
        the lower median time a row (a median, so that a first read from a cold cache
        does not decide)."""
        with self._timing:
            self._timed[reader].append(seconds / rows)
            if self.reader is None and all(
                len(t) >= CALIBRATION_READS // 2 for t in self._timed.values()
            ):
                per_row = {name: float(np.median(t)) for name, t in self._timed.items()}
                self.reader = min(per_row, key=lambda name: (per_row[name], name))

    def _gathered(self, keys: np.ndarray) -> np.ndarray:
        """Rows ``keys`` gathered from the map, whose pages are then let go."""
        assert self._map is not None
        taken = self._rows[keys]  # a copy: numpy gathers into new memory
        self._map.let_go()
        return taken

    def _read(self, keys: np.ndarray) -> np.ndarray:
        """Rows ``keys`` (any order, repeats allowed) with one ``preadv`` per run of
        rows less than :data:`GAP_BYTES` apart."""
        assert self._fd is not None
        width, row = self.shape[1], self._row_bytes
        if not keys.size:
            return np.empty((0, width), self.dtype)
        order = np.argsort(keys, kind="stable")
        ordered = keys[order]
        breaks = np.flatnonzero(np.diff(ordered) > max(1, GAP_BYTES // row)) + 1
        firsts = np.concatenate(([0], breaks))
        lasts = np.concatenate((breaks, [ordered.size])) - 1
        starts = ordered[firsts]
        lengths = ordered[lasts] - starts + 1
        bases = np.concatenate(([0], np.cumsum(lengths)[:-1]))
        buffer = np.empty((int(lengths.sum()), width), self.dtype)
        view = memoryview(buffer).cast("B")
        spans = (self._offset + starts * row, lengths * row, bases * row)
        for at, size, into in zip(*(span.tolist() for span in spans), strict=True):
            if os.preadv(self._fd, [view[into : into + size]], at) != size:
                raise OSError(f"{self.path} ended before byte {at + size}")
        run = np.repeat(np.arange(firsts.size), lasts - firsts + 1)
        out = np.empty((keys.size, width), self.dtype)
        out[order] = buffer[bases[run] + ordered - starts[run]]
        return out

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        whole = self[np.arange(self.shape[0])]
        return whole if dtype is None else whole.astype(dtype)

    def close(self) -> None:
        """Let the map and the descriptor go (reads after this are refused)."""
        if self._map is not None:
            del self._rows  # the view holds the map open
            self._map.close()
            self._map = None
        if self._fd is not None:
            self._closer()
            self._fd = None


Vectors = np.ndarray | VectorFile
"""Exact vectors: a matrix, or a release's file read by rows (serving, and the build's
steps that read it)."""
