"""Temporary folders a release is written into before one rename makes it final.

A folder is named ``.tmp-<name>-<pid>`` after the process that writes it, so that the
next writer can tell one a killed process left (its pid no longer runs) from one that
another process is still writing.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

TMP_PREFIX = ".tmp-"


def clean_stale_temps(folder: Path) -> None:
    """Remove the temporary folders in ``folder`` whose writing process has ended."""
    for temp in folder.glob(f"{TMP_PREFIX}*"):
        pid = temp.name.rsplit("-", 1)[-1]
        if pid.isdigit() and _alive(int(pid)):
            continue
        shutil.rmtree(temp, ignore_errors=True)


def _alive(pid: int) -> bool:
    """Whether process ``pid`` runs (this one always does)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
