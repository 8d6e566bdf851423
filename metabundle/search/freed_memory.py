"""Giving the memory a tool call freed back to the system when no call is running.

A call's large temporaries (a scan's distances over millions of sign codes, the rows
and vectors it gathers) are freed when it ends, but glibc's allocator keeps freed
memory between live blocks for later allocations, so it stays in the process's RSS.
After 250 mixed calls on a 10M-document release a serving process held 424 MB of its
own memory, and 355 MB when the freed memory was returned after each call with
``malloc_trim(0)``, which tells the kernel the free pages are no longer needed; the
latency of 120 ``search_all`` queries was the same both ways (``benchmarks/README.md``).
Fixing glibc's threshold for serving large blocks from their own mappings instead
(``MALLOC_MMAP_THRESHOLD_``) gave about the same RSS but made every call 30-50 % slower
(each large temporary's pages faulted in afresh). Linux with glibc only; a no-op
elsewhere (musl, macOS, Windows).
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from functools import cache


def give_back() -> bool:
    """Return the allocator's free memory to the system; whether any was returned."""
    trim = _malloc_trim()
    return trim is not None and bool(trim(0))


@cache
def _malloc_trim() -> Callable[[int], int] | None:
    try:
        function = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):  # no C library to open, or not glibc
        return None
    function.argtypes = (ctypes.c_size_t,)
    function.restype = ctypes.c_int
    return function
