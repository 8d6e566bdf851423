"""Run the real ``metabundle`` console script in a subprocess."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any


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


def run_python_json(script: str, *args: str, timeout: float = 600) -> Any:
    """Run ``script`` in a fresh interpreter with ``args``; the JSON it prints (the test
    fails with the child's stderr when it exits non-zero)."""
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        capture_output=True,
        text=True,
        env=clean_env(),
        check=False,
        timeout=timeout,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)
