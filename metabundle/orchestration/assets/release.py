"""The ``release`` asset: writes the release folder from the staged tables and the
search step's outputs."""

from dagster import AssetExecutionContext, AssetsDefinition, ResourceParam, asset

from metabundle.index.steps import SearchStage, keyword_macros
from metabundle.orchestration.progress import Progress
from metabundle.orchestration.resources import BuildConfig
from metabundle.release.writer import SearchArtifacts, make_release
from metabundle.sources.registry import with_dependencies
from metabundle.sources.steps import load_staged


def search_artifacts(*stages: SearchStage) -> SearchArtifacts:
    """What the search stages add to a release."""
    artifacts = SearchArtifacts(macros=keyword_macros())
    for stage in stages:
        artifacts.tables.update({name: stage.table(name) for name in stage.tables})
        artifacts.files.update({name: stage.file(name) for name in stage.files})
        artifacts.info.update({k: v for k, v in stage.info.items() if not isinstance(v, dict)})
        if "coverage" in stage.info:
            artifacts.coverage[stage.step] = stage.info["coverage"]
        artifacts.keys[stage.step] = stage.key
    return artifacts


@asset(
    group_name="release",
    description="A verified release folder (DuckDB, SQLite, Parquet, FTS arrays, ANN "
    "indexes, manifest, checksums); `current` points at it.",
)
def release(
    context: AssetExecutionContext,
    search_docs: SearchStage,
    keyword_index: SearchStage,
    embeddings: SearchStage,
    ann_indexes: SearchStage,
    crosswalk: SearchStage,
    build_config: BuildConfig,
    progress: ResourceParam[Progress],
) -> str:
    settings = build_config.settings()
    with progress.step("release") as record:
        staged = [load_staged(settings, name) for name in with_dependencies(settings.sources)]
        artifacts = search_artifacts(search_docs, keyword_index, embeddings, ann_indexes, crosswalk)
        outcome = make_release(settings, staged, artifacts, report=progress.reporter("release"))
        record.reused = {"release": outcome.up_to_date, "version": outcome.path.name}
    path = outcome.path
    context.add_output_metadata(
        {"path": str(path), "version": path.name, "up_to_date": outcome.up_to_date}
    )
    return str(path)


def release_assets() -> list[AssetsDefinition]:
    return [release]
