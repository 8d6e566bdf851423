"""A serving process's resident pages of a release's memory-mapped files, kept under a
budget.

Keyword arrays, ANN indexes and the rows file are memory-mapped, so what a query reads
stays resident until the kernel needs the memory: after 250 mixed calls on a
1.4M-document release a process held 1.26 GB of such pages (and 0.38 GB of its own),
most of them vectors, which are now read by rows instead
(:mod:`metabundle.index.vector_file`).
They are page cache, shared with every process serving the same release, but they
count in the process's RSS. When the mapped pages of a process pass the budget
(``METABUNDLE_MAPPED_PAGES_MB``), :func:`trim` tells the kernel that the process no
longer needs its pages of the release's files (``madvise(MADV_DONTNEED)`` on each
read-only mapping of a file inside the release folder); the files stay in the page
cache, and the next read maps them back without touching the disk. Linux only; a no-op
elsewhere.
"""

from __future__ import annotations

import ctypes
import mmap
import os
from collections.abc import Callable
from functools import cache
from pathlib import Path

PAGE_BYTES = mmap.PAGESIZE
_STATM = Path("/proc/self/statm")
_MAPS = Path("/proc/self/maps")


def mapped_mb() -> float:
    """This process's resident file-backed and shared pages in MiB (0 where ``/proc``
    is missing)."""
    try:
        fields = _STATM.read_text().split()
    except OSError:
        return 0.0
    return int(fields[2]) * PAGE_BYTES / 2**20


def trim(folder: Path) -> int:
    """Drop this process's resident pages of read-only mappings of files under
    ``folder``; the number of mappings trimmed."""
    madvise = _madvise()
    if madvise is None:
        return 0
    prefix = str(folder.resolve()) + os.sep
    trimmed = 0
    for line in _MAPS.read_text().splitlines():
        parts = line.split(maxsplit=5)
        if len(parts) < 6 or not parts[5].startswith(prefix) or "w" in parts[1]:
            continue
        start, end = (int(address, 16) for address in parts[0].split("-"))
        if madvise(ctypes.c_void_p(start), ctypes.c_size_t(end - start), mmap.MADV_DONTNEED) == 0:
            trimmed += 1
    return trimmed


@cache
def _madvise() -> Callable[..., int] | None:
    if not (_MAPS.exists() and hasattr(mmap, "MADV_DONTNEED")):
        return None
    function = ctypes.CDLL(None, use_errno=True).madvise
    function.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    function.restype = ctypes.c_int
    return function
