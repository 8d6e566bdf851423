"""Dagster wiring: the ``Definitions`` object, resources, jobs, schedules, sensors and
the asset checks generated from the schema registry.

Load it with ``dagster dev -m metabundle.pipeline``; ``metabundle build`` runs the
same assets in-process.
"""

from metabundle.pipeline.definitions import build_definitions

defs = build_definitions()

__all__ = ["defs"]
