"""How widely each source's vector index searches, set by the build from what it finds.

A graph's beam (usearch's ``expansion_search``) and a sign-code scan's re-scoring pool
(``rescore_pool``) trade speed for the share of true neighbours found. A source's own
vectors are easy queries (each lies among its neighbours), so the recall
:func:`~metabundle.index.ann.self_recall` measures flatters an index: the complete
mirror's dbGaP graph found 0.99 of its own vectors' neighbours and 0.97 of the
benchmark queries'. People's questions lie between documents, much like the documents
of *other* sources (short biomedical texts the index does not hold): the build
searches a seeded sample of those as :func:`~metabundle.index.ann.filtered_search`
does for a page of results and doubles the breadth until the index finds
:data:`PROBE_MIN_RECALL` of their true 10 nearest, or :data:`WIDEN_STEPS` times. The
breadth and the recall go into the sidecar (``params``, ``probe_recall``), which
serving reads. Measured on the complete mirror and a 1M-document release, probe recall
never exceeded the evaluation queries' recall (``benchmarks/README.md``), so the bar
holds for real questions too.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from metabundle.index.ann import (
    UnitMatrix,
    as_unit_rows,
    open_ann_index,
    recall_at_10,
    tenth_best,
    write_sidecar,
)

PROBE_MIN_RECALL = 0.98
"""The share of probes' true 10 nearest an index must find (the bar the benchmark sets
for ANN recall@10)."""
PROBES = 200
PROBE_SEED = 20261203
PROBE_DEPTH = 50
"""Results a probe asks for: the candidate pool a page of 10 asks the index for
(``metabundle.search.retrieval.MIN_POOL``)."""
WIDEN_STEPS = 3
"""At most this many doublings: a beam of 128 to 1,024, a pool of 1,000 to 8,000."""


def probe_rows(source_docnos: np.ndarray, all_docnos: np.ndarray) -> np.ndarray:
    """A seeded sample of :data:`PROBES` docnos of the other sources (sorted; empty when
    the release holds one source)."""
    others = np.setdiff1d(all_docnos, source_docnos)
    if not others.size:
        return others
    rng = np.random.default_rng(PROBE_SEED)
    return np.sort(rng.choice(others, min(PROBES, others.size), replace=False))


def widen(
    path: Path, vectors: UnitMatrix, keys: np.ndarray, probes: np.ndarray
) -> tuple[int, float]:
    """Widen the index at ``path`` (built from ``vectors`` with ``keys``) until it finds
    :data:`PROBE_MIN_RECALL` of the ``probes``' neighbours or has doubled its breadth
    :data:`WIDEN_STEPS` times; write the breadth and the recall reached into its
    sidecar and return both. The probes' true neighbours are found once, by one pass
    over the vectors, for every breadth tried."""
    index = open_ann_index(path)
    matrix = as_unit_rows(vectors)
    queries = np.asarray(as_unit_rows(probes))
    tenth = tenth_best(matrix, queries, min(10, len(matrix)))

    def recall_now() -> float:
        return recall_at_10(index, matrix, keys, queries, PROBE_DEPTH, tenth=tenth)

    recall = recall_now()
    for _ in range(WIDEN_STEPS):
        if recall >= PROBE_MIN_RECALL:
            break
        index.set_breadth(2 * index.breadth)
        recall = recall_now()
    probed = {"probes": len(queries), "depth": PROBE_DEPTH, "recall_at_10": recall}
    write_sidecar(path, {**index.info, "probe_recall": probed})  # info holds the breadth
    return index.breadth, recall
