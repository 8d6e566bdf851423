"""The ``DAGSTER_HOME`` a build uses: ``<out>/.dagster`` with telemetry turned off."""

from __future__ import annotations

import os
from pathlib import Path

DAGSTER_YAML = """\
# Written by metabundle: keep Dagster offline.
telemetry:
  enabled: false
"""


def ensure_dagster_home(out_dir: Path) -> Path:
    """Create ``<out>/.dagster/dagster.yaml`` and point ``DAGSTER_HOME`` at it."""
    home = out_dir / ".dagster"
    home.mkdir(parents=True, exist_ok=True)
    config = home / "dagster.yaml"
    if not config.exists():
        config.write_text(DAGSTER_YAML)
    os.environ["DAGSTER_HOME"] = str(home)
    os.environ.setdefault("DAGSTER_DISABLE_TELEMETRY", "1")
    return home
