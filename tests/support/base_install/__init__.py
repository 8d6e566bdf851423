"""Run the installed ``metabundle`` as a base install (no extras) would run it: the
interpreter's distributions outside the base dependencies' closure cannot be imported
(``site/base_closure.py``, installed at start-up by ``site/sitecustomize.py``)."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from types import ModuleType

from tests.support.cli import clean_env

SITE = Path(__file__).resolve().parent / "site"


def base_install_env(**extra: str) -> dict[str, str]:
    """:func:`tests.support.cli.clean_env` with ``site`` first on ``PYTHONPATH``, so the
    process and its children import only what a base install holds."""
    env = clean_env(**extra)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(SITE), env.get("PYTHONPATH")) if p)
    return env


def base_closure() -> ModuleType:
    """``site/base_closure.py``, loaded without installing its import hook."""
    spec = importlib.util.spec_from_file_location("base_closure", SITE / "base_closure.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
