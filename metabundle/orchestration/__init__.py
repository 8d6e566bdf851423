"""Everything Dagster, in one package: the assets (``assets/``), the ``Definitions``
object, resources, the one asset selection, jobs, schedules, sensors and the asset
checks generated from the schema registry. Nothing outside this package imports
Dagster; the logic the assets run lives in ``sources``, ``index`` and ``release``.

Load it with ``dagster dev -m metabundle.orchestration``; ``metabundle build`` runs the
same assets in-process. ``defs`` is built on first access, so that importing a
module of this package (as the assets do) does not build the definitions.
"""

from __future__ import annotations

from typing import Any

__all__ = ["defs"]


def __getattr__(name: str) -> Any:
    if name == "defs":
        from metabundle.orchestration.definitions import build_definitions

        value = build_definitions()
        globals()["defs"] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), "defs"})
