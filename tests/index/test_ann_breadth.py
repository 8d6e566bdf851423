"""How widely an index searches: the scan's second ranking, the build's widening with
probes that are not the index's own vectors, and serving that reads the breadth back."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from metabundle.index import ann, ann_breadth
from metabundle.index.ann import (
    build_ann_index,
    open_ann_index,
    read_sidecar,
    recall_at_10,
    unit_rows,
)
from metabundle.index.ann_breadth import (
    PROBE_DEPTH,
    PROBE_MIN_RECALL,
    WIDEN_STEPS,
    probe_rows,
    widen,
)
from metabundle.search.release import Release
from tests.index.test_ann import clustered_unit_vectors

N, DIM = 5000, 64


@pytest.fixture(scope="module")
def indexed() -> tuple[np.ndarray, np.ndarray]:
    """Vectors to index, and vectors the index does not hold (as a release's other
    sources' documents are) to probe it with."""
    sample = clustered_unit_vectors(N + 200, DIM, seed=7)
    return sample[:N], sample[N:]


KEYS = np.arange(N, dtype=np.int64)


def scan(path: Path, data: np.ndarray, pool: int, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A bitscan index of ``data`` whose sidecar names a re-scoring pool of ``pool``."""
    monkeypatch.setattr(ann, "BITSCAN_POOL", pool)
    build_ann_index(data, KEYS, path, "bitscan")
    return path


def recall(path: Path, data: np.ndarray, probes: np.ndarray, breadth: int | None = None) -> float:
    index = open_ann_index(path)
    if breadth is not None:
        index.set_breadth(breadth)
    return recall_at_10(index, unit_rows(data), KEYS, unit_rows(probes), PROBE_DEPTH)


def test_a_scan_ranks_its_nearest_codes_again_by_the_query_before_rescoring(
    tmp_path: Path, indexed: tuple[np.ndarray, np.ndarray], monkeypatch: pytest.MonkeyPatch
) -> None:
    data, probes = indexed
    path = scan(tmp_path / "s.bitscan", data, 100, monkeypatch)
    refined = recall(path, data, probes)
    monkeypatch.setattr(ann, "REFINE_FACTOR", 1)  # Hamming distance alone
    hamming = recall(path, data, probes)
    assert refined >= PROBE_MIN_RECALL > hamming
    assert refined - hamming >= 0.02


def test_the_build_widens_an_index_until_it_finds_the_probes_neighbours(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    crowded = clustered_unit_vectors(N + 200, 256, seed=7, spread=0.3)
    data, probes = crowded[:N], crowded[N:]
    path = scan(tmp_path / "s.bitscan", data, 100, monkeypatch)
    assert recall(path, data, probes) < PROBE_MIN_RECALL
    breadth, reached = widen(path, data, KEYS, probes)
    assert breadth > 100 and reached >= PROBE_MIN_RECALL
    assert recall(path, data, probes, breadth // 2) < PROBE_MIN_RECALL  # no wider than needed
    info = read_sidecar(path)
    assert info["params"]["rescore_pool"] == breadth
    assert info["probe_recall"] == {"probes": 200, "depth": 50, "recall_at_10": reached}
    served = open_ann_index(path)  # serving reads the breadth back
    assert served.breadth == breadth and served.rescore_count(PROBE_DEPTH) == breadth


@pytest.mark.parametrize("backend", ["usearch", "hnswlib"])
def test_widening_stops_after_its_last_doubling(
    tmp_path: Path,
    indexed: tuple[np.ndarray, np.ndarray],
    monkeypatch: pytest.MonkeyPatch,
    backend: str,
) -> None:
    data, probes = indexed
    monkeypatch.setattr(ann_breadth, "PROBE_MIN_RECALL", 1.01)  # no breadth is enough
    graph = tmp_path / f"g.{backend}"
    build_ann_index(data, KEYS, graph, backend, expansion_search=16)
    breadth, reached = widen(graph, data, KEYS, probes)
    assert breadth == 16 * 2**WIDEN_STEPS and reached <= 1.0
    assert read_sidecar(graph)["params"]["expansion_search"] == breadth
    served = open_ann_index(graph)._index  # the graph's beam, as serving opens it
    assert (served.expansion_search if backend == "usearch" else served.ef) == breadth


def test_probes_are_other_sources_documents(tmp_path: Path) -> None:
    everything = np.arange(1000, dtype=np.int64)
    own = everything[100:700]
    rows = probe_rows(own, everything)
    assert rows.size == 200 and not np.isin(rows, own).any()
    assert (rows == np.sort(rows)).all() and (rows == probe_rows(own, everything)).all()
    assert probe_rows(everything, everything).size == 0  # a release of one source


def test_a_breadth_is_at_least_one(tmp_path: Path, indexed: tuple[np.ndarray, np.ndarray]) -> None:
    data, _ = indexed
    build_ann_index(data[:100], KEYS[:100], tmp_path / "s.bitscan", "bitscan")
    with pytest.raises(ValueError, match="at least 1"):
        open_ann_index(tmp_path / "s.bitscan").set_breadth(0)


def test_a_build_records_how_widely_each_source_is_searched(release: Release) -> None:
    facts = release.search_info
    for source in release.source_ranges:
        index = release.ann_index(source)
        assert index is not None
        assert facts[f"ann_breadth.{source}"] == index.breadth  # what serving reads
        reached = facts[f"ann_probe_recall.{source}"]
        assert index.info["probe_recall"]["recall_at_10"] == pytest.approx(reached, abs=1e-4)
        widest = index.breadth == ann_breadth_cap(index)
        assert reached >= PROBE_MIN_RECALL or widest, source


def ann_breadth_cap(index: ann.AnnIndex) -> int:
    """The breadth an index of this backend reaches after every doubling."""
    first = ann.BITSCAN_POOL if index.backend == "bitscan" else 128
    return first * 2**WIDEN_STEPS
