"""Embeddings from any OpenAI-compatible ``POST {base_url}/embeddings`` endpoint.

Works with OpenAI, Ollama (``http://localhost:11434/v1``), Hugging Face TEI and vLLM.
Settings come from options, else from the environment:

* ``base_url``  - ``METABUNDLE_OPENAI_BASE_URL`` (default ``https://api.openai.com/v1``)
* ``model``     - ``METABUNDLE_OPENAI_MODEL`` (required; it names the vector space)
* ``dimension`` - ``METABUNDLE_OPENAI_DIMENSION``; when unset, one probe request on first
  use of :attr:`OpenAICompatEmbedder.dimension` or :meth:`~OpenAICompatEmbedder.embed`
* ``api_key``   - ``METABUNDLE_OPENAI_API_KEY``, else ``OPENAI_API_KEY``; optional (local
  servers need none); sent as a bearer token, never logged

``request_dimensions=True`` also sends ``dimensions`` in the request (OpenAI
text-embedding-3 models shorten their vectors); it is then part of the model id.

Texts go out in batches of ``batch_size``. 429, 5xx, timeouts and connection errors are
retried ``max_retries`` times with exponential backoff (``backoff`` * 2^attempt seconds,
capped at ``max_backoff``; a numeric ``Retry-After`` header wins when larger); any other
failure raises :class:`~metabundle.index.embed.base.EmbeddingsUnavailable`. The server's
vectors are re-normalized to unit length. ``is_local`` is False: a release built with
this provider needs the endpoint at query time.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Sequence
from types import TracebackType
from typing import Any

import httpx
import numpy as np

from metabundle.index.embed.base import (
    EmbeddingsUnavailable,
    ProgressCallback,
    l2_normalize,
    normalize_text,
)

__all__ = ["DEFAULT_BASE_URL", "OpenAICompatEmbedder"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
_RETRY_STATUS = frozenset({429, 500, 502, 503, 504})


def _env(*names: str) -> str | None:
    for name in names:
        value = os.environ.get(name, "").strip()
        if value:
            return value
    return None


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
        max_retries: int = 5,
        backoff: float = 0.5,
        max_backoff: float = 30.0,
        timeout: float = 60.0,
        request_dimensions: bool = False,
    ) -> None:
        model = model or _env("METABUNDLE_OPENAI_MODEL")
        if not model:
            raise EmbeddingsUnavailable(
                "No embedding model is configured (set METABUNDLE_OPENAI_MODEL)."
            )
        if dimension is None and (value := _env("METABUNDLE_OPENAI_DIMENSION")):
            dimension = int(value)
        if request_dimensions and dimension is None:
            raise ValueError("request_dimensions needs an explicit dimension")
        if batch_size < 1 or max_retries < 0:
            raise ValueError("batch_size must be positive and max_retries non-negative")
        self.model = model
        self.base_url = (base_url or _env("METABUNDLE_OPENAI_BASE_URL") or DEFAULT_BASE_URL).rstrip(
            "/"
        )
        self.batch_size = batch_size
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.request_dimensions = request_dimensions
        self._dimension = dimension
        key = api_key or _env("METABUNDLE_OPENAI_API_KEY", "OPENAI_API_KEY")
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._client = httpx.Client(headers=headers, timeout=timeout)
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
                    self._dimension = int(self._request(["dimension probe"]).shape[1])
        return self._dimension

    def embed(
        self, texts: Sequence[str], *, progress: ProgressCallback | None = None
    ) -> np.ndarray:
        """Embed ``texts`` (see :class:`~metabundle.index.embed.base.Embedder`)."""
        dimension = self.dimension
        out = np.empty((len(texts), dimension), dtype=np.float32)
        for start in range(0, len(texts), self.batch_size):
            batch = [normalize_text(t) for t in texts[start : start + self.batch_size]]
            vectors = self._request(batch)
            if vectors.shape[1] != dimension:
                raise EmbeddingsUnavailable(
                    f"{self.base_url} returned {vectors.shape[1]}-d vectors for {self.model!r}, "
                    f"not the configured {dimension}."
                )
            out[start : start + len(batch)] = vectors
            if progress is not None:
                progress(len(batch))
        return l2_normalize(out)

    def _request(self, batch: list[str]) -> np.ndarray:
        payload: dict[str, Any] = {"model": self.model, "input": batch}
        if self.request_dimensions:
            payload["dimensions"] = self._dimension
        response = self._post_with_retries(payload)
        return self._parse(response, len(batch))

    def _post_with_retries(self, payload: dict[str, Any]) -> httpx.Response:
        url = f"{self.base_url}/embeddings"
        for attempt in range(self.max_retries + 1):
            last = attempt == self.max_retries
            try:
                response = self._client.post(url, json=payload)
            except httpx.TransportError as exc:
                if last:
                    raise EmbeddingsUnavailable(
                        f"Embedding endpoint {url} is unreachable: {exc}."
                    ) from exc
                time.sleep(self._delay(attempt, None))
                continue
            if response.status_code in _RETRY_STATUS and not last:
                time.sleep(self._delay(attempt, response.headers.get("retry-after")))
                continue
            if response.is_success:
                return response
            raise EmbeddingsUnavailable(
                f"Embedding endpoint {url} answered HTTP {response.status_code}: "
                f"{response.text[:200]!r}."
            )
        raise AssertionError("unreachable")  # pragma: no cover

    def _delay(self, attempt: int, retry_after: str | None) -> float:
        delay = min(self.max_backoff, self.backoff * 2**attempt)
        if retry_after is not None:
            # an HTTP-date Retry-After is ignored; the exponential delay will do
            with contextlib.suppress(ValueError):
                delay = max(delay, min(self.max_backoff, float(retry_after)))
        return delay

    def _parse(self, response: httpx.Response, expected: int) -> np.ndarray:
        try:
            items = sorted(response.json()["data"], key=lambda item: item["index"])
            vectors = np.asarray([item["embedding"] for item in items], dtype=np.float32)
        except (ValueError, KeyError, TypeError) as exc:
            raise EmbeddingsUnavailable(
                f"Embedding endpoint {response.url} sent a malformed response: {exc}."
            ) from exc
        if vectors.ndim != 2 or vectors.shape[0] != expected:
            raise EmbeddingsUnavailable(
                f"Embedding endpoint {response.url} sent {vectors.shape[0]} vectors for "
                f"{expected} texts."
            )
        return vectors

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._client.close()

    def __enter__(self) -> OpenAICompatEmbedder:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
