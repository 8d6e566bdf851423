"""Benchmarks: speed, scale and retrieval quality of metabundle, measured side by side.

Run ``python -m benchmarks [--quick] [--json OUT] [--release DIR]`` from the repository
root; ``benchmarks/README.md`` explains every figure and records the latest full run.

Figures on shared machines drift, so every speed figure comes with a baseline measured
in the same run (SQLite FTS5, the raw ANN library call, exact brute force, a bare
interpreter start, ...) and the report carries a small calibration (a fixed Python and
numpy workload, the load average) taken at the start and the end. Quality figures are
computed on the fixed evaluation sets ``tests/eval/<source>.jsonl`` through the real
search tools of a release.

Modules, one per measurement:

* :mod:`.common`: configuration per mode, timing statistics, memory, machine facts;
* :mod:`.corpus`: the synthetic keyword corpus drawn from the mirror's vocabulary;
* :mod:`.keyword`: our keyword search versus SQLite FTS5 ``bm25()``;
* :mod:`.ann`: our semantic path versus the raw usearch/hnswlib call and brute force;
* :mod:`.serving`: hybrid latency, time to first answer, serving memory (subprocesses);
* :mod:`.embed`: texts embedded per second per provider;
* :mod:`.build`: the search-index build steps end to end (docs/s);
* :mod:`.omop_ingest`: the OMOP ingest of a generated Athena export;
* :mod:`.quality`: ndcg@10/recall@10 per source and method, and a fusion grid;
* :mod:`.harness`: runs them all and renders the report.

Nothing here is part of the test suite except ``tests/benchmarks/test_harness_smoke.py``,
which runs the harness once on a tiny corpus so that it cannot rot.
"""
