"""A serving process gives the memory its calls freed back to the system when the last
running call ends, instead of keeping it in its RSS."""

from __future__ import annotations

import ctypes
import subprocess
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
    if freed_memory._libc_function("malloc_trim", (ctypes.c_size_t,)) is None:
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


ARENAS = """
import ctypes, sys, threading
from metabundle.search import freed_memory
if sys.argv[1] == "limited":
    assert freed_memory.limit_arenas(1)
def churn():
    for _ in range(20000):
        blocks = [bytearray(512) for _ in range(8)]
        del blocks
threads = [threading.Thread(target=churn) for _ in range(8)]
for thread in threads: thread.start()
for thread in threads: thread.join()
ctypes.CDLL(None).malloc_stats()
"""


@pytest.mark.parametrize(("mode", "most"), [("limited", 1), ("default", None)])
def test_serving_threads_share_a_bounded_number_of_arenas(mode: str, most: int | None) -> None:
    """glibc's ``malloc_stats`` lists one ``Arena N:`` per arena the threads made."""
    done = subprocess.run(
        [sys.executable, "-c", ARENAS, mode], capture_output=True, text=True, check=True
    )
    arenas = done.stderr.count("Arena ")
    if most is None:
        assert arenas > 1, done.stderr  # contention makes arenas: the check can fail
    else:
        assert arenas == most, done.stderr
