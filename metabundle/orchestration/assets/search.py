"""The ``search`` asset group: search documents, keyword index, embeddings, ANN.

``embeddings`` is a graph of three ops: ``embedding_shards`` plans one dynamic output
per source and shard of distinct texts, ``embed_shard`` runs once per shard (in
parallel under a multiprocess, Kubernetes or Celery executor; each fills the shared
content-addressed cache, so a rerun resumes where a killed shard stopped), and
``assemble_embeddings`` writes the vectors of every document from the cache.
"""

from collections.abc import Callable, Iterator

from dagster import (
    AssetExecutionContext,
    AssetIn,
    AssetsDefinition,
    DynamicOut,
    DynamicOutput,
    OpExecutionContext,
    ResourceParam,
    asset,
    graph_asset,
    op,
)

from metabundle.config import BuildSettings
from metabundle.index.steps import (
    EmbeddingShard,
    Reporter,
    SearchStage,
    build_ann_indexes,
    build_crosswalk,
    build_embeddings,
    build_keyword_index,
    build_search_docs,
    embed_shard,
    plan_embedding_shards,
)
from metabundle.orchestration.progress import Progress, shard_step
from metabundle.orchestration.resources import BuildConfig
from metabundle.sources.registry import SOURCES, with_dependencies
from metabundle.sources.steps import load_staged

GROUP = "search"


def _run_step(
    name: str,
    context: AssetExecutionContext | OpExecutionContext,
    build_config: BuildConfig,
    progress: Progress,
    step: Callable[[BuildSettings, Reporter], SearchStage],
) -> SearchStage:
    """Run one search step under ``progress`` and describe its output to Dagster."""
    settings = build_config.settings()
    with progress.step(name) as record:
        stage = step(settings, progress.reporter(name))
        record.reused = {name: stage.reused, **stage.info.get("embedding_stats", {})}
    scalars = {k: v for k, v in stage.info.items() if isinstance(v, str | int | float | bool)}
    context.add_output_metadata({"cache_key": stage.key, "reused": stage.reused, **scalars})
    return stage


@asset(
    group_name=GROUP,
    deps=[name for spec in SOURCES.values() for name in spec.tables],
    description="One search document per searchable entity of every built source.",
)
def search_docs(
    context: AssetExecutionContext, build_config: BuildConfig, progress: ResourceParam[Progress]
) -> SearchStage:
    def step(settings: BuildSettings, report: Reporter) -> SearchStage:
        sources = [load_staged(settings, name) for name in with_dependencies(settings.sources)]
        return build_search_docs(settings, sources, report)

    return _run_step("search_docs", context, build_config, progress, step)


@asset(group_name=GROUP, description="BM25 tables and memory-mapped keyword arrays.")
def keyword_index(
    context: AssetExecutionContext,
    search_docs: SearchStage,
    build_config: BuildConfig,
    progress: ResourceParam[Progress],
) -> SearchStage:
    return _run_step(
        "keyword_index",
        context,
        build_config,
        progress,
        lambda settings, report: build_keyword_index(settings, search_docs, report),
    )


@op(out=DynamicOut(EmbeddingShard))
def embedding_shards(
    search_docs: SearchStage, build_config: BuildConfig, progress: ResourceParam[Progress]
) -> Iterator[DynamicOutput[EmbeddingShard]]:
    """One output per source and shard of distinct texts still to embed."""
    settings = build_config.settings()
    with progress.step("embedding_shards") as record:
        shards = plan_embedding_shards(settings, search_docs, progress.reporter("embedding_shards"))
        record.reused = {"shards": len(shards), "texts": sum(shard.texts for shard in shards)}
    for shard in shards:
        yield DynamicOutput(shard, mapping_key=shard.name)
    if not shards:  # nothing to embed: one empty shard keeps the graph going
        yield DynamicOutput(EmbeddingShard("none", 0, 0, ""), mapping_key="none")


@op
def embed_embedding_shard(
    shard: EmbeddingShard, build_config: BuildConfig, progress: ResourceParam[Progress]
) -> dict[str, int]:
    """Fill the embedding cache with one shard's texts; what it did (:class:`CacheStats`)."""
    if not shard.texts:
        return {"requested": 0, "unique": 0, "cached": 0, "embedded": 0}
    step = shard_step(shard.name)
    with progress.step(step) as record:
        stats = dict(embed_shard(build_config.settings(), shard, progress.reporter(step)))
        record.reused = stats
    return stats


@op
def assemble_embeddings(
    context: OpExecutionContext,
    search_docs: SearchStage,
    shard_stats: list[dict[str, int]],
    build_config: BuildConfig,
    progress: ResourceParam[Progress],
) -> SearchStage:
    """Every document's vector, read from the cache the shards filled."""
    return _run_step(
        "embeddings",
        context,
        build_config,
        progress,
        lambda settings, report: build_embeddings(settings, search_docs, report, shard_stats),
    )


@graph_asset(group_name=GROUP, description="Embedding of every search document.")
def embeddings(search_docs: SearchStage) -> SearchStage:
    shard_stats = embedding_shards(search_docs).map(embed_embedding_shard).collect()
    return assemble_embeddings(search_docs, shard_stats)


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
    return _run_step(
        "ann_indexes",
        context,
        build_config,
        progress,
        lambda settings, report: build_ann_indexes(settings, search_docs, embeddings, report),
    )


@asset(
    group_name=GROUP,
    ins={"search_docs": AssetIn("search_docs"), "embeddings": AssetIn("embeddings")},
    description="Links from every source's entities to standard OMOP concepts.",
)
def crosswalk(
    context: AssetExecutionContext,
    search_docs: SearchStage,
    embeddings: SearchStage,
    build_config: BuildConfig,
    progress: ResourceParam[Progress],
) -> SearchStage:
    def step(settings: BuildSettings, report: Reporter) -> SearchStage:
        sources = [load_staged(settings, name) for name in with_dependencies(settings.sources)]
        return build_crosswalk(settings, sources, search_docs, embeddings, report)

    return _run_step("crosswalk", context, build_config, progress, step)


def search_assets() -> list[AssetsDefinition]:
    return [search_docs, keyword_index, embeddings, ann_indexes, crosswalk]
