"""The partitioned embedding step: shards run by Dagster's multiprocess executor.

The ``embeddings`` asset of ``release_build_job`` runs under the multiprocess executor
over a sample of the shared session build's search documents (every source), with a
fresh embedding cache and small shards. It must embed every distinct text exactly once and
give every document the vector one process gives it; a shard killed mid-way must
resume from the content cache.
"""

from __future__ import annotations

import os
import pickle
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from dagster import AssetKey, DagsterInstance, execute_job, reconstructable

from metabundle.config import BuildSettings
from metabundle.db import connect
from metabundle.errors import ConfigError
from metabundle.index.embed import EmbeddingCache, get_embedder, normalize_text
from metabundle.index.steps import (
    NORMALIZED_TEXT_SQL,
    EmbeddingShard,
    SearchStage,
    build_embeddings,
    embed_shard,
)
from metabundle.orchestration.resources import BuildConfig
from metabundle.orchestration.run import release_build_job
from tests.support.build import Build

SHARD_TEXTS = 1000
#: Documents taken from each source of the session build (all of a smaller source).
SAMPLE = {"aou": 800, "dbgap": 800, "idc": 800, "omop": 800, "ukb": 2400}
PROVIDER = "wordllama"


@dataclass(frozen=True)
class PartitionedBuild:
    cache: Path
    docs: SearchStage
    embeddings: SearchStage
    shards: list[str]


@pytest.fixture(scope="module")
def partitioned(
    tmp_path_factory: pytest.TempPathFactory, mirror_build: Build
) -> Iterator[PartitionedBuild]:
    root = tmp_path_factory.mktemp("partitioned")
    stored = root / "out" / "work" / "dagster_io"
    stored.mkdir(parents=True)
    with (mirror_build.out / "work" / "dagster_io" / "search_docs").open("rb") as file:
        session_docs: SearchStage = pickle.load(file)
    sample = root / "search_doc.parquet"
    limits = " ".join(f"WHEN '{name}' THEN {count}" for name, count in SAMPLE.items())
    with connect() as con:
        con.sql(
            f"COPY (SELECT * FROM read_parquet('{session_docs.table('search_doc')}') "
            "QUALIFY row_number() OVER (PARTITION BY source ORDER BY docno) <= "
            f"CASE source {limits} END "
            f"ORDER BY docno) TO '{sample}' (FORMAT parquet)"
        )
    docs = SearchStage("docs", f"sample-{session_docs.key}", True, {"search_doc": str(sample)})
    with (stored / "search_docs").open("wb") as file:
        pickle.dump(docs, file)
    environment = {
        "METABUNDLE_OUT": str(root / "out"),
        "METABUNDLE_CACHE": str(root / "cache"),
        "METABUNDLE_EMBEDDING_PROVIDER": PROVIDER,
        "METABUNDLE_EMBED_SHARD_TEXTS": str(SHARD_TEXTS),
    }
    (root / "dagster").mkdir()
    with pytest.MonkeyPatch.context() as patch:
        for name, value in environment.items():
            patch.setenv(name, value)
        with DagsterInstance.local_temp(str(root / "dagster")) as instance:
            result = execute_job(
                reconstructable(release_build_job),
                instance,
                asset_selection=[AssetKey("embeddings")],
                run_config={"execution": {"config": {"multiprocess": {"max_concurrent": 2}}}},
            )
            assert result.success
            shards = sorted(
                str(event.step_key)
                for event in result.all_events
                if event.is_step_success and "embed_embedding_shard" in str(event.step_key)
            )
    with (stored / "search_docs").open("rb") as docs, (stored / "embeddings").open("rb") as out:
        yield PartitionedBuild(root / "cache", pickle.load(docs), pickle.load(out), shards)


def _texts(docs: SearchStage) -> list[str]:
    table = pq.read_table(docs.table("search_doc"), columns=["title", "embed_text"])
    titles, texts = table.column("title").to_pylist(), table.column("embed_text").to_pylist()
    return [text or title for text, title in zip(texts, titles, strict=True)]


def test_shards_ran_in_separate_steps(partitioned: PartitionedBuild) -> None:
    names = [key.split("[")[1].rstrip("]") for key in partitioned.shards]
    assert names == ["aou_0", "dbgap_0", "idc_0", "omop_0", "ukb_0", "ukb_1", "ukb_2"]


def test_each_distinct_text_is_embedded_once(partitioned: PartitionedBuild) -> None:
    distinct = {normalize_text(text) for text in _texts(partitioned.docs)}
    stats = partitioned.embeddings.info["embedding_stats"]
    assert stats["unique"] == stats["embedded"] == len(distinct)
    cache = EmbeddingCache(partitioned.cache / "embeddings")
    model_id = get_embedder(PROVIDER).model_id
    parts = list(cache.model_dir(model_id).glob("part-*.parquet"))
    assert len(parts) >= len(partitioned.shards)  # every shard wrote its own parts
    assert cache.count(model_id) == len(distinct)  # entries over all parts: no duplicate


def test_partitions_give_the_vectors_of_one_process(
    partitioned: PartitionedBuild, tmp_path: Path
) -> None:
    settings = BuildConfig(
        out=str(tmp_path / "out"),
        cache=str(tmp_path / "cache"),
        embedding_provider=PROVIDER,
    ).settings()
    single = build_embeddings(settings, partitioned.docs, lambda _: None)  # no shards
    assert single.info["embedding_stats"]["cached"] == 0
    np.testing.assert_array_equal(
        np.load(partitioned.embeddings.file("ann/vectors.npy")),
        np.load(single.file("ann/vectors.npy")),
    )
    assert not single.tables and not partitioned.embeddings.tables  # the release writes it


KILLABLE = """
import sys
from metabundle.db import connect
from metabundle.index.embed import cache
from metabundle.index.steps import EmbeddingShard, embed_shard
from metabundle.orchestration.resources import BuildConfig

cache.CHUNK_TEXTS = 20
settings = BuildConfig(cache=sys.argv[1], out=sys.argv[2],
                       embedding_provider="minilm").settings()
embed_shard(settings, EmbeddingShard("ukb", 0, int(sys.argv[4]), sys.argv[3]), print)
"""


def test_a_killed_shard_resumes_without_re_embedding(
    partitioned: PartitionedBuild, tmp_path: Path
) -> None:
    plan_file = next((partitioned.cache / "search" / "embed_plan").glob("*/plan.parquet"))
    plan = pq.read_table(plan_file)
    rows = plan.filter(pc.equal(plan["source"], "ukb")).slice(0, 200)
    small = tmp_path / "plan.parquet"
    pq.write_table(rows.set_column(1, "shard", pa.array([0] * 200, pa.int32())), small)
    shard = EmbeddingShard("ukb", 0, 200, str(small))
    cache_dir = tmp_path / "cache"
    model_dir = EmbeddingCache(cache_dir / "embeddings").model_dir(get_embedder("minilm").model_id)
    command = [sys.executable, "-c", KILLABLE, str(cache_dir), str(tmp_path / "out")]
    process = subprocess.Popen([*command, str(small), "200"], env=os.environ.copy())
    deadline = time.monotonic() + 120
    while len(list(model_dir.glob("part-*.parquet"))) < 2:
        assert process.poll() is None, "the shard finished or failed before it was killed"
        assert time.monotonic() < deadline
        time.sleep(0.02)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)
    kept = EmbeddingCache(cache_dir / "embeddings").count(get_embedder("minilm").model_id)
    assert 40 <= kept < 200

    settings = BuildConfig(
        out=str(tmp_path / "out"), cache=str(cache_dir), embedding_provider="minilm"
    ).settings()
    stats = embed_shard(settings, shard, lambda _: None)
    assert stats["unique"] == 200
    assert stats["cached"] == kept and stats["embedded"] == 200 - kept


@pytest.mark.parametrize("value", ["abc", "0", "-5", "1e3"])
def test_a_bad_shard_size_is_one_sentence(value: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("METABUNDLE_EMBED_SHARD_TEXTS", value)
    with pytest.raises(ConfigError, match=r"^METABUNDLE_EMBED_SHARD_TEXTS '.+' is not valid: "):
        BuildSettings.load()


def test_the_plan_normalizes_whitespace_as_the_cache_does() -> None:
    spaces = [chr(c) for c in range(0x3001) if chr(c).isspace()]
    texts = [f"{space}a{space}{space}b{space}" for space in spaces] + ["  plain\t text "]
    with connect() as con:
        sql = f"SELECT {NORMALIZED_TEXT_SQL} FROM (SELECT ?::VARCHAR AS embed_text, NULL AS title)"
        got = [con.execute(sql, [text]).fetchall()[0][0] for text in texts]
    assert got == [normalize_text(text) for text in texts]
