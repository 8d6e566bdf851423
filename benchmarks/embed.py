"""Embedding throughput per provider on the release's own texts.

Two text sets, sampled with a fixed seed from the release's ``search_doc``: ``titles``
(short: a document's title) and ``documents`` (what the build embeds: ``embed_text``,
else the title). Each provider is loaded first (its load time reported apart), then
embeds each set in one ``embed`` call; texts per second = texts / seconds. The figures
of every provider are also given as a ratio to wordllama's, measured in the same run.
"""

from __future__ import annotations

from statistics import fmean
from typing import Any

import numpy as np

from benchmarks.common import SEED, ratio, timed
from metabundle.index.embed import get_embedder
from metabundle.search.release import Release


def sample_texts(release: Release, n: int, seed: int = SEED) -> dict[str, list[str]]:
    """``n`` titles and ``n`` document texts of random documents."""
    rows = release.query("SELECT title, coalesce(nullif(embed_text, ''), title) FROM search_doc")
    picks = np.random.default_rng(seed).choice(len(rows), size=min(n, len(rows)), replace=False)
    return {
        "titles": [rows[i][0] for i in picks],
        "documents": [rows[i][1] for i in picks],
    }


def throughput(provider: str, texts: dict[str, list[str]]) -> dict[str, Any]:
    """Load ``provider`` and embed each text set once."""
    load_s, embedder = timed(lambda: get_embedder(provider))
    warm_s, _ = timed(lambda: embedder.embed(["warm up"]))
    out: dict[str, Any] = {
        "model": embedder.model_id,
        "dimension": embedder.dimension,
        "load_s": round(load_s + warm_s, 2),
    }
    for name, values in texts.items():
        seconds, vectors = timed(lambda v=values: embedder.embed(v))
        assert vectors.shape == (len(values), embedder.dimension)
        out[name] = {
            "texts": len(values),
            "mean_chars": round(fmean(len(t) for t in values), 1) if values else 0,
            "seconds": round(seconds, 3),
            "texts_per_s": round(len(values) / seconds, 1) if seconds else None,
        }
    return out


def compare(release: Release, sizes: dict[str, int]) -> dict[str, Any]:
    """Throughput of every provider in ``sizes`` (texts per set)."""
    out: dict[str, Any] = {}
    for provider, n in sizes.items():
        out[provider] = throughput(provider, sample_texts(release, n))
    base = out.get("wordllama")
    for provider, row in out.items():
        if base and provider != "wordllama":
            row["ratio_vs_wordllama"] = {
                name: ratio(row[name]["texts_per_s"], base[name]["texts_per_s"])
                for name in ("titles", "documents")
            }
    return out
