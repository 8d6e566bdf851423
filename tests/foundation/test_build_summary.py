"""The summary that ends ``metabundle build`` (``orchestration/run.py``): a line per
step, the embedding shards added up with their rate, and the time outside every step,
so that its lines add up to the build's time."""

from __future__ import annotations

import re
from typing import Any

from metabundle.orchestration.progress import shard_step
from metabundle.orchestration.run import UNTIMED_STEP, summary_lines


def record(seconds: float, peak: int | None = 100, **reused: Any) -> dict[str, Any]:
    """A step's record as :meth:`Progress.report` gives it."""
    return {"seconds": seconds, "status": "done", "reused": reused, "peak_rss_mib": peak}


def shard(seconds: float, peak: int, cached: int, embedded: int) -> dict[str, Any]:
    counts = {"requested": cached + embedded, "unique": cached + embedded}
    return record(seconds, peak, **counts, cached=cached, embedded=embedded)


REPORT = {
    "search_docs": record(2.0, search_docs=False),
    "embedding_shards": record(1.0, shards=3, texts=120_000),
    shard_step("dbgap_0"): shard(300.0, 900, cached=10_000, embedded=40_000),
    shard_step("dbgap_1"): shard(250.0, 1_200, cached=0, embedded=50_000),
    shard_step("ukb_0"): shard(50.0, 800, cached=20_000, embedded=0),
    "embeddings": record(4.0, embeddings=False, requested=130_000, cached=30_000),
    "release": record(40.0, release=False, version="2026.01.02"),
}


def test_the_shards_are_one_line_with_their_texts_and_rate() -> None:
    lines = summary_lines(REPORT, 700.0)
    [shards] = [line for line in lines if line.startswith("embed (")]
    assert shards.split() == [
        *("embed", "(3", "shards)", "600.0s", "1,200", "MiB"),
        *("90,000", "texts", "embedded,", "30,000", "from", "the", "embedding", "cache,"),
        *("150", "texts/s"),
    ]
    assert not any(line.startswith("embed dbgap") for line in lines)
    assert "120,000 distinct texts in 3 shards" in "\n".join(lines)
    assert "vectors of 130,000 documents read from the embedding cache" in "\n".join(lines)


def test_the_lines_add_up_to_the_build_time() -> None:
    lines = summary_lines(REPORT, 700.0)
    assert lines[0] == "700.0s in all; release 2026.01.02 written"
    assert lines[-1].startswith(UNTIMED_STEP) and " 53.0s " in lines[-1]
    took = [float(re.findall(r" (\d+\.\d)s ", line)[0]) for line in lines[1:]]
    assert sum(took) == 700.0


def test_shards_that_found_every_text_cached_say_so() -> None:
    lines = summary_lines({shard_step("omop_0"): shard(0.5, 300, cached=4_000, embedded=0)}, 0.5)
    assert lines[1].endswith("all 4,000 texts already in the embedding cache")
    assert len(lines) == 2  # no time outside the steps: no line for it
