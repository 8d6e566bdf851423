"""The crosswalk's nearest-concept search: exact, over blocks, once per distinct query."""

from __future__ import annotations

import numpy as np

from metabundle.index.crosswalk import BLOCK, exact_nearest


def unit_rows(count: int, seed: int) -> np.ndarray:
    rows = np.random.default_rng(seed).standard_normal((count, 32))
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float16)


def test_every_query_gets_its_exact_nearest_target_across_blocks() -> None:
    vectors = unit_rows(3 * BLOCK, seed=5)
    vectors[10] = vectors[2 * BLOCK + 7]  # a query identical to a target in the last block
    vectors[11] = vectors[10]  # and a second query with the same vector
    queries = np.array([10, 11, *range(12, 900)], dtype=np.int64)
    targets = np.arange(BLOCK, 3 * BLOCK, dtype=np.int64)  # two blocks of targets
    best, scores = exact_nearest(vectors, queries, targets)
    cosines = vectors[queries].astype(np.float32) @ vectors[targets].astype(np.float32).T
    assert best.tolist() == cosines.argmax(axis=1).tolist()
    assert np.allclose(scores, cosines.max(axis=1), atol=1e-6)
    assert targets[best[0]] == targets[best[1]] == 2 * BLOCK + 7
    assert scores[0] == scores[1] and scores.max() <= 1.0


def test_ties_go_to_the_first_target_and_nothing_to_search_is_no_match() -> None:
    vectors = unit_rows(BLOCK + 20, seed=6)
    vectors[BLOCK + 5] = vectors[3]  # the same vector in two blocks of targets
    best, _ = exact_nearest(vectors, np.array([3]), np.array([BLOCK + 5, 3]))
    assert best.tolist() == [0]
    best, _ = exact_nearest(vectors, np.array([3]), np.arange(4, BLOCK + 20))
    assert best.tolist() == [BLOCK + 1]  # row BLOCK + 5 of targets starting at row 4
    best, scores = exact_nearest(vectors, np.array([3, 4]), np.empty(0, np.int64))
    assert best.tolist() == [-1, -1] and np.isneginf(scores).all()
