"""Content-addressed embedding cache on disk, so a rebuild embeds only changed text.

Layout: one folder per model under the cache directory, named from the model id
(readable slug + hash), holding append-only Parquet part files::

    <directory>/<slug>-<sha256(model_id)[:12]>/part-<time_ns>-<random>.parquet

Each part has ``key`` (fixed_size_binary(32): sha256 of ``model_id + "\\x00" +
normalize_text(text)``) and ``vector`` (fixed_size_list<float32>[dimension]); the schema
metadata carries the model id and dimension. Parts are written to a temporary name and
renamed into place, so readers never see half a file and concurrent writers never
collide. A key found in several parts (two builds embedding the same new text at once)
names the same text and model, so whichever copy loaded first is used.

Lookups are vectorized: the parts load once with pyarrow into one key array and one
float32 matrix, and ``pyarrow.compute.index_in`` (a hash join) maps requested keys to
rows. Parts written by other processes after loading are picked up on the next lookup.
:meth:`EmbeddingCache.compact` merges a model's parts into one.
"""

from __future__ import annotations

import hashlib
import re
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypedDict

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from metabundle.index.embed.base import Embedder, ProgressCallback, normalize_text

__all__ = ["CacheStats", "EmbeddingCache", "cache_keys", "embed_with_cache"]

KEY_BYTES = 32
_PART_GLOB = "part-*.parquet"
_SLUG = re.compile(r"[^A-Za-z0-9._-]+")


class CacheStats(TypedDict):
    """What :func:`embed_with_cache` did: texts asked for, distinct, found, computed."""

    requested: int
    unique: int
    cached: int
    embedded: int


def cache_keys(model_id: str, normalized_texts: Sequence[str]) -> np.ndarray:
    """sha256(model_id + NUL + text) per (already normalized) text, as an ``S32`` array."""
    prefix = hashlib.sha256(model_id.encode() + b"\x00")
    digests = []
    for text in normalized_texts:
        digest = prefix.copy()
        digest.update(text.encode("utf-8", "surrogatepass"))
        digests.append(digest.digest())
    return np.frombuffer(b"".join(digests), dtype=f"S{KEY_BYTES}")


def _key_array(keys: np.ndarray) -> pa.FixedSizeBinaryArray:
    """An ``S32`` numpy array as a pyarrow fixed_size_binary(32) array (no per-row work)."""
    raw = np.ascontiguousarray(keys, dtype=f"S{KEY_BYTES}")
    return pa.FixedSizeBinaryArray.from_buffers(
        pa.binary(KEY_BYTES), len(raw), [None, pa.py_buffer(raw.tobytes())]
    )


def _keys_to_numpy(keys: pa.Array) -> np.ndarray:
    """A fixed_size_binary(32) pyarrow array (no nulls) as an ``S32`` numpy array."""
    data = keys.buffers()[1]
    return np.frombuffer(
        data, dtype=f"S{KEY_BYTES}", count=len(keys), offset=keys.offset * KEY_BYTES
    )


def _vector_array(vectors: np.ndarray) -> pa.FixedSizeListArray:
    flat = pa.array(np.ascontiguousarray(vectors, dtype=np.float32).reshape(-1))
    return pa.FixedSizeListArray.from_arrays(flat, vectors.shape[1])


def _model_dir_name(model_id: str) -> str:
    slug = _SLUG.sub("_", model_id).strip("_")[:80] or "model"
    return f"{slug}-{hashlib.sha256(model_id.encode()).hexdigest()[:12]}"


@dataclass
class _ModelState:
    """Everything loaded so far for one model."""

    dimension: int | None = None
    parts: set[str] = field(default_factory=set)
    keys: pa.Array = field(default_factory=lambda: pa.array([], pa.binary(KEY_BYTES)))
    vectors: np.ndarray = field(default_factory=lambda: np.empty((0, 0), np.float32))


class EmbeddingCache:
    """Embeddings by content key, persisted as Parquet parts under ``directory``."""

    def __init__(self, directory: Path | str) -> None:
        self.directory = Path(directory)
        self._states: dict[str, _ModelState] = {}
        self._lock = threading.Lock()

    def model_dir(self, model_id: str) -> Path:
        """The folder holding ``model_id``'s parts."""
        return self.directory / _model_dir_name(model_id)

    def lookup(self, model_id: str, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For ``S32`` ``keys``: a bool mask of hits and the hits' vectors (in key order)."""
        with self._lock:
            state = self._refresh(model_id)
            if len(keys) == 0 or len(state.keys) == 0:
                return np.zeros(len(keys), bool), np.empty((0, state.dimension or 0), np.float32)
            rows = pc.fill_null(pc.index_in(_key_array(keys), value_set=state.keys), -1)
            rows_np = rows.to_numpy()
            found = rows_np >= 0
            return found, state.vectors[rows_np[found]]

    def add(self, model_id: str, keys: np.ndarray, vectors: np.ndarray) -> Path | None:
        """Persist ``vectors`` under ``keys`` as a new part; returns its path (None if empty)."""
        if len(keys) != len(vectors):
            raise ValueError("keys and vectors differ in length")
        if len(keys) == 0:
            return None
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        with self._lock:
            state = self._refresh(model_id)
            if state.dimension is not None and state.dimension != vectors.shape[1]:
                raise ValueError(
                    f"cache for {model_id!r} holds {state.dimension}-d vectors, "
                    f"not {vectors.shape[1]}-d"
                )
            path = self._write_part(model_id, keys, vectors)
            self._append(state, [path.name], [(_key_array(keys), vectors)])
            return path

    def count(self, model_id: str) -> int:
        """Number of cached entries for ``model_id`` (duplicates across parts included)."""
        with self._lock:
            return len(self._refresh(model_id).keys)

    def compact(self, model_id: str) -> None:
        """Rewrite ``model_id``'s parts as one deduplicated part, then delete the old ones."""
        with self._lock:
            state = self._refresh(model_id)
            if len(state.parts) <= 1:
                return
            keys = _keys_to_numpy(state.keys)
            _, first = np.unique(keys, return_index=True)
            first.sort()
            old = sorted(state.parts)
            path = self._write_part(model_id, keys[first], state.vectors[first])
            for name in old:
                (path.parent / name).unlink(missing_ok=True)
            self._states.pop(model_id, None)

    def _write_part(self, model_id: str, keys: np.ndarray, vectors: np.ndarray) -> Path:
        folder = self.model_dir(model_id)
        folder.mkdir(parents=True, exist_ok=True)
        table = pa.table({"key": _key_array(keys), "vector": _vector_array(vectors)})
        table = table.replace_schema_metadata(
            {"metabundle.model_id": model_id, "metabundle.dimension": str(vectors.shape[1])}
        )
        name = f"part-{time.time_ns():020d}-{uuid.uuid4().hex[:12]}.parquet"
        tmp = folder / f".{name}.tmp"
        # uncompressed: float32 vectors and sha256 keys barely compress, and reading
        # compressed pages costs about 50% more time
        pq.write_table(table, tmp, compression="none", use_dictionary=False)
        tmp.replace(folder / name)
        return folder / name

    def _refresh(self, model_id: str) -> _ModelState:
        """Load any part of ``model_id`` not loaded yet (caller holds the lock)."""
        state = self._states.setdefault(model_id, _ModelState())
        folder = self.model_dir(model_id)
        if not folder.is_dir():
            return state
        new = [p for p in sorted(folder.glob(_PART_GLOB)) if p.name not in state.parts]
        if new:
            decoded = [
                self._decode(pq.read_table(p, columns=["key", "vector"]), model_id, p) for p in new
            ]
            self._append(state, [p.name for p in new], decoded)
        return state

    @staticmethod
    def _decode(table: pa.Table, model_id: str, path: Path) -> tuple[pa.Array, np.ndarray]:
        meta = table.schema.metadata or {}
        stored = meta.get(b"metabundle.model_id", b"").decode()
        if stored != model_id:
            raise ValueError(f"{path} belongs to model {stored!r}, not {model_id!r}")
        vector_type = table.schema.field("vector").type
        if not pa.types.is_fixed_size_list(vector_type):
            raise ValueError(f"{path}: vector column is {vector_type}, not a fixed_size_list")
        column = table.column("vector").combine_chunks()
        flat = column.flatten().to_numpy(zero_copy_only=False)
        vectors = flat.astype(np.float32, copy=False).reshape(-1, vector_type.list_size)
        return table.column("key").combine_chunks(), vectors

    @staticmethod
    def _append(
        state: _ModelState, names: list[str], parts: list[tuple[pa.Array, np.ndarray]]
    ) -> None:
        """Add decoded parts to ``state`` with one concatenation (not one per part)."""
        dimension = state.dimension if state.dimension is not None else parts[0][1].shape[1]
        for name, (_, vectors) in zip(names, parts, strict=True):
            if vectors.shape[1] != dimension:
                raise ValueError(f"part {name} has {vectors.shape[1]}-d vectors, not {dimension}")
        if state.dimension is None:
            state.dimension = dimension
            state.vectors = np.empty((0, dimension), np.float32)
        state.keys = pa.concat_arrays(
            [state.keys, *(keys.cast(pa.binary(KEY_BYTES)) for keys, _ in parts)]
        )
        state.vectors = np.concatenate([state.vectors, *(vectors for _, vectors in parts)])
        state.parts.update(names)


#: Texts embedded between two cache parts: what an interruption can lose at most.
CHECKPOINT_TEXTS = 50_000


def embed_with_cache(
    embedder: Embedder,
    texts: Sequence[str],
    cache: EmbeddingCache,
    *,
    progress: ProgressCallback | None = None,
    on_start: Callable[[int], None] | None = None,
) -> tuple[np.ndarray, CacheStats]:
    """Vectors for ``texts`` (input order), embedding only distinct texts not yet cached.

    New vectors are appended to ``cache`` one part per :data:`CHECKPOINT_TEXTS` texts,
    so an interrupted run keeps what it embedded and the next run resumes after it.
    ``on_start`` is told how many distinct texts will be embedded, before the first is;
    ``progress`` receives the embedder's increments, i.e. counts only texts actually
    embedded.
    """
    model_id = embedder.model_id
    normalized = [normalize_text(t) for t in texts]
    keys = cache_keys(model_id, normalized)
    unique_keys, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    found, cached_vectors = cache.lookup(model_id, unique_keys)
    missing = np.flatnonzero(~found)
    if on_start is not None:
        on_start(len(missing))
    new_vectors = None
    if len(missing):
        chunks = []
        for start in range(0, len(missing), CHECKPOINT_TEXTS):
            chunk = missing[start : start + CHECKPOINT_TEXTS]
            vectors = embedder.embed([normalized[first[i]] for i in chunk], progress=progress)
            cache.add(model_id, unique_keys[chunk], vectors)
            chunks.append(vectors)
        new_vectors = np.concatenate(chunks)
    dimension = _dimension_of(embedder, cached_vectors, new_vectors, len(unique_keys))
    unique_vectors = np.empty((len(unique_keys), dimension), dtype=np.float32)
    if found.any():
        unique_vectors[found] = cached_vectors
    if new_vectors is not None:
        unique_vectors[missing] = new_vectors
    stats = CacheStats(
        requested=len(texts),
        unique=len(unique_keys),
        cached=int(found.sum()),
        embedded=len(missing),
    )
    return unique_vectors[inverse.reshape(-1)], stats


def _dimension_of(
    embedder: Embedder, cached: np.ndarray, new: np.ndarray | None, unique: int
) -> int:
    if new is not None:
        return int(new.shape[1])
    if unique:  # every text was cached
        return int(cached.shape[1])
    return int(embedder.dimension)
