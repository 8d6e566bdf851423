"""Each build step reports the most memory it held (``orchestration/progress.py``)."""

from __future__ import annotations

import time

import numpy as np

from metabundle.orchestration.progress import MEMORY_SAMPLE_S, Progress
from metabundle.orchestration.run import summary_lines


def test_a_step_that_holds_memory_reports_it_and_the_next_step_does_not() -> None:
    progress = Progress(sink=lambda step, text: None)
    with progress.step("before"):
        pass
    with progress.step("holding"):
        block = np.ones(256 << 20, dtype=np.uint8)
        time.sleep(3 * MEMORY_SAMPLE_S)
        del block
    with progress.step("after"):
        time.sleep(3 * MEMORY_SAMPLE_S)
    report = progress.report()
    before, holding, after = (report[s]["peak_rss_mib"] for s in ("before", "holding", "after"))
    assert holding >= before + 240
    assert after <= holding - 200
    assert f"{holding:,} MiB" in "\n".join(summary_lines(report, 1.0))
