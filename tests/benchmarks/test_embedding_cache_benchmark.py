"""The embedding cache benchmark at a small size: both caches answer every shard's
lookup alike (the replay checks each answer) past the point where the key index is
first written."""

from __future__ import annotations

from pathlib import Path

from benchmarks.embedding_cache import render, replay
from metabundle.index.embed.cache import CHUNK_TEXTS, INDEX_AFTER_PARTS


def test_the_replay_compares_both_lookups_past_the_first_key_index(tmp_path: Path) -> None:
    shards, parts_per_shard = INDEX_AFTER_PARTS // 6 + 2, 6
    report = replay(tmp_path, shards, parts_per_shard)
    assert report["keys"] == shards * parts_per_shard * CHUNK_TEXTS
    assert report["parts"] > INDEX_AFTER_PARTS
    assert len(list(tmp_path.glob("indexed/*/key-index.parquet"))) == 1
    assert not list(tmp_path.glob("plain/*/key-index.parquet"))
    assert report["indexed_vs_plain"] is not None
    assert "indexed / plain, all shards" in render(report)
