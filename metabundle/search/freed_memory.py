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
(each large temporary's pages faulted in afresh).

Calls run in worker threads, and glibc gives each thread that meets contention an
allocation arena of its own (up to eight per core), whose freed memory ``malloc_trim``
returns only where whole pages are free. :func:`limit_arenas` caps them at
:data:`SERVING_ARENAS` when a release is opened for serving: after 20 s of 8 MCP clients
on the complete mirror build the server's own memory was 398 MB with glibc's default
and 307 MB with two arenas (``benchmarks/load.py``). Linux with glibc only; a no-op
elsewhere (musl, macOS, Windows).
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from functools import cache

SERVING_ARENAS = 2
M_ARENA_MAX = -8
"""glibc's ``mallopt`` parameter for the most arenas (``MALLOC_ARENA_MAX``)."""


def limit_arenas(count: int = SERVING_ARENAS) -> bool:
    """Let the allocator use at most ``count`` arenas from now on; whether it took it."""
    mallopt = _libc_function("mallopt", (ctypes.c_int, ctypes.c_int))
    return mallopt is not None and bool(mallopt(M_ARENA_MAX, count))


def give_back() -> bool:
    """Return the allocator's free memory to the system; whether any was returned."""
    trim = _libc_function("malloc_trim", (ctypes.c_size_t,))
    return trim is not None and bool(trim(0))


@cache
def _libc_function(name: str, argtypes: tuple[type, ...]) -> Callable[..., int] | None:
    """glibc's function ``name`` returning an int, or ``None`` where there is none."""
    try:
        function = getattr(ctypes.CDLL(None), name)
    except (OSError, AttributeError):  # no C library to open, or not glibc
        return None
    function.argtypes = argtypes
    function.restype = ctypes.c_int
    return function
