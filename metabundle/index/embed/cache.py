"""Content-addressed embedding cache on disk, so a rebuild embeds only changed text.

Layout: one folder per model under the cache directory, named from the model id
(readable slug + hash), holding append-only Parquet part files::

    <directory>/<slug>-<sha256(model_id)[:12]>/part-<time_ns>-<random>.parquet

Each part has ``key`` (fixed_size_binary(32): sha256 of ``model_id + "\\x00" +
normalize_text(text)``) and ``vector`` (fixed_size_list<float32>[dimension]); the schema
metadata carries the model id and dimension. Parts are written to a temporary name and
renamed into place, so readers never see half a file and concurrent writers never
collide. A key found in several parts (two builds embedding the same new text at once)
names the same text and model, so the copy in the first part by name is used.

Nothing holds the whole cache: membership reads keys only
(:meth:`EmbeddingCache.contains`), and vectors are read part by part, a batch of rows
at a time, each requested key matched to its first cached row by sorting the keys
(:meth:`EmbeddingCache.iter_vectors`), so that ten million vectors can be gathered into
a memory-mapped file on a small machine. :meth:`EmbeddingCache.compact` merges a
model's parts into one.

Membership is looked up in a key index, ``key-index.parquet`` in the model's folder:
the sorted distinct keys of the parts its metadata names. The parts it does not name
are read one by one, and once there are ``index_after_parts`` of them their keys are
merged into a new index (written to a temporary name and renamed, like a part). So a
build that adds a thousand parts, a shard at a time, reads a bounded number of parts
per shard instead of all of them. An index naming a part that is gone (after
:meth:`EmbeddingCache.compact`) is not used.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import NamedTuple, TypedDict

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from metabundle.index.embed.base import Embedder, ProgressCallback, normalize_text

__all__ = [
    "CHUNK_TEXTS",
    "CacheStats",
    "EmbeddingCache",
    "cache_keys",
    "embed_into",
    "embed_with_cache",
    "fill_cache",
]

KEY_BYTES = 32
_PART_GLOB = "part-*.parquet"
_KEY_INDEX = "key-index.parquet"
#: Parts not in the key index that a lookup reads before it merges them into the index.
INDEX_AFTER_PARTS = 64
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


#: Texts normalized and hashed at a time by :func:`text_keys`.
KEY_BLOCK_TEXTS = 65_536


def text_keys(model_id: str, texts: Sequence[str]) -> np.ndarray:
    """:func:`cache_keys` of every text, normalized a block of texts at a time: only the
    keys (32 bytes a text) are kept, not a normalized copy of every text."""
    blocks = [
        cache_keys(model_id, [normalize_text(t) for t in texts[start : start + KEY_BLOCK_TEXTS]])
        for start in range(0, len(texts), KEY_BLOCK_TEXTS)
    ]
    return np.concatenate(blocks) if blocks else np.empty(0, f"S{KEY_BYTES}")


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


class EmbeddingCache:
    """Embeddings by content key, persisted as Parquet parts under ``directory``."""

    def __init__(
        self, directory: Path | str, index_after_parts: int | None = INDEX_AFTER_PARTS
    ) -> None:
        self.directory = Path(directory)
        #: None: never write a key index (every lookup reads every part's keys).
        self.index_after_parts = index_after_parts

    def model_dir(self, model_id: str) -> Path:
        """The folder holding ``model_id``'s parts."""
        return self.directory / _model_dir_name(model_id)

    def contains(self, model_id: str, keys: np.ndarray) -> np.ndarray:
        """A bool mask: which of the ``S32`` ``keys`` are cached for ``model_id``.

        Reads only keys (32 bytes an entry): the key index and the parts it does not
        name, so a process that fills the cache for one shard never holds the other
        shards' vectors.
        """
        if len(keys) == 0:
            return np.zeros(0, bool)
        indexed, loose = self._known_keys(model_id)
        found = _find_sorted(indexed, keys)[1]
        if len(loose):
            in_loose = pc.is_in(_key_array(keys), value_set=_key_array(loose))
            found |= in_loose.to_numpy(zero_copy_only=False)
        return found

    def iter_vectors(
        self, model_id: str, keys: np.ndarray, batch_rows: int = 65_536
    ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """The cached vector of each of the distinct ``S32`` ``keys``, read part by part
        (a batch of rows at a time, never the whole cache): ``(positions in keys,
        vectors)`` pairs covering every key once. A key cached in several parts takes
        its copy in the first part by name. A key not cached is a ``KeyError``."""
        parts = self._parts(model_id)
        part_keys = [_part_keys(part) for part in parts]
        known = np.concatenate(part_keys) if parts else np.empty(0, f"S{KEY_BYTES}")
        offsets = np.cumsum([0, *(len(k) for k in part_keys)])
        order = np.argsort(known, kind="stable")  # equal keys keep the order of parts
        at, found = _find_sorted(known[order], keys)
        if not found.all():
            raise KeyError(f"{int((~found).sum()):,} texts are not in the cache of {model_id!r}")
        chosen = order[at]  # the first cached row of every key
        by_row = np.argsort(chosen, kind="stable")
        rows = chosen[by_row]
        for part, begin, end in zip(parts, offsets[:-1], offsets[1:], strict=True):
            low, high = np.searchsorted(rows, [begin, end])
            if low == high:
                continue
            file = pq.ParquetFile(part)
            dimension = _part_dimension(file.schema_arrow, model_id, part)
            start = begin
            for batch in file.iter_batches(batch_size=batch_rows, columns=["vector"]):
                stop = start + batch.num_rows
                first, last = np.searchsorted(rows, [start, stop])
                if first < last:
                    flat = batch.column(0).flatten().to_numpy(zero_copy_only=False)
                    vectors = flat.astype(np.float32, copy=False).reshape(-1, dimension)
                    yield by_row[first:last], vectors[rows[first:last] - start]
                start = stop

    def add(self, model_id: str, keys: np.ndarray, vectors: np.ndarray) -> Path | None:
        """Persist ``vectors`` under ``keys`` as a new part; returns its path (None if empty)."""
        if len(keys) != len(vectors):
            raise ValueError("keys and vectors differ in length")
        if len(keys) == 0:
            return None
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        parts = self._parts(model_id)
        if parts:
            dimension = _part_dimension(pq.read_schema(parts[0]), model_id, parts[0])
            if dimension != vectors.shape[1]:
                raise ValueError(
                    f"cache for {model_id!r} holds {dimension}-d vectors, not {vectors.shape[1]}-d"
                )
        return self._write_part(model_id, keys, vectors)

    def count(self, model_id: str) -> int:
        """Number of cached entries for ``model_id`` (duplicates across parts included)."""
        return sum(pq.ParquetFile(part).metadata.num_rows for part in self._parts(model_id))

    def compact(self, model_id: str) -> None:
        """Rewrite ``model_id``'s parts as one deduplicated part, then delete the old ones
        (this one holds the model's whole cache in memory)."""
        parts = self._parts(model_id)
        if len(parts) <= 1:
            return
        keys = _sorted_distinct(self._cached_keys(model_id))
        vectors = np.empty((len(keys), 0), np.float32)
        for positions, batch in self.iter_vectors(model_id, keys):
            if vectors.shape[1] == 0:
                vectors = np.empty((len(keys), batch.shape[1]), np.float32)
            vectors[positions] = batch
        self._write_part(model_id, keys, vectors)
        (self.model_dir(model_id) / _KEY_INDEX).unlink(missing_ok=True)
        for part in parts:
            part.unlink(missing_ok=True)

    def _parts(self, model_id: str) -> list[Path]:
        folder = self.model_dir(model_id)
        return sorted(folder.glob(_PART_GLOB)) if folder.is_dir() else []

    def _cached_keys(self, model_id: str) -> np.ndarray:
        return _keys_of(self._parts(model_id))

    def _known_keys(self, model_id: str) -> tuple[np.ndarray, np.ndarray]:
        """``model_id``'s cached keys: the key index's (sorted, distinct) and those of
        the parts it does not name. Once there are ``index_after_parts`` such parts,
        their keys are merged into a new index and the second array is empty."""
        parts = self._parts(model_id)
        indexed, covered = self._read_key_index(model_id, {part.name for part in parts})
        loose_parts = [part for part in parts if part.name not in covered]
        loose = _keys_of(loose_parts)
        if self.index_after_parts is None or len(loose_parts) < self.index_after_parts:
            return indexed, loose
        indexed = _merge_sorted(indexed, _sorted_distinct(loose))
        names = sorted(covered | {part.name for part in loose_parts})
        self._write_atomically(
            model_id,
            _KEY_INDEX,
            pa.table({"key": _key_array(indexed)}),
            {"metabundle.model_id": model_id, "metabundle.parts": json.dumps(names)},
        )
        return indexed, np.empty(0, f"S{KEY_BYTES}")

    def _read_key_index(self, model_id: str, parts: set[str]) -> tuple[np.ndarray, set[str]]:
        """The key index's sorted keys and the parts it covers; nothing when there is
        none, or when it names a part that is no longer there."""
        path = self.model_dir(model_id) / _KEY_INDEX
        try:
            table = pq.read_table(path, columns=["key"])
        except FileNotFoundError:
            return np.empty(0, f"S{KEY_BYTES}"), set()
        metadata = table.schema.metadata or {}
        if metadata.get(b"metabundle.model_id", b"").decode() != model_id:
            raise ValueError(f"{path} belongs to another model than {model_id!r}")
        covered = set(json.loads(metadata[b"metabundle.parts"]))
        if not covered <= parts:
            return np.empty(0, f"S{KEY_BYTES}"), set()
        return _keys_to_numpy(table.column("key").combine_chunks()), covered

    def _write_part(self, model_id: str, keys: np.ndarray, vectors: np.ndarray) -> Path:
        name = f"part-{time.time_ns():020d}-{uuid.uuid4().hex[:12]}.parquet"
        return self._write_atomically(
            model_id,
            name,
            pa.table({"key": _key_array(keys), "vector": _vector_array(vectors)}),
            {"metabundle.model_id": model_id, "metabundle.dimension": str(vectors.shape[1])},
        )

    def _write_atomically(
        self, model_id: str, name: str, table: pa.Table, metadata: dict[str, str]
    ) -> Path:
        """Write ``table`` as ``name`` in the model's folder: to a temporary name, then
        renamed into place, so a reader never sees half a file."""
        folder = self.model_dir(model_id)
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f".{name}.{uuid.uuid4().hex[:12]}.tmp"
        # uncompressed: float32 vectors and sha256 keys barely compress, and reading
        # compressed pages costs about 50% more time
        pq.write_table(
            table.replace_schema_metadata(metadata), tmp, compression="none", use_dictionary=False
        )
        tmp.replace(folder / name)
        return folder / name


def _find_sorted(sorted_keys: np.ndarray, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where each of ``keys`` is in ``sorted_keys`` (its first copy) and whether it is."""
    at = np.searchsorted(sorted_keys, keys)
    found = at < len(sorted_keys)
    found[found] = sorted_keys[at[found]] == keys[found]
    return at, found


def _sorted_distinct(keys: np.ndarray) -> np.ndarray:
    """``keys`` sorted, each once (numpy's ``unique`` hashes byte strings first, which
    takes four times as long as the sort)."""
    ordered = np.sort(keys)
    return ordered[np.concatenate(([True], ordered[1:] != ordered[:-1]))] if len(keys) else ordered


def _merge_sorted(sorted_keys: np.ndarray, new_keys: np.ndarray) -> np.ndarray:
    """Two arrays of sorted distinct keys as one (no sort of the first one)."""
    new_keys = new_keys[~_find_sorted(sorted_keys, new_keys)[1]]
    return np.insert(sorted_keys, np.searchsorted(sorted_keys, new_keys), new_keys)


def _keys_of(parts: list[Path]) -> np.ndarray:
    """The keys of ``parts``, one after another, as an ``S32`` array."""
    if not parts:
        return np.empty(0, f"S{KEY_BYTES}")
    return np.concatenate([_part_keys(part) for part in parts])


def _part_keys(part: Path) -> np.ndarray:
    """The ``key`` column of a cache part as an ``S32`` array."""
    column = pq.read_table(part, columns=["key"]).column("key").combine_chunks()
    return _keys_to_numpy(column.cast(pa.binary(KEY_BYTES)))


def _part_dimension(schema: pa.Schema, model_id: str, path: Path) -> int:
    """The vector dimension of a part whose schema says it belongs to ``model_id``."""
    stored = (schema.metadata or {}).get(b"metabundle.model_id", b"").decode()
    if stored != model_id:
        raise ValueError(f"{path} belongs to model {stored!r}, not {model_id!r}")
    vector_type = schema.field("vector").type
    if not pa.types.is_fixed_size_list(vector_type):
        raise ValueError(f"{path}: vector column is {vector_type}, not a fixed_size_list")
    return vector_type.list_size


#: Distinct texts embedded between two cache writes: what an interrupted run can lose.
CHUNK_TEXTS = 8192


class _Filled(NamedTuple):
    """What :func:`_fill` did, and the distinct keys (with each text's) it covered."""

    stats: CacheStats
    unique_keys: np.ndarray
    inverse: np.ndarray


def _fill(
    embedder: Embedder,
    texts: Sequence[str],
    cache: EmbeddingCache,
    *,
    progress: ProgressCallback | None,
    on_start: Callable[[int], None] | None,
    chunk_texts: int | None,
) -> _Filled:
    """Embed the distinct texts ``cache`` lacks, persisting every ``chunk_texts`` of them
    (default :data:`CHUNK_TEXTS`)."""
    model_id = embedder.model_id
    keys = text_keys(model_id, texts)
    unique_keys, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    del keys
    missing = np.flatnonzero(~cache.contains(model_id, unique_keys))
    if on_start is not None:
        on_start(len(missing))
    step = chunk_texts or CHUNK_TEXTS
    for start in range(0, len(missing), step):
        chunk = missing[start : start + step]
        vectors = embedder.embed(
            [normalize_text(texts[first[i]]) for i in chunk], progress=progress
        )
        cache.add(model_id, unique_keys[chunk], vectors)
    stats = CacheStats(
        requested=len(texts),
        unique=len(unique_keys),
        cached=len(unique_keys) - len(missing),
        embedded=len(missing),
    )
    return _Filled(stats, unique_keys, inverse.reshape(-1))


def fill_cache(
    embedder: Embedder,
    texts: Sequence[str],
    cache: EmbeddingCache,
    *,
    progress: ProgressCallback | None = None,
    on_start: Callable[[int], None] | None = None,
    chunk_texts: int | None = None,
) -> CacheStats:
    """Make sure ``cache`` holds a vector for every distinct text of ``texts``.

    Distinct texts not yet cached are embedded ``chunk_texts`` at a time and each
    chunk is written as its own part, so a run that is killed keeps what it finished
    and the next run embeds only the rest. ``on_start`` is told how many distinct texts
    will be embedded, before the first is; ``progress`` receives the embedder's
    increments, i.e. counts only texts actually embedded.
    """
    filled = _fill(
        embedder, texts, cache, progress=progress, on_start=on_start, chunk_texts=chunk_texts
    )
    return filled.stats


def embed_into(
    embedder: Embedder,
    texts: Sequence[str],
    cache: EmbeddingCache,
    out: np.ndarray,
    *,
    progress: ProgressCallback | None = None,
    on_start: Callable[[int], None] | None = None,
    chunk_texts: int | None = None,
    after_part: Callable[[], None] | None = None,
) -> CacheStats:
    """Write the vector of every text into row ``i`` of ``out`` (``(len(texts), d)``,
    e.g. a memory-mapped ``.npy``), embedding only distinct texts not yet cached (as
    :func:`fill_cache` does, chunk by chunk), then reading the cache part by part, so
    neither the cache nor the vectors need fit in memory; ``after_part`` is called
    after each part's rows are written (to let a map's pages go)."""
    filled = _fill(
        embedder, texts, cache, progress=progress, on_start=on_start, chunk_texts=chunk_texts
    )
    documents = np.argsort(filled.inverse, kind="stable")  # the texts of each distinct key
    bounds = np.searchsorted(filled.inverse[documents], np.arange(len(filled.unique_keys) + 1))
    for positions, vectors in cache.iter_vectors(embedder.model_id, filled.unique_keys):
        counts = bounds[positions + 1] - bounds[positions]
        starts = np.repeat(bounds[positions], counts)
        within = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
        out[documents[starts + within]] = np.repeat(vectors, counts, axis=0)
        if after_part is not None:
            after_part()
    return filled.stats


def embed_with_cache(
    embedder: Embedder,
    texts: Sequence[str],
    cache: EmbeddingCache,
    *,
    progress: ProgressCallback | None = None,
    on_start: Callable[[int], None] | None = None,
    chunk_texts: int | None = None,
) -> tuple[np.ndarray, CacheStats]:
    """Vectors for ``texts`` (input order) in memory, as :func:`embed_into` writes them."""
    vectors = np.empty((len(texts), int(embedder.dimension)), np.float32)
    stats = embed_into(
        embedder,
        texts,
        cache,
        vectors,
        progress=progress,
        on_start=on_start,
        chunk_texts=chunk_texts,
    )
    return vectors, stats
