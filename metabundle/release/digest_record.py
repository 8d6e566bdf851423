"""The digest record of an installed release: which of its files were last found to
hold their listed sha256, by inode, size and modification time, so that a process
opening the release need not hash them again (``release/integrity.py``)."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

RECORD_FORMAT = "metabundle-digest-record/1"


def digest_record_path(root: Path) -> Path:
    """Where the digest record of the release at ``root`` lives: a hidden file beside
    the release folder (inside, it would be a file the release does not list)."""
    root = root.resolve()
    return root.parent / f".{root.name}.digests.json"


def record_digests(root: Path, digests: Mapping[str, str]) -> None:
    """Record that the files of ``root`` named in ``digests`` (relative path → sha256)
    hold those digests with their present inode, size and modification time. Best
    effort: a release on a read-only disk keeps no record and is hashed per process."""
    target = digest_record_path(root)
    files = read_record(root)
    temp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    try:
        for name, digest in digests.items():
            stat = (root / name).stat()
            files[name] = [stat.st_ino, stat.st_size, stat.st_mtime_ns, digest]
        temp.write_text(json.dumps({"format": RECORD_FORMAT, "files": dict(sorted(files.items()))}))
        temp.replace(target)
    except OSError:
        with contextlib.suppress(OSError):
            temp.unlink(missing_ok=True)


def read_record(root: Path) -> dict[str, list[Any]]:
    """The digest record's files (an unreadable or foreign record counts as none)."""
    try:
        record = json.loads(digest_record_path(root).read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(record, dict) or record.get("format") != RECORD_FORMAT:
        return {}
    files = record.get("files")
    return files if isinstance(files, dict) else {}
