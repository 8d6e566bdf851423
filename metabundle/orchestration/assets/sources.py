"""``raw_<source>`` and ``core_<source>`` assets, generated from the source registry.

``raw_<source>`` downloads (or revalidates) the upstream files and hands the
snapshot on; the ``core_<source>`` multi-asset parses it into one asset per table,
each with the registry's blocking checks, and records the staged tables for the
search and release steps.
"""

from collections.abc import Iterator

from dagster import (
    AssetExecutionContext,
    AssetIn,
    AssetsDefinition,
    AssetSpec,
    MaterializeResult,
    ResourceParam,
    asset,
    multi_asset,
)

from metabundle.orchestration.checks import check_specs, run_checks
from metabundle.orchestration.progress import Progress
from metabundle.orchestration.resources import BuildConfig
from metabundle.sources.base import RawSnapshot, SourceSpec
from metabundle.sources.registry import SOURCES, get_source
from metabundle.sources.steps import (
    fetch_source,
    load_staged,
    parse_source,
    record_staged,
    unchanged_files,
)


def raw_asset(spec: SourceSpec) -> AssetsDefinition:
    """The asset that fetches ``spec``'s upstream files."""

    @asset(
        name=f"raw_{spec.name}",
        group_name=f"raw_{spec.name}",
        description=f"Upstream files of {spec.title}, downloaded and cached by URL and hash.",
        kinds={"python"},
    )
    def _raw(
        context: AssetExecutionContext, build_config: BuildConfig, progress: ResourceParam[Progress]
    ) -> RawSnapshot:
        settings = build_config.settings()
        step = f"raw_{spec.name}"
        with progress.step(step) as record:
            snapshot = fetch_source(spec.name, settings, progress.reporter(step))
            record.reused = {
                "files": len(snapshot.files),
                "unchanged": unchanged_files(settings, snapshot),
            }
        context.add_output_metadata(
            {
                "files": len(snapshot.files),
                "bytes": snapshot.total_bytes,
                "upstream": snapshot.upstream,
                "upstream_version": snapshot.upstream_version or "",
                "inputs_sha256": snapshot.inputs_sha256,
            }
        )
        return snapshot

    return _raw


def core_asset(spec: SourceSpec) -> AssetsDefinition:
    """The multi-asset that parses ``spec``'s snapshot into its tables."""
    dependency_tables = [t for dep in spec.depends_on for t in get_source(dep).tables]
    specs = [
        AssetSpec(
            name,
            group_name=f"core_{spec.name}",
            deps=[f"raw_{spec.name}", *dependency_tables],
            description=f"{spec.title}: table {name}.",
            kinds={"parquet"},
        )
        for name in spec.tables
    ]

    @multi_asset(
        name=f"core_{spec.name}",
        specs=specs,
        ins={"snapshot": AssetIn(f"raw_{spec.name}")},
        check_specs=[c for name in spec.tables for c in check_specs(name)],
    )
    def _core(
        snapshot: RawSnapshot, build_config: BuildConfig, progress: ResourceParam[Progress]
    ) -> Iterator[MaterializeResult]:
        settings = build_config.settings()
        step = f"core_{spec.name}"
        with progress.step(step) as record:
            dependencies = {dep: load_staged(settings, dep) for dep in spec.depends_on}
            staged = parse_source(
                spec.name, snapshot, settings, progress.reporter(step), dependencies
            )
            record.reused = {"parse": staged.reused, "cache_key": staged.cache_key}
            record_staged(settings, staged)
            # the tables' checks, and Dagster recording each table, are part of the step
            for name in spec.tables:
                table = staged.tables[name]
                yield MaterializeResult(
                    asset_key=name,
                    metadata={"rows": table.rows, "path": str(table.path)},
                    check_results=run_checks(name, table.path),
                )

    return _core


def source_assets() -> list[AssetsDefinition]:
    """Raw and core assets of every registered source."""
    assets: list[AssetsDefinition] = []
    for spec in SOURCES.values():
        assets += [raw_asset(spec), core_asset(spec)]
    return assets
