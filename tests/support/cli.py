"""Run the real ``metabundle`` console script in a subprocess."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path


def metabundle_command() -> list[str]:
    """The installed console script next to this interpreter (else ``python -m``)."""
    script = Path(sys.executable).with_name("metabundle")
    if script.exists():
        return [str(script)]
    found = shutil.which("metabundle")
    return [found] if found else [sys.executable, "-m", "metabundle.cli"]


def clean_env(**extra: str) -> dict[str, str]:
    """The environment without any METABUNDLE_* or DAGSTER_* leaking in."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("METABUNDLE_", "DAGSTER_"))}
    env.update(extra)
    return env


def run_cli(
    *args: str, timeout: float = 1200, cwd: Path | None = None, **env: str
) -> subprocess.CompletedProcess[str]:
    """``metabundle ARGS`` (run from ``cwd`` if given) with captured output; never
    raises on a non-zero exit."""
    return subprocess.run(
        [*metabundle_command(), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=clean_env(**env),
        cwd=cwd,
        check=False,
    )
