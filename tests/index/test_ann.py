"""ANN indexes on real usearch and hnswlib files; both backends pass the same tests."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from metabundle.index import ann
from metabundle.index.ann import (
    AUTO_MIN_RECALL,
    BACKENDS,
    BITSCAN_POOL,
    AnnIndex,
    StoredUnitRows,
    as_unit_rows,
    build_ann_index,
    build_source_index,
    filtered_search,
    gather_unit_rows,
    load_vectors,
    open_ann_index,
    read_sidecar,
    save_vectors,
    self_recall,
    tenth_best,
    unit_rows,
)
from metabundle.index.steps import _graph_progress
from metabundle.index.vector_file import VectorFile

N, DIM, K = 5000, 64, 10


def clustered_unit_vectors(n: int, dim: int, seed: int, spread: float = 0.8) -> np.ndarray:
    """Gaussian clusters around 40 centres: closer to text embeddings than pure noise
    (the smaller ``spread``, the more crowded)."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((40, dim))
    points = centres[rng.integers(0, 40, n)] + spread * rng.standard_normal((n, dim))
    points /= np.linalg.norm(points, axis=1, keepdims=True)
    return points.astype(np.float32)


def brute_force(vectors: np.ndarray, query: np.ndarray, k: int, rows=None) -> np.ndarray:
    rows = np.arange(len(vectors)) if rows is None else np.sort(rows)
    scores = vectors[rows].astype(np.float32) @ (query / np.linalg.norm(query))
    order = np.lexsort((rows, -scores))[:k]
    return rows[order]


@pytest.fixture(scope="module")
def sample() -> np.ndarray:
    return clustered_unit_vectors(N + 100, DIM, seed=7)


@pytest.fixture(scope="module")
def data(sample: np.ndarray) -> np.ndarray:
    return sample[:N]


@pytest.fixture(scope="module")
def queries(sample: np.ndarray) -> np.ndarray:
    """Fresh draws from the same distribution, not stored in the index."""
    return sample[N:]


@pytest.fixture(scope="module")
def vectors_file(tmp_path_factory: pytest.TempPathFactory, data: np.ndarray) -> np.ndarray:
    path = tmp_path_factory.mktemp("vectors") / "vectors.npy"
    save_vectors(data, path)
    return load_vectors(path)


@pytest.fixture(scope="module", params=BACKENDS)
def built(request, tmp_path_factory: pytest.TempPathFactory, data: np.ndarray) -> Path:
    path = tmp_path_factory.mktemp(request.param) / "docs.index"
    build_ann_index(data, np.arange(N, dtype=np.int64), path, backend=request.param)
    return path


@pytest.fixture(scope="module")
def index(built: Path) -> AnnIndex:
    return open_ann_index(built)


def test_sidecar_describes_the_index(built: Path, index: AnnIndex, data: np.ndarray) -> None:
    info = json.loads(built.with_suffix(".json").read_text())
    assert info["backend"] == index.backend == built.parent.name.rstrip("0123456789")
    assert (info["dimension"], info["count"]) == (DIM, N)
    assert info["dtype"] == {"usearch": "f16", "hnswlib": "f32", "bitscan": "b1"}[index.backend]
    if index.backend == "bitscan":
        assert info["metric"] == "hamming" and info["params"] == {"rescore_pool": BITSCAN_POOL}
        assert np.allclose(info["mean"], data.mean(axis=0), atol=1e-6)
    else:
        assert info["metric"] in ("cos", "ip")
        assert info["params"]["connectivity"] == 16
        assert info["params"]["expansion_search"] == 128
    assert len(index) == N and index.dimension == DIM
    assert sorted(p.name for p in built.parent.iterdir()) == ["docs.index", "docs.json"]


def test_query_equal_to_a_stored_vector_is_top_1(index: AnnIndex, data: np.ndarray) -> None:
    for key in (0, 17, 2500, N - 1):
        keys, scores = index.search(data[key], K)
        assert keys.dtype == np.int64 and scores.dtype == np.float32
        assert keys[0] == key
        assert scores[0] == pytest.approx(1.0, abs=2e-3)
        assert (np.diff(scores) <= 0).all()


def test_recall_at_10_against_brute_force(
    index: AnnIndex, data: np.ndarray, queries: np.ndarray, vectors_file: np.ndarray
) -> None:
    """A graph's own search, and what every backend answers through the production path
    (its candidates re-scored exactly: a bitscan index's Hamming order alone is coarse)."""
    raw = hits = 0
    for query in queries:
        truth = set(brute_force(data, query, K).tolist())
        raw += len(set(index.search(query, K)[0].tolist()) & truth)
        hits += len(set(filtered_search(index, vectors_file, query, K, None)[0].tolist()) & truth)
    assert hits / (K * len(queries)) >= 0.98
    if index.backend != "bitscan":
        assert raw / (K * len(queries)) >= 0.9


@pytest.mark.parametrize("scan_rows", [ann.SCAN_ROWS, 7])  # one block; 43, the last short
def test_bitscan_codes_are_the_signs_around_the_mean(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scan_rows: int
) -> None:
    monkeypatch.setattr(ann, "SCAN_ROWS", scan_rows)
    vectors = clustered_unit_vectors(300, 70, seed=3)  # 70 is no multiple of 64: two words
    path = tmp_path / "codes.bitscan"
    build_ann_index(vectors, np.arange(300, dtype=np.int64) + 5, path, backend="bitscan")
    table = np.load(path)
    assert table.dtype == np.uint64 and table.shape == (3, 300)
    assert table[0].tolist() == list(range(5, 305))  # row 0: the keys
    bits = np.unpackbits(table[1:].T.copy().view(np.uint8), axis=1)[:, :70].astype(bool)
    np.testing.assert_array_equal(bits, vectors - vectors.mean(axis=0) > 0)
    index = open_ann_index(path)
    keys, scores = index.search(vectors[10], 300)
    assert keys[0] == 15 and scores[0] == pytest.approx(1.0)
    centred = vectors - vectors.mean(axis=0)
    query_bits = centred[10] > 0
    hamming = (bits != query_bits).sum(axis=1)
    expected = np.cos(np.pi * hamming / 70)
    np.testing.assert_allclose(np.sort(scores)[::-1], np.sort(expected)[::-1], atol=1e-5)
    rows, distance = index._hamming_nearest(vectors[10], 20)  # the 20 nearest, ties kept
    np.testing.assert_array_equal(rows, np.flatnonzero(hamming <= np.sort(hamming)[19]))
    np.testing.assert_array_equal(distance, hamming[rows])


def test_search_clamps_k_and_validates_queries(index: AnnIndex, data: np.ndarray) -> None:
    keys, _ = index.search(data[3], N + 100)
    assert 0.95 * N <= len(keys) <= N and len(np.unique(keys)) == len(keys)
    assert len(index.search(data[3], 0)[0]) == 0
    with pytest.raises(ValueError):
        index.search(np.zeros(DIM, np.float32), K)
    with pytest.raises(ValueError):
        index.search(data[3][:10], K)


def test_usearch_is_memory_mapped(tmp_path: Path, data: np.ndarray) -> None:
    path = tmp_path / "mapped.usearch"
    build_ann_index(data, np.arange(N, dtype=np.int64), path)
    index = open_ann_index(path, backend="usearch")
    maps = Path("/proc/self/maps")
    if maps.exists():
        assert str(path) in maps.read_text()
    assert index._index.memory_usage < path.stat().st_size  # vectors stay in the file
    with pytest.raises(RuntimeError):  # a view is immutable
        index._index.add(N + 1, data[0])
    with pytest.raises(ValueError, match="built with 'usearch'"):
        open_ann_index(path, backend="hnswlib")


@pytest.mark.parametrize("backend", BACKENDS)
def test_build_is_deterministic_and_atomic(tmp_path: Path, backend: str) -> None:
    vectors = clustered_unit_vectors(1500, 32, seed=3)
    keys = np.arange(1500, dtype=np.int64) * 3  # keys need not be dense
    first, second = tmp_path / "a.idx", tmp_path / "b.idx"
    build_ann_index(vectors, keys, first, backend)
    build_ann_index(vectors, keys, second, backend)
    assert first.read_bytes() == second.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.idx", "a.json", "b.idx", "b.json"]
    found, _ = open_ann_index(first).search(vectors[10], 1)
    assert found.tolist() == [30]


def test_build_rejects_bad_input(tmp_path: Path, data: np.ndarray) -> None:
    with pytest.raises(ValueError, match="keys"):
        build_ann_index(data[:10], np.zeros(10, np.int64), tmp_path / "dup.idx")
    with pytest.raises(ValueError, match="keys"):
        build_ann_index(data[:10], np.arange(9), tmp_path / "short.idx")
    with pytest.raises(ValueError, match="backend"):
        build_ann_index(data[:10], np.arange(10), tmp_path / "x.idx", backend="faiss")
    with pytest.raises(FileNotFoundError, match="sidecar"):
        open_ann_index(tmp_path / "never-built.idx")
    assert list(tmp_path.iterdir()) == []


def test_vectors_roundtrip_memory_mapped(tmp_path: Path, data: np.ndarray) -> None:
    save_vectors(data, tmp_path / "v16.npy")
    save_vectors(data, tmp_path / "v32.npy", dtype="float32")
    v16, v32 = load_vectors(tmp_path / "v16.npy"), load_vectors(tmp_path / "v32.npy")
    assert isinstance(v16, np.memmap) and not v16.flags.writeable
    assert v16.dtype == np.float16 and v32.dtype == np.float32
    np.testing.assert_array_equal(v32, data)
    np.testing.assert_allclose(v16, data, atol=1e-3)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["v16.npy", "v32.npy"]


def test_vectors_are_written_a_block_at_a_time_as_numpy_saves_them(
    tmp_path: Path, data: np.ndarray, monkeypatch: pytest.MonkeyPatch
) -> None:
    """From a matrix or a mapped file, in blocks that do not divide the rows: the bytes
    of ``numpy.save``."""
    monkeypatch.setattr(ann, "SAVE_ROWS", 7)
    np.save(tmp_path / "expected16.npy", data.astype(np.float16))
    np.save(tmp_path / "expected32.npy", data)
    save_vectors(data, tmp_path / "from-matrix.npy")
    save_vectors(data, tmp_path / "float32.npy", dtype="float32")
    mapped = VectorFile(tmp_path / "float32.npy")
    save_vectors(mapped, tmp_path / "from-file.npy")
    mapped.close()
    expected = (tmp_path / "expected16.npy").read_bytes()
    assert (tmp_path / "from-matrix.npy").read_bytes() == expected
    assert (tmp_path / "from-file.npy").read_bytes() == expected
    assert (tmp_path / "float32.npy").read_bytes() == (tmp_path / "expected32.npy").read_bytes()


# -- filtered search ----------------------------------------------------------------------


def test_selective_filter_still_returns_k(
    index: AnnIndex, vectors_file: np.ndarray, queries: np.ndarray
) -> None:
    allowed = np.random.default_rng(5).choice(N, 30, replace=False)
    for query in queries[:10]:
        expected = brute_force(vectors_file, query, K, rows=allowed)
        for threshold in (20000, 0):  # exact path, and ANN path that must fall back
            keys, scores = filtered_search(
                index, vectors_file, query, K, allowed, exact_threshold=threshold
            )
            assert len(keys) == K
            assert set(keys.tolist()) <= set(allowed.tolist())
            assert keys.tolist() == expected.tolist()
            assert (np.diff(scores) <= 0).all()


def test_filter_far_from_the_query_falls_back_to_exact(
    index: AnnIndex, vectors_file: np.ndarray, queries: np.ndarray
) -> None:
    # the 30 rows least similar to the query: oversampled ANN candidates miss them all
    query = queries[0]
    allowed = brute_force(-vectors_file.astype(np.float32), query, 30)
    keys, _ = filtered_search(
        index, vectors_file, query, K, allowed, exact_threshold=0, max_candidates=1000
    )
    assert keys.tolist() == brute_force(vectors_file, query, K, rows=allowed).tolist()


def test_broad_filter_uses_the_index(
    index: AnnIndex, vectors_file: np.ndarray, queries: np.ndarray
) -> None:
    allowed = np.random.default_rng(6).choice(N, N // 2, replace=False)
    hits = 0
    for query in queries[:30]:
        keys, _ = filtered_search(index, vectors_file, query, K, allowed, exact_threshold=100)
        assert len(keys) == K and set(keys.tolist()) <= set(allowed.tolist())
        hits += len(set(keys.tolist()) & set(brute_force(vectors_file, query, K, allowed).tolist()))
    assert hits / (30 * K) >= 0.9


class CountedRows:
    """A vector matrix that counts the rows read from it."""

    def __init__(self, matrix: np.ndarray) -> None:
        self.matrix, self.shape, self.read = matrix, matrix.shape, 0

    def __getitem__(self, rows: np.ndarray) -> np.ndarray:
        self.read += int(np.size(rows))
        return self.matrix[rows]


def test_a_filter_keeping_most_keys_is_searched_through_the_index(
    index: AnnIndex, vectors_file: np.ndarray, queries: np.ndarray
) -> None:
    """Below ``exact_threshold`` a filter keeping at least the index's filter share is
    searched through the index (its candidates re-scored), not by scoring every kept
    row; a narrower one is scored exactly."""
    allowed = np.sort(np.random.default_rng(7).choice(N, int(0.8 * N), replace=False))
    counted, hits = CountedRows(vectors_file), 0
    for query in queries[:10]:
        keys, _ = filtered_search(index, counted, query, K, allowed)
        assert len(keys) == K and set(keys.tolist()) <= set(allowed.tolist())
        hits += len(set(keys.tolist()) & set(brute_force(vectors_file, query, K, allowed).tolist()))
    assert counted.read < 10 * allowed.size / 2
    assert hits / (10 * K) >= 0.9
    narrow = allowed[: int(index.filter_share * N) - 1]
    counted.read = 0
    keys, _ = filtered_search(index, counted, queries[0], K, narrow)
    assert counted.read == narrow.size
    assert keys.tolist() == brute_force(vectors_file, queries[0], K, narrow).tolist()


def test_unfiltered_search_rescores_exactly(
    index: AnnIndex, vectors_file: np.ndarray, data: np.ndarray
) -> None:
    query = data[42]
    keys, scores = filtered_search(index, vectors_file, query, K, None)
    assert keys[0] == 42 and len(keys) == K
    expected = vectors_file[keys].astype(np.float32) @ (query / np.linalg.norm(query))
    np.testing.assert_allclose(scores, expected, rtol=0, atol=1e-6)


def test_filtered_search_edge_cases(index: AnnIndex, vectors_file: np.ndarray) -> None:
    query = np.asarray(vectors_file[9], dtype=np.float32)
    keys, _ = filtered_search(index, vectors_file, query, K, np.array([9, 5, 9, 3]))
    assert sorted(keys.tolist()) == [3, 5, 9] and keys[0] == 9  # fewer allowed than k
    assert len(filtered_search(index, vectors_file, query, K, np.array([], np.int64))[0]) == 0
    with pytest.raises(ValueError, match="row numbers"):
        filtered_search(index, vectors_file, query, K, np.array([N]))


def test_ties_break_by_key(tmp_path: Path) -> None:
    vectors = clustered_unit_vectors(200, 16, seed=1)
    vectors[[150, 20, 90]] = vectors[5]  # four identical rows
    save_vectors(vectors, tmp_path / "v.npy", dtype="float32")
    build_ann_index(vectors, np.arange(200), tmp_path / "t.idx", backend="hnswlib")
    index, mmap = open_ann_index(tmp_path / "t.idx"), load_vectors(tmp_path / "v.npy")
    for allowed in (None, np.arange(200)):
        keys, scores = filtered_search(index, mmap, vectors[5], 4, allowed)
        assert keys.tolist() == [5, 20, 90, 150]
        assert len(set(scores.tolist())) == 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_identical_vectors_are_indexed_once_and_all_found(
    tmp_path: Path, data: np.ndarray, backend: str
) -> None:
    vectors = data[:600].copy()
    vectors[100:160] = vectors[7]  # sixty copies of one text, as "Yes" answers are
    vectors[300] = vectors[299]
    keys = np.arange(600, dtype=np.int64) + 1000
    path = tmp_path / "copies.index"
    build_ann_index(vectors, keys, path, backend)
    info = json.loads(path.with_suffix(".json").read_text())
    assert (info["count"], info["indexed"]) == (600, 600 - 61)
    assert sorted(info["duplicates"]["keys"]) == [*range(1100, 1160), 1300]
    assert set(info["duplicates"]["of"]) == {1007, 1299}
    index = open_ann_index(path)
    found, scores = index.search(vectors[7], 64)
    assert found[:61].tolist() == [1007, *range(1100, 1160)]  # ties by key
    assert np.allclose(scores[:61], 1.0, atol=1e-3) and scores[61] < scores[60]
    found, _ = index.search(vectors[299], 2)
    assert found.tolist() == [1299, 1300]


@pytest.mark.parametrize("hashed", ["by row", "all alike"])
def test_identical_rows_are_grouped_byte_for_byte(data: np.ndarray, hashed: str) -> None:
    """Rows are grouped by a hash, then checked byte for byte: the groups are those of
    an exact comparison of every row, also when every row shares one hash (a collision
    sorts the group out exactly), and -0.0 is not 0.0."""
    vectors = data[:500].copy()
    vectors[[40, 90, 410]] = vectors[12]
    vectors[200:230] = vectors[199]
    vectors[300, 0], vectors[301] = 0.0, vectors[300]
    vectors[301, 0] = -0.0  # equal as numbers, not as bytes
    row_hashes = ann._row_hashes if hashed == "by row" else lambda w: np.zeros(len(w), np.uint64)
    first, copies = ann._identical_rows(vectors, row_hashes)
    assert copies.tolist() == [
        [40, 12],
        [90, 12],
        *([row, 199] for row in range(200, 230)),
        [410, 12],
    ]
    assert first.tolist() == sorted(set(range(500)) - {40, 90, 410, *range(200, 230)})


def test_auto_keeps_a_graph_that_finds_its_neighbours_and_scans_otherwise(
    tmp_path: Path, data: np.ndarray, monkeypatch: pytest.MonkeyPatch
) -> None:
    keys = np.arange(N, dtype=np.int64) + 7
    kept, recall = build_source_index(data, keys, tmp_path / "kept")
    assert kept.name == "kept.usearch" and recall is not None and recall >= AUTO_MIN_RECALL
    monkeypatch.setattr(ann, "AUTO_MIN_RECALL", 1.01)  # no graph is good enough
    scanned, again = build_source_index(data, keys, tmp_path / "scanned")
    assert scanned.name == "scanned.bitscan" and again == recall  # the same measurement
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "kept.json",
        "kept.usearch",
        "scanned.bitscan",
        "scanned.json",
    ]
    assert open_ann_index(scanned).backend == "bitscan"
    chosen, none = build_source_index(data, keys, tmp_path / "chosen", "hnswlib")
    assert chosen.name == "chosen.hnswlib" and none is None


def test_auto_rules_out_a_graph_by_a_sample_before_building_the_whole(
    tmp_path: Path, data: np.ndarray, monkeypatch: pytest.MonkeyPatch
) -> None:
    keys = np.arange(N, dtype=np.int64) + 7
    monkeypatch.setattr(ann, "AUTO_SAMPLE_VECTORS", 1000)
    monkeypatch.setattr(ann, "AUTO_MIN_RECALL", 1.01)  # no graph is good enough
    scanned, recall = build_source_index(data, keys, tmp_path / "scanned")
    assert scanned.name == "scanned.bitscan"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["scanned.bitscan", "scanned.json"]
    rows = np.sort(np.random.default_rng(ann.SELF_RECALL_SEED).choice(N, 1000, replace=False))
    sample = tmp_path / "sample.usearch"
    build_ann_index(data[rows], keys[rows], sample, "usearch")
    assert recall == self_recall(open_ann_index(sample), data[rows], keys[rows])  # the sample's
    monkeypatch.setattr(ann, "AUTO_MIN_RECALL", 0.0)  # the sample passes: the whole graph
    kept, whole = build_source_index(data, keys, tmp_path / "kept")
    assert kept.name == "kept.usearch"
    assert whole == self_recall(open_ann_index(kept), data, keys)


def test_a_unit_matrix_is_used_as_it_is_and_anything_else_normalized_in_a_copy(
    tmp_path: Path, data: np.ndarray, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The build normalizes a source's matrix once and every part reads that copy."""
    save_vectors(data, tmp_path / "v16.npy")
    stored = load_vectors(tmp_path / "v16.npy")
    rows = np.array([4, 0, 4999, 17, 2500, 3])
    monkeypatch.setattr(ann, "BLOCK_ROWS", 4)  # gathered over two blocks
    matrix = gather_unit_rows(stored, rows)
    np.testing.assert_array_equal(matrix, unit_rows(stored[rows]))
    assert as_unit_rows(matrix) is matrix
    zero_row = np.vstack([matrix, np.zeros((1, DIM), np.float32)])
    assert as_unit_rows(zero_row) is zero_row
    for other in (2 * matrix, matrix.astype(np.float64), np.asfortranarray(matrix)):
        copy = as_unit_rows(other)
        assert copy is not other and copy.dtype == np.float32 and copy.flags.c_contiguous
        np.testing.assert_allclose(copy, matrix, atol=1e-6)
    broken = matrix.copy()
    broken[1, 3] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        as_unit_rows(broken)


@pytest.mark.parametrize("copies", [False, True])
def test_a_graph_added_a_block_at_a_time_is_the_graph_of_one_call(
    tmp_path: Path, data: np.ndarray, copies: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    vectors = data[:1200].copy()
    if copies:
        vectors[7::5] = vectors[2]
    keys = np.arange(1200, dtype=np.int64) * 2
    build_ann_index(vectors, keys, tmp_path / "whole.usearch", "usearch")
    monkeypatch.setattr(ann, "BLOCK_ROWS", 256)
    seen: list[tuple[int, int]] = []
    build_ann_index(
        vectors, keys, tmp_path / "blocks.usearch", "usearch", progress=lambda *p: seen.append(p)
    )
    whole, blocks = tmp_path / "whole.usearch", tmp_path / "blocks.usearch"
    assert blocks.read_bytes() == whole.read_bytes()
    indexed = open_ann_index(blocks).info["indexed"]
    assert indexed == (961 if copies else 1200)
    assert seen[-1] == (indexed, indexed) and {total for _, total in seen} == {indexed}
    assert [done for done, _ in seen] == sorted(done for done, _ in seen)


def test_a_growing_graph_reports_its_progress(tmp_path: Path, data: np.ndarray) -> None:
    seen: list[tuple[int, int]] = []
    keys = np.arange(N, dtype=np.int64)
    build_ann_index(
        data, keys, tmp_path / "g.usearch", "usearch", progress=lambda *p: seen.append(p)
    )
    assert seen[-1] == (N, N) and {total for _, total in seen} == {N}
    assert [done for done, _ in seen] == sorted(done for done, _ in seen)
    lines: list[str] = []
    build_source_index(
        data[:300], keys[:300], tmp_path / "s", "usearch", _graph_progress(lines.append, "s")
    )
    assert lines == [lines[0]]
    assert lines[0].startswith("nearest-neighbour graph for s: 300 of 300 vectors (100.0 %)")


def test_self_recall_measures_what_the_index_finds(tmp_path: Path, data: np.ndarray) -> None:
    keys = np.arange(N, dtype=np.int64)
    exact = tmp_path / "small.bitscan"  # 600 vectors, a pool of 1,000: exact
    build_ann_index(data[:600], keys[:600], exact, "bitscan")
    assert self_recall(open_ann_index(exact), data[:600], keys[:600]) == 1.0
    wrong = tmp_path / "wrong.usearch"  # a graph of other vectors under the same keys
    build_ann_index(np.random.default_rng(3).permutation(data), keys, wrong, "usearch")
    assert self_recall(open_ann_index(wrong), data, keys) < 0.2


@pytest.mark.parametrize("backend", ["bitscan", "usearch"])
def test_an_index_of_stored_rows_read_by_blocks_is_the_index_of_their_gathered_copy(
    tmp_path: Path, data: np.ndarray, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ANN step reads a source's rows from the vector file a block at a time
    instead of gathering them into one float32 copy: the index, its sidecar (copies,
    corpus mean) and its measured recall are the same."""
    vectors = data[:1500].copy()
    vectors[7::5] = vectors[2]  # identical rows, grouped across blocks
    save_vectors(vectors, tmp_path / "v.npy")
    stored = VectorFile(tmp_path / "v.npy")
    picked = np.arange(3, 1500, 2, dtype=np.int64)
    monkeypatch.setattr(ann, "BLOCK_ROWS", 128)
    gathered = gather_unit_rows(stored, picked)
    streamed = StoredUnitRows(stored, picked)
    np.testing.assert_array_equal(streamed[5:300], gathered[5:300])
    np.testing.assert_array_equal(streamed[np.array([9, 2, 700])], gathered[[9, 2, 700]])
    copy, read = tmp_path / f"copy.{backend}", tmp_path / f"read.{backend}"
    build_ann_index(gathered, picked, copy, backend)
    build_ann_index(streamed, picked, read, backend)
    assert read.read_bytes() == copy.read_bytes()
    assert read_sidecar(read) == read_sidecar(copy)
    assert read_sidecar(read)["duplicates"]["keys"]  # the copies were found
    index = open_ann_index(read)
    assert self_recall(index, streamed, picked) == self_recall(index, gathered, picked)


def test_the_brute_force_tenth_best_is_found_a_block_at_a_time(
    data: np.ndarray, monkeypatch: pytest.MonkeyPatch
) -> None:
    matrix = unit_rows(data[:1000])
    queries = matrix[[0, 500, 999, 500]]
    own = np.array([0, 500, 999, 17])
    monkeypatch.setattr(ann, "BLOCK_ROWS", 96)
    found = tenth_best(matrix, queries, 10, own)
    for i, query in enumerate(queries):
        scores = matrix @ query
        scores[own[i]] = -np.inf
        assert found[i] == pytest.approx(np.sort(scores)[-10], abs=1e-6)
    assert (tenth_best(matrix, queries, 10) >= found).all()  # with the own row kept
