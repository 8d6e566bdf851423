"""What an embedding shard spends finding which of its texts the cache already holds.

A build of ten million documents embeds about two hundred shards, each writing its
vectors to the cache as parts of :data:`~metabundle.index.embed.cache.CHUNK_TEXTS`
texts, and each first asking the cache which of its texts it holds. This module
replays that growth on generated keys (random 32-byte keys, 8-d zero vectors: only
the keys are read): shard after shard, a shard's keys (half cached, half new) are
looked up in two caches holding the same parts, one that reads every part's keys
(``index_after_parts=None``) and one with the key index, in alternating order, then
the shard's parts are added to both. Reported: the lookup's seconds per shard at
checkpoints, their sum, and the ratio of the indexed lookup to the plain one.

```bash
python -m benchmarks.embedding_cache --shards 200 --json F
```
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import SEED, print_and_save, ratio, timed
from metabundle.index.embed.cache import CHUNK_TEXTS, KEY_BYTES, EmbeddingCache

MODEL = "generated-keys"
DIMENSION = 8


def random_keys(rng: np.random.Generator, n: int) -> np.ndarray:
    return np.frombuffer(rng.bytes(n * KEY_BYTES), dtype=f"S{KEY_BYTES}")


def replay(folder: Path, shards: int, parts_per_shard: int) -> dict[str, Any]:
    """Grow two caches shard by shard, timing each shard's lookup in both."""
    rng = np.random.default_rng(SEED)
    caches = {
        "plain": EmbeddingCache(folder / "plain", index_after_parts=None),
        "indexed": EmbeddingCache(folder / "indexed"),
    }
    seconds: dict[str, list[float]] = {name: [] for name in caches}
    cached = np.empty(0, f"S{KEY_BYTES}")
    zeros = np.zeros((CHUNK_TEXTS, DIMENSION), np.float32)
    for shard in range(shards):
        new = random_keys(rng, parts_per_shard * CHUNK_TEXTS)
        known = cached[rng.integers(0, len(cached), len(new))] if len(cached) else cached
        asked = np.concatenate([known, new])
        order = list(caches) if shard % 2 else list(reversed(caches))
        for name in order:
            took, found = timed(lambda c=caches[name], k=asked: c.contains(MODEL, k))
            if int(found.sum()) != len(known) or found[len(known) :].any():
                raise AssertionError(f"{name} cache answered wrongly at shard {shard}")
            seconds[name].append(took)
        for start in range(0, len(new), CHUNK_TEXTS):
            for cache in caches.values():
                cache.add(MODEL, new[start : start + CHUNK_TEXTS], zeros)
        cached = np.concatenate([cached, new])
    checkpoints = sorted({0, shards // 4, shards // 2, 3 * shards // 4, shards - 1})
    return {
        "shards": shards,
        "parts": shards * parts_per_shard,
        "keys": len(cached),
        "per_shard_s": {
            name: {str(at + 1): round(values[at], 3) for at in checkpoints}
            for name, values in seconds.items()
        },
        "total_s": {name: round(sum(values), 2) for name, values in seconds.items()},
        "indexed_vs_plain": ratio(sum(seconds["indexed"]), sum(seconds["plain"])),
    }


def render(report: dict[str, Any]) -> str:
    lines = [
        f"{report['shards']} shards, {report['parts']:,} parts, {report['keys']:,} keys",
        "| lookup | "
        + " | ".join(f"shard {at}" for at in report["per_shard_s"]["plain"])
        + " | all shards |",
        "| --- |" + " --- |" * (len(report["per_shard_s"]["plain"]) + 1),
    ]
    for name, values in report["per_shard_s"].items():
        cells = " | ".join(f"{v} s" for v in values.values())
        lines.append(f"| {name} | {cells} | {report['total_s'][name]} s |")
    lines.append(f"\nindexed / plain, all shards: {report['indexed_vs_plain']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shards", type=int, default=200)
    parser.add_argument("--parts-per-shard", type=int, default=6)
    parser.add_argument("--workdir", type=Path, help="default: a temporary folder")
    parser.add_argument("--json", type=Path, help="also write the report here")
    args = parser.parse_args(argv)
    folder = Path(tempfile.mkdtemp(prefix="metabundle-cache-", dir=args.workdir))
    try:
        report = replay(folder, args.shards, args.parts_per_shard)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return print_and_save(render(report), report, args.json)


if __name__ == "__main__":
    raise SystemExit(main())
