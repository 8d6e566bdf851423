"""The Dagster ``Definitions``: assets, checks, resources, IO storage, and the
``build_and_publish`` job with its weekly schedule and upstream sensors."""

from __future__ import annotations

from pathlib import Path

from dagster import AssetsDefinition, Definitions, FilesystemIOManager

from metabundle.config import BuildSettings
from metabundle.orchestration.assets.release import release_assets
from metabundle.orchestration.assets.search import search_assets
from metabundle.orchestration.assets.sources import source_assets
from metabundle.orchestration.progress import Progress
from metabundle.orchestration.resources import BuildConfig


def all_assets() -> list[AssetsDefinition]:
    """Every asset of the pipeline, in graph order."""
    return [*source_assets(), *search_assets(), *release_assets()]


def resources_for(
    settings: BuildSettings | None, progress: Progress | None = None
) -> dict[str, object]:
    """Resources for a build: its configuration, progress sink and IO storage."""
    config = BuildConfig.from_settings(settings) if settings else BuildConfig()
    out = settings.out_dir if settings else Path(config.settings().out_dir)
    return {
        "build_config": config,
        "progress": progress or Progress(),
        "io_manager": FilesystemIOManager(base_dir=str(out / "work" / "dagster_io")),
    }


def build_definitions() -> Definitions:
    """Definitions configured from ``METABUNDLE_*`` variables (for ``dagster dev``)."""
    from metabundle.orchestration.assets.publish import publish_assets
    from metabundle.orchestration.jobs import build_and_publish_job
    from metabundle.orchestration.schedules import weekly_release_schedule
    from metabundle.orchestration.sensors import upstream_sensors

    return Definitions(
        assets=[*all_assets(), *publish_assets()],
        jobs=[build_and_publish_job(BuildSettings.load())],
        schedules=[weekly_release_schedule()],
        sensors=upstream_sensors(),
        resources=resources_for(None),
    )
