"""Dagster wiring: the ``Definitions`` object, resources, jobs, schedules, sensors
and the asset checks generated from the schema registry.

Load it with ``dagster dev -m metabundle.pipeline``.
"""
