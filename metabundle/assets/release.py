"""The ``release`` asset: writes the release folder from the latest staged tables."""

from dagster import AssetExecutionContext, AssetsDefinition, ResourceParam, asset

from metabundle.pipeline.progress import Progress
from metabundle.pipeline.resources import BuildConfig
from metabundle.release.writer import write_release
from metabundle.sources.registry import SOURCES, with_dependencies
from metabundle.sources.steps import load_staged


def release_asset() -> AssetsDefinition:
    """The release asset, downstream of every table of every source."""
    tables = [name for spec in SOURCES.values() for name in spec.tables]

    @asset(
        name="release",
        group_name="release",
        deps=tables,
        description="A verified release folder (DuckDB, SQLite, Parquet, manifest, "
        "checksums); `current` points at it.",
    )
    def _release(
        context: AssetExecutionContext, build_config: BuildConfig, progress: ResourceParam[Progress]
    ) -> str:
        settings = build_config.settings()
        with progress.step("release"):
            staged = [load_staged(settings, name) for name in with_dependencies(settings.sources)]
            path = write_release(settings, staged, report=progress.reporter("release"))
        context.add_output_metadata({"path": str(path), "version": path.name})
        return str(path)

    return _release
