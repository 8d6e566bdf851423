"""Fast static embeddings from the installed ``wordllama`` package, fully offline.

WordLlama is a token-embedding table (extracted from Llama 2 70B and trained on
sentence-similarity data) averaged over a text's tokens: no transformer, thousands of
texts per second on one core, weaker semantics than MiniLM. Good for quick builds.

Offline loading: the wheel ships the weights ``weights/l2_supercat_256.safetensors`` and
the tokenizer ``tokenizers/l2_supercat_tokenizer_config.json``. We call
``WordLlama.load(config, cache_dir=<package dir>, dim=256, trunc_dim=..., disable_download
=True)``: files are resolved inside the package first, ``disable_download`` turns a
missing file into ``FileNotFoundError`` instead of an HTTP GET to huggingface.co, and the
tokenizer's Hugging Face fallback is only reached when the local file is missing, which
``disable_download`` already rules out.

Default config and dimension: ``l2_supercat`` at 256 dimensions, because that is the
only weight file inside the wheel (512/1024 would need a download) and its full width;
64 or 128 are available as Matryoshka truncations of the same file (option ``dim``) for
smaller indexes at some loss of quality.

Texts are capped at ``max_tokens`` tokens (default 512): wordllama itself pads each batch
to its longest text without truncation, so one very long text would otherwise allocate
batch x length x dim floats. Texts are length-sorted into batches for the same reason.
A text with no tokens (the empty string) embeds to the zero vector.

Importing ``wordllama`` calls ``logging.basicConfig(level=INFO)``; the import here undoes
that change to the root logger.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from metabundle.index.embed.base import (
    EmbeddingsUnavailable,
    ProgressCallback,
    l2_normalize,
    normalize_text,
)

__all__ = ["DEFAULT_CONFIG", "DEFAULT_DIM", "WordLlamaEmbedder"]

DEFAULT_CONFIG = "l2_supercat"
DEFAULT_DIM = 256
DEFAULT_MAX_TOKENS = 512
_BUNDLED_DIM = 256
_MATRYOSHKA_DIMS = (64, 128, 256)
_REPO = {"l2_supercat": "dleemiller/word-llama-l2-supercat"}


def _import_wordllama() -> Any:
    """Import wordllama, restoring the root logger its import reconfigures."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        import wordllama
    finally:
        for handler in root.handlers[:]:
            if handler not in handlers:
                root.removeHandler(handler)
        root.setLevel(level)
    return wordllama


class WordLlamaEmbedder:
    """WordLlama ``l2_supercat`` static embeddings, L2-normalized, loaded on first use.

    Options: ``dim`` (64, 128 or 256; default 256), ``max_tokens`` (default 512) and
    ``batch_size`` (texts per numpy batch, default 64).
    """

    provider = "wordllama"
    is_local = True

    def __init__(
        self, *, dim: int = DEFAULT_DIM, max_tokens: int = DEFAULT_MAX_TOKENS, batch_size: int = 64
    ) -> None:
        if dim not in _MATRYOSHKA_DIMS:
            raise EmbeddingsUnavailable(
                f"WordLlama dim {dim} is not available offline (choose one of {_MATRYOSHKA_DIMS})."
            )
        if max_tokens < 1 or batch_size < 1:
            raise ValueError("max_tokens and batch_size must be positive")
        self.dimension = dim
        self.max_tokens = max_tokens
        self.batch_size = batch_size

    @property
    def model_id(self) -> str:
        """e.g. ``dleemiller/word-llama-l2-supercat@256``; ``-max<N>`` for a non-default cap."""
        base = f"{_REPO[DEFAULT_CONFIG]}@{self.dimension}"
        return base if self.max_tokens == DEFAULT_MAX_TOKENS else f"{base}-max{self.max_tokens}"

    def _load(self) -> Any:
        return _shared_model(self.dimension, self.max_tokens)

    def embed(
        self, texts: Sequence[str], *, progress: ProgressCallback | None = None
    ) -> np.ndarray:
        """Embed ``texts`` (see :class:`~metabundle.index.embed.base.Embedder`)."""
        model = self._load()
        normalized = [normalize_text(t) for t in texts]
        # sort by character length so each padded batch holds similar lengths
        order = np.argsort(
            np.fromiter(map(len, normalized), np.int64, len(normalized)), kind="stable"
        )
        out = np.empty((len(normalized), self.dimension), dtype=np.float32)
        for start in range(0, len(order), self.batch_size):
            rows = order[start : start + self.batch_size]
            batch = [normalized[i] for i in rows]
            out[rows] = model.embed(batch, norm=False, batch_size=len(batch))
            if progress is not None:
                progress(len(rows))
        return l2_normalize(out)


_MODELS: dict[tuple[int, int], Any] = {}
_MODELS_LOCK = threading.Lock()


def _shared_model(dimension: int, max_tokens: int) -> Any:
    """The model of these settings, loaded once per process and shared by its
    embedders: a model loaded per embedder kept about 28 MB after the embedder was gone,
    which made a 10M-document build's 197 embedding shards (an embedder each) hold 6 GB."""
    key = (dimension, max_tokens)
    with _MODELS_LOCK:
        if key not in _MODELS:
            _MODELS[key] = _load_model(dimension, max_tokens)
        return _MODELS[key]


def _load_model(dimension: int, max_tokens: int) -> Any:
    try:
        wordllama = _import_wordllama()
        model = wordllama.WordLlama.load(
            DEFAULT_CONFIG,
            cache_dir=Path(wordllama.__file__).parent,
            dim=_BUNDLED_DIM,
            trunc_dim=None if dimension == _BUNDLED_DIM else dimension,
            disable_download=True,
        )
    except (ImportError, FileNotFoundError, OSError, ValueError) as exc:
        raise EmbeddingsUnavailable(f"WordLlama could not be loaded offline: {exc}.") from exc
    model.tokenizer.enable_truncation(max_length=max_tokens)
    return model
