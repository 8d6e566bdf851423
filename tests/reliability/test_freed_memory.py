"""A serving process gives the memory its calls freed back to the system when the last
running call ends, instead of keeping it in its RSS."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from metabundle.search import freed_memory
from metabundle.search.release import Release

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="glibc's allocator, /proc")


def own_mb() -> float:
    """This process's own resident memory (RssAnon), MiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no RssAnon in /proc/self/status")


def test_memory_a_call_freed_leaves_the_process_when_the_call_ends(release: Release) -> None:
    if freed_memory._malloc_trim() is None:
        pytest.skip("not glibc")
    kept: list[np.ndarray] = []
    with release.tool_call():
        temporaries = []
        for _ in range(2000):  # 96 KB blocks, each followed by a small block that stays
            temporaries.append(np.ones(12_000))
            kept.append(np.ones(1_000))
        del temporaries  # 190 MB freed between live blocks: the allocator keeps it
        during = own_mb()
    after = own_mb()
    assert after < during - 150, (during, after)
    del kept
