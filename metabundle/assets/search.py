"""The ``search`` asset group: search documents, keyword index, embeddings, ANN."""

from dagster import AssetExecutionContext, AssetIn, AssetsDefinition, ResourceParam, asset

from metabundle.index.steps import (
    SearchStage,
    build_ann_indexes,
    build_embeddings,
    build_keyword_index,
    build_search_docs,
)
from metabundle.pipeline.progress import Progress
from metabundle.pipeline.resources import BuildConfig
from metabundle.sources.registry import SOURCES, with_dependencies
from metabundle.sources.steps import load_staged

GROUP = "search"


def _describe(context: AssetExecutionContext, stage: SearchStage) -> None:
    context.add_output_metadata(
        {
            "cache_key": stage.key,
            "reused": stage.reused,
            **{k: v for k, v in stage.info.items() if isinstance(v, str | int | float | bool)},
        }
    )


@asset(
    group_name=GROUP,
    deps=[name for spec in SOURCES.values() for name in spec.tables],
    description="One search document per searchable entity of every built source.",
)
def search_docs(
    context: AssetExecutionContext, build_config: BuildConfig, progress: ResourceParam[Progress]
) -> SearchStage:
    settings = build_config.settings()
    with progress.step("search_docs") as record:
        sources = [load_staged(settings, name) for name in with_dependencies(settings.sources)]
        stage = build_search_docs(settings, sources, progress.reporter("search_docs"))
        record.reused = {"search_docs": stage.reused}
    _describe(context, stage)
    return stage


@asset(group_name=GROUP, description="BM25 tables and memory-mapped keyword arrays.")
def keyword_index(
    context: AssetExecutionContext,
    search_docs: SearchStage,
    build_config: BuildConfig,
    progress: ResourceParam[Progress],
) -> SearchStage:
    settings = build_config.settings()
    with progress.step("keyword_index") as record:
        stage = build_keyword_index(settings, search_docs, progress.reporter("keyword_index"))
        record.reused = {"keyword_index": stage.reused}
    _describe(context, stage)
    return stage


@asset(group_name=GROUP, description="Embedding of every search document.")
def embeddings(
    context: AssetExecutionContext,
    search_docs: SearchStage,
    build_config: BuildConfig,
    progress: ResourceParam[Progress],
) -> SearchStage:
    settings = build_config.settings()
    with progress.step("embeddings") as record:
        stage = build_embeddings(settings, search_docs, progress.reporter("embeddings"))
        record.reused = {"embeddings": stage.reused, **stage.info.get("embedding_stats", {})}
    _describe(context, stage)
    return stage


@asset(
    group_name=GROUP,
    ins={"search_docs": AssetIn("search_docs"), "embeddings": AssetIn("embeddings")},
    description="One HNSW vector index per source.",
)
def ann_indexes(
    context: AssetExecutionContext,
    search_docs: SearchStage,
    embeddings: SearchStage,
    build_config: BuildConfig,
    progress: ResourceParam[Progress],
) -> SearchStage:
    settings = build_config.settings()
    with progress.step("ann_indexes") as record:
        stage = build_ann_indexes(
            settings, search_docs, embeddings, progress.reporter("ann_indexes")
        )
        record.reused = {"ann_indexes": stage.reused}
    _describe(context, stage)
    return stage


def search_assets() -> list[AssetsDefinition]:
    return [search_docs, keyword_index, embeddings, ann_indexes]
