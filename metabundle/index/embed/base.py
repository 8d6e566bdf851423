"""The embedding provider contract shared by every provider.

:class:`Embedder` is what the build (document vectors) and the search side (query
vectors) program against; :func:`get_embedder` turns a provider name from the
configuration into one. Providers load lazily, so constructing one is cheap; a
provider that cannot load, is misconfigured, unreachable or switched off raises
:class:`EmbeddingsUnavailable`, which search turns into its typed "semantic search
unavailable" error (and ``hybrid`` into a keyword-only fallback).

:func:`normalize_text` is applied to every text before it is embedded and before
its cache key is computed, so "the same text" means the same thing everywhere.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from metabundle.extras import extra_of, install_hint

__all__ = [
    "PROVIDERS",
    "Embedder",
    "EmbeddingsUnavailable",
    "ProgressCallback",
    "get_embedder",
    "l2_normalize",
    "normalize_text",
]

#: ``progress(n)`` is called with the number of texts just finished (an increment,
#: like ``tqdm.update``), never with a running total.
ProgressCallback = Callable[[int], None]

#: Provider name -> (module, class). Modules are imported only when asked for, so
#: importing this package never loads onnxruntime, wordllama or httpx clients.
PROVIDERS: dict[str, tuple[str, str]] = {
    "minilm": ("metabundle.index.embed.minilm", "MiniLMEmbedder"),
    "wordllama": ("metabundle.index.embed.wordllama", "WordLlamaEmbedder"),
    "openai": ("metabundle.index.embed.openai_compat", "OpenAICompatEmbedder"),
}
_ALIASES = {"openai-compat": "openai", "openai_compat": "openai"}
_DISABLED = frozenset({"", "none", "off", "disabled"})

_WHITESPACE = re.compile(r"\s+")


class EmbeddingsUnavailable(Exception):
    """An embedding provider cannot load, is misconfigured, unreachable or disabled."""


@runtime_checkable
class Embedder(Protocol):
    """A text embedding model.

    ``embed`` returns a C-contiguous float32 array of shape ``(len(texts), dimension)``
    whose rows are L2-normalized (so inner product is cosine similarity), in the order
    of ``texts``. Implementations apply :func:`normalize_text` to their input.
    """

    @property
    def provider(self) -> str:
        """Short provider name, e.g. ``"minilm"``."""
        ...

    @property
    def model_id(self) -> str:
        """Stable id of the vector space, recorded in releases and cache keys."""
        ...

    @property
    def dimension(self) -> int:
        """Length of each vector."""
        ...

    @property
    def is_local(self) -> bool:
        """True when embedding runs in-process without any network call."""
        ...

    def embed(
        self, texts: Sequence[str], *, progress: ProgressCallback | None = None
    ) -> np.ndarray:
        """Embed ``texts``; see the class docstring for the result's shape."""
        ...


def normalize_text(text: str) -> str:
    """Collapse every run of (Unicode) whitespace to one space and strip the ends."""
    return _WHITESPACE.sub(" ", text).strip()


def l2_normalize(matrix: np.ndarray) -> np.ndarray:
    """Return ``matrix`` as float32 with unit-length rows; all-zero rows stay zero."""
    out = np.ascontiguousarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    np.divide(out, norms, out=out, where=norms > 0)
    return out


def get_embedder(provider: str, **options: Any) -> Embedder:
    """Build the embedder called ``provider`` (see :data:`PROVIDERS`) with ``options``.

    ``"none"``, ``"off"`` or ``"disabled"`` raise :class:`EmbeddingsUnavailable`; an
    unknown name raises :class:`ValueError` (a configuration mistake, not an outage).
    """
    name = provider.strip().lower()
    name = _ALIASES.get(name, name)
    if name in _DISABLED:
        raise EmbeddingsUnavailable("Embeddings are disabled by configuration.")
    if name not in PROVIDERS:
        known = ", ".join(sorted(PROVIDERS))
        raise ValueError(f"unknown embedding provider {provider!r} (known: {known})")
    module_name, class_name = PROVIDERS[name]
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        extra = extra_of(exc)
        if extra is not None:
            message = install_hint(extra, f"Embedding provider {name!r}", str(exc.name))
            raise EmbeddingsUnavailable(f"{message}.") from exc
        raise EmbeddingsUnavailable(
            f"Embedding provider {name!r} cannot be imported: {exc}."
        ) from exc
    embedder: Embedder = getattr(module, class_name)(**options)
    return embedder
