"""The search-index build end to end: search docs → FTS → embeddings → ANN.

The production steps of :mod:`metabundle.index.steps` run in order on a fresh cache
(nothing reused) over the release's own source tables (``parquet/<table>.parquet``,
which are the tables those steps read during a build): ``build_search_docs`` (every
source's ``search_docs`` query, numbering, identifiers), ``build_keyword_index`` (FTS
tables and keyword arrays), ``build_embeddings`` (wordllama, the shared build's
provider) and ``build_ann_indexes`` (usearch, one index per source). Each step's wall
time is reported, and documents per second over the whole.

Baselines measured in the same run: SQLite FTS5 indexing the same documents' terms (as
:mod:`.keyword` does) for the keyword step, and the embedder alone on the same texts
(no cache) for the embedding step.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from benchmarks.common import ratio, timed
from benchmarks.keyword import build_sqlite
from metabundle.config import BuildSettings
from metabundle.index.embed import get_embedder
from metabundle.index.steps import (
    build_ann_indexes,
    build_embeddings,
    build_keyword_index,
    build_search_docs,
)
from metabundle.search.release import Release
from metabundle.sources.base import RawSnapshot
from metabundle.sources.steps import StagedSource
from metabundle.staging import StagedTable

PROVIDER = "wordllama"
BACKEND = "usearch"


def staged_from_release(release: Release, sources: list[str]) -> list[StagedSource]:
    """Each source's tables as the release holds them, in the shape the steps take."""
    staged = []
    for source in sources:
        tables = {}
        for name, entry in release.manifest["tables"].items():
            path = release.path / "parquet" / f"{name}.parquet"
            if entry.get("source") == source and path.exists():
                tables[name] = StagedTable(name, path, int(entry["rows"]))
        snapshot = RawSnapshot(source=source, upstream=str(release.path), files=())
        staged.append(StagedSource(source, f"bench-{release.version}", True, snapshot, tables))
    return staged


def measure(release: Release, sources: list[str] | None) -> dict[str, Any]:
    """Time the four steps over ``sources`` (None: every source of the release)."""
    chosen = sorted(sources or release.manifest["sources"])
    chosen = [s for s in chosen if s in release.manifest["sources"]]
    lines: list[str] = []
    with tempfile.TemporaryDirectory(prefix="bench-build-") as tmp:
        settings = BuildSettings.load(
            out=Path(tmp),
            cache=Path(tmp) / "cache",
            sources=tuple(chosen),
            embedding_provider=PROVIDER,
            ann_backend=BACKEND,
        )
        staged = staged_from_release(release, chosen)
        steps: dict[str, float] = {}
        steps["search_docs"], docs = timed(
            lambda: build_search_docs(settings, staged, lines.append)
        )
        steps["keyword"], _ = timed(lambda: build_keyword_index(settings, docs, lines.append))
        steps["embeddings"], emb = timed(lambda: build_embeddings(settings, docs, lines.append))
        steps["ann"], _ = timed(lambda: build_ann_indexes(settings, docs, emb, lines.append))
        table = pq.read_table(docs.table("search_doc"), columns=["docno", "title", "body"])
        fts5_s, con = timed(lambda: build_sqlite(table, Path(tmp) / "fts5.sqlite"))
        con.close()
        texts = pq.read_table(docs.table("search_doc"), columns=["title", "embed_text"])
        plain = [
            e or t
            for e, t in zip(*(texts[c].to_pylist() for c in ("embed_text", "title")), strict=True)
        ]
        embedder = get_embedder(PROVIDER)
        embedder.embed(["warm up"])
        embed_only_s, _ = timed(lambda: embedder.embed(plain))
    n_docs = table.num_rows
    total = sum(steps.values())
    return {
        "sources": chosen,
        "docs": n_docs,
        "provider": PROVIDER,
        "ann_backend": BACKEND,
        "steps_s": {k: round(v, 2) for k, v in steps.items()},
        "total_s": round(total, 2),
        "docs_per_s": round(n_docs / total, 1) if total else None,
        "baselines_s": {"fts5_index": round(fts5_s, 2), "embed_only": round(embed_only_s, 2)},
        "keyword_ratio_vs_fts5_build": ratio(steps["keyword"], fts5_s),
        "embeddings_ratio_vs_embed_only": ratio(steps["embeddings"], embed_only_s),
        "log": lines,
    }
