"""A file memory-mapped by a process that keeps none of its pages after each read.

A read through a memory map makes the pages around it resident in the process: the
kernel maps the whole page-cache folio around a fault, often hundreds of KB, so a few
hundred scattered reads of a release's rows file or vectors left 100 to 470 MB of them
counted in a million-document release's serving process. A :class:`MappedFile`'s
reader copies out what it needs and calls :meth:`MappedFile.let_go`
(``madvise(MADV_DONTNEED)``): the file stays in the page cache, shared by every process,
and the next read maps what it needs again without touching the disk. A build writing
gigabytes through a writable map lets go the same way: what it wrote stays in the page
cache until the kernel writes it out. Where ``madvise`` is missing (not POSIX) the
pages stay mapped until the kernel needs the memory.
"""

from __future__ import annotations

import mmap
from pathlib import Path

_DONTNEED = getattr(mmap, "MADV_DONTNEED", None) if hasattr(mmap.mmap, "madvise") else None


class MappedFile:
    """The whole of the file at ``path`` mapped, read-only unless ``writable``: ``map``
    is a buffer for numpy or pyarrow to read (or write) in place."""

    def __init__(self, path: Path, *, writable: bool = False) -> None:
        with Path(path).open("r+b" if writable else "rb") as handle:
            access = mmap.ACCESS_WRITE if writable else mmap.ACCESS_READ
            self.map = mmap.mmap(handle.fileno(), 0, access=access)

    def let_go(self) -> None:
        """Tell the kernel this process no longer needs the map's resident pages."""
        if _DONTNEED is not None and not self.map.closed:
            self.map.madvise(_DONTNEED)

    def close(self) -> None:
        """Unmap the file (no view of ``map`` may be left)."""
        self.map.close()
