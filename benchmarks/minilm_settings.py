"""minilm CPU throughput per onnxruntime thread count and batch size, on release texts.

``python -m benchmarks.minilm_settings --release DIR [--texts N] [--threads 1,2]
[--batches 16,32,64,128]``

Samples ``N`` document texts (``embed_text``, else the title) of the release with the
fixed seed, loads one :class:`~metabundle.index.embed.minilm.MiniLMEmbedder` per
setting, warms it up, and embeds the sample once; ``max_batch_tokens`` is 64 tokens a
text of the batch. Each row gives texts/s and its ratio to the default setting (threads
= the CPUs this process may use, batch 64), measured in the same run, and the largest
difference of its vectors from the default's (dynamic padding makes batches differ only
by float rounding).
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import ratio, timed
from benchmarks.embed import sample_texts
from metabundle.index.embed.minilm import MiniLMEmbedder
from metabundle.search.release import Release

DEFAULT_BATCH = 64


def measure(texts: list[str], threads: int, batch: int) -> tuple[float, np.ndarray]:
    """Texts per second of one setting and its vectors."""
    embedder = MiniLMEmbedder(threads=threads, batch_size=batch, max_batch_tokens=64 * batch)
    embedder.embed(["warm up"])
    seconds, vectors = timed(lambda: embedder.embed(texts))
    return len(texts) / seconds, vectors


def grid(texts: list[str], threads: list[int], batches: list[int]) -> dict[str, Any]:
    """Every (threads, batch) setting, the default first, with ratios to the default."""
    default_threads = len(os.sched_getaffinity(0))
    base_rate, base_vectors = measure(texts, default_threads, DEFAULT_BATCH)
    rows = [
        {
            "threads": default_threads,
            "batch": DEFAULT_BATCH,
            "texts_per_s": round(base_rate, 1),
            "ratio": 1.0,
            "max_abs_diff": 0.0,
        }
    ]
    for count in threads:
        for batch in batches:
            if (count, batch) == (default_threads, DEFAULT_BATCH):
                continue
            rate, vectors = measure(texts, count, batch)
            rows.append(
                {
                    "threads": count,
                    "batch": batch,
                    "texts_per_s": round(rate, 1),
                    "ratio": ratio(rate, base_rate),
                    "max_abs_diff": float(np.abs(vectors - base_vectors).max()),
                }
            )
    best = max(rows, key=lambda row: row["texts_per_s"])
    return {
        "texts": len(texts),
        "mean_chars": round(sum(map(len, texts)) / len(texts), 1),
        "load_1min": round(os.getloadavg()[0], 1),
        "rows": rows,
        "fastest": {"threads": best["threads"], "batch": best["batch"]},
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.minilm_settings")
    parser.add_argument("--release", type=Path, default=Path("build/current"))
    parser.add_argument("--texts", type=int, default=600)
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--batches", default="16,32,64,128")
    args = parser.parse_args(argv)
    with Release.open(args.release) as release:
        texts = sample_texts(release, args.texts)["documents"]
    report = grid(
        texts,
        [int(n) for n in args.threads.split(",")],
        [int(n) for n in args.batches.split(",")],
    )
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
