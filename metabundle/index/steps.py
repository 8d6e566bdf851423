"""The search steps of a build, each cached by its inputs; no Dagster here.

1. :func:`build_search_docs` unions every source's ``search_doc`` rows and numbers
   them (``docno``) in ``doc_id`` order.
2. :func:`build_keyword_index` computes the FTS tables, the memory-mapped keyword
   arrays and the title words of the title-similarity fallback.
3. :func:`plan_embedding_shards` assigns each distinct ``embed_text`` to one shard of
   its source (the first document carrying it decides); :func:`embed_shard` fills the
   content-addressed embedding cache with one shard's texts (shards run in parallel
   under a multiprocess, Kubernetes or Celery executor, and a killed shard resumes from
   the cache); :func:`build_embeddings` then assembles every document's vector from
   the cache.
4. :func:`build_ann_indexes` builds one HNSW index per source over those vectors.
5. :func:`build_crosswalk` links every source's entities to standard OMOP concepts
   (``index/crosswalk.py``).

Each step writes into ``<cache>/search/<step>/<key>/`` where the key hashes its
inputs, so a rebuild with unchanged inputs reuses the folder.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, overload

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from metabundle.config import BuildSettings
from metabundle.db import connect
from metabundle.index.ann import (
    StoredUnitRows,
    build_source_index,
    gather_unit_rows,
)
from metabundle.index.ann_breadth import probe_rows, widen
from metabundle.index.crosswalk import CROSSWALK_INPUTS, crosswalk_table
from metabundle.index.embed import (
    CacheStats,
    Embedder,
    EmbeddingCache,
    embed_into,
    fill_cache,
    get_embedder,
)
from metabundle.index.fts import bm25_macro_sql
from metabundle.index.fts_build import build_fts_tables, write_keyword_arrays
from metabundle.index.title_words import title_words_sql
from metabundle.index.variants import (
    mine_abbreviations,
    spelling_pairs,
    variant_table,
    write_variants,
)
from metabundle.index.vector_file import (
    VECTORS_FILE,
    VectorFile,
    create_rows,
    unrelated_cosine,
)
from metabundle.meter import Meter
from metabundle.schemas import get_table, quote_identifier
from metabundle.sources.base import SearchDocContext
from metabundle.sources.registry import get_source
from metabundle.sources.steps import StagedSource
from metabundle.staging import stage_table

Reporter = Callable[[str], None]
STEP_VERSION = {
    "docs": "2",
    "keyword": "2",
    "embed_plan": "1",
    "embeddings": "2",
    "ann": "5",
    "crosswalk": "1",
}
DONE = "_stage.json"
FTS_TABLES = ("fts_term", "fts_posting", "fts_doc", "fts_form", "fts_stats", "fts_variant")


@dataclass(frozen=True)
class SearchStage:
    """The output of one search step: staged tables, release files and facts."""

    step: str
    key: str
    reused: bool
    tables: dict[str, str] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)

    def table(self, name: str) -> Path:
        return Path(self.tables[name])

    def file(self, name: str) -> Path:
        return Path(self.files[name])


def _key(step: str, *parts: str) -> str:
    digest = hashlib.sha256(f"{step}\0{STEP_VERSION[step]}".encode())
    for part in parts:
        digest.update(b"\0" + part.encode())
    return digest.hexdigest()[:24]


@contextmanager
def _stage_folder(settings: BuildSettings, step: str, key: str) -> Iterator[tuple[Path, bool]]:
    """The cached folder of a step: ``(folder, done)``; a fresh temp folder is renamed
    into place when the body finishes without error."""
    folder = settings.cache_dir / "search" / step / key
    if (folder / DONE).exists():
        yield folder, True
        return
    temp = folder.with_name(f".{key}.tmp")
    shutil.rmtree(temp, ignore_errors=True)
    temp.mkdir(parents=True)
    try:
        yield temp, False
    except BaseException:
        shutil.rmtree(temp, ignore_errors=True)
        raise
    shutil.rmtree(folder, ignore_errors=True)
    temp.rename(folder)


def _finish(folder: Path, stage: SearchStage, final: Path) -> SearchStage:
    """Rewrite paths from the temp folder to the final one and mark the step done."""

    def moved(path: str) -> str:
        return str(final / Path(path).relative_to(folder))

    done = SearchStage(
        stage.step,
        stage.key,
        False,
        {k: moved(v) for k, v in stage.tables.items()},
        {k: moved(v) for k, v in stage.files.items()},
        stage.info,
    )
    (folder / DONE).write_text(json.dumps(done.__dict__, sort_keys=True, indent=1))
    return done


def _load(folder: Path) -> SearchStage:
    data = json.loads((folder / DONE).read_text())
    data["reused"] = True
    return SearchStage(**data)


def _cached_step(
    settings: BuildSettings, step: str, key: str, make: Callable[[Path], SearchStage]
) -> SearchStage:
    final = settings.cache_dir / "search" / step / key
    with _stage_folder(settings, step, key) as (folder, done):
        if done:
            return _load(folder)
        stage = make(folder)
        return _finish(folder, stage, final)


# -- 1. search documents ----------------------------------------------------------------


def _source_docs_sql(con: duckdb.DuckDBPyConnection, name: str) -> str:
    """SELECT of one source's documents with every search_doc column (nulls filled)."""
    declared = get_table("search_doc")
    found = {row[0] for row in con.execute(f"DESCRIBE {name}_docs").fetchall()}
    extra = found - set(declared.column_names)
    if extra:
        raise AssertionError(f"{name} search docs have undeclared column {sorted(extra)[0]}")
    select = []
    for column in declared.columns:
        if column.name == "source":
            select.append(f"'{name}' AS source")
        elif column.name == "docno":
            continue
        elif column.name in found:
            select.append(quote_identifier(column.name))
        else:
            select.append(f"NULL AS {quote_identifier(column.name)}")
    return f"SELECT {', '.join(select)} FROM {name}_docs"


def build_search_docs(
    settings: BuildSettings, sources: list[StagedSource], report: Reporter
) -> SearchStage:
    """One ``search_doc`` table over every source that has search documents."""
    with_docs = sorted(sources, key=lambda s: s.source)
    key = _key("docs", *(f"{s.source}:{s.cache_key}" for s in with_docs))

    def make(folder: Path) -> SearchStage:
        counts: dict[str, int] = {}
        with connect() as con:
            con.execute(f"SET temp_directory = '{folder / '.tmp'}'")
            parts = []
            for staged in with_docs:
                tables = {n: t.path for n, t in staged.tables.items()}
                relation = get_source(staged.source).search_docs(SearchDocContext(tables, con))
                relation.to_table(f"{staged.source}_docs")
                parts.append(_source_docs_sql(con, staged.source))
                counts[staged.source] = con.execute(
                    f"SELECT count(*) FROM {staged.source}_docs"
                ).fetchall()[0][0]
            union = " UNION ALL ".join(parts)
            # each source's documents get one contiguous run of docnos (serving's source
            # masks are ranges: Release.source_ranges)
            relation = con.sql(
                "SELECT *, CAST(row_number() OVER (ORDER BY source, doc_id) - 1 AS INTEGER) "
                f"AS docno FROM ({union})"
            )
            staged_docs = stage_table(
                "search_doc", relation, folder / "search_doc.parquet", con=con
            )
            identifiers = con.sql(
                "SELECT DISTINCT lower(trim(identifier)) AS identifier, docno "
                f"FROM (SELECT unnest(identifiers) AS identifier, docno "
                f"FROM read_parquet('{staged_docs.path}')) WHERE trim(identifier) <> ''"
            )
            staged_ids = stage_table(
                "search_identifier", identifiers, folder / "search_identifier.parquet", con=con
            )
        shutil.rmtree(folder / ".tmp", ignore_errors=True)
        by_source = ", ".join(f"{source} {count:,}" for source, count in counts.items())
        report(f"{staged_docs.rows:,} search documents ({by_source})")
        tables = {"search_doc": str(staged_docs.path), "search_identifier": str(staged_ids.path)}
        return SearchStage("docs", key, False, tables, {}, {"documents": counts})

    return _cached_step(settings, "docs", key, make)


# -- 2. keyword index -------------------------------------------------------------------


def build_keyword_index(
    settings: BuildSettings, docs: SearchStage, report: Reporter
) -> SearchStage:
    """FTS tables (release tables) and keyword arrays (``fts/`` in the release), with
    the term variants the documents define (:mod:`metabundle.index.variants`)."""
    key = _key("keyword", docs.key, "title-words")

    def make(folder: Path) -> SearchStage:
        table = pq.read_table(docs.table("search_doc"), columns=["docno", "title", "body"])
        tables = build_fts_tables(table)
        with connect() as con:
            abbreviations = mine_abbreviations(con, docs.table("search_doc"))
            title_words = stage_table(
                "search_title_word",
                con.sql(title_words_sql(docs.table("search_doc"))),
                folder / "search_title_word.parquet",
                con=con,
            )
        spellings = spelling_pairs(tables["fts_term"]["term"].to_pylist())
        tables["fts_variant"] = variant_table(abbreviations, spellings)
        staged = {
            name: str(stage_table(name, tables[name], folder / f"{name}.parquet").path)
            for name in FTS_TABLES
        }
        staged["search_title_word"] = str(title_words.path)
        arrays = folder / "fts"
        write_keyword_arrays(tables, arrays)
        write_variants(tables["fts_variant"], arrays)
        files = {f"fts/{p.name}": str(p) for p in sorted(arrays.iterdir())}
        terms = tables["fts_term"].num_rows
        postings = tables["fts_posting"].num_rows
        report(
            f"keyword index: {terms:,} distinct terms in {postings:,} (term, document) "
            f"pairs; {len(abbreviations):,} abbreviations and {len(spellings):,} spelling "
            f"variants learned from the documents; {title_words.rows:,} title words"
        )
        info = {
            "fts_terms": terms,
            "fts_postings": postings,
            "fts_abbreviations": len(abbreviations),
            "fts_spellings": len(spellings),
            "title_words": title_words.rows,
        }
        return SearchStage("keyword", key, False, staged, files, info)

    return _cached_step(settings, "keyword", key, make)


def keyword_macros() -> list[str]:
    """SQL that creates the release's keyword-search macro."""
    return [bm25_macro_sql()]


# -- 3. embeddings ----------------------------------------------------------------------

#: :func:`~metabundle.index.embed.normalize_text` as SQL over a search_doc row.
NORMALIZED_TEXT_SQL = (
    "trim(regexp_replace(coalesce(nullif(embed_text, ''), title), "
    "'[\\s\\p{Z}\\x{0b}\\x{85}\\x{1c}-\\x{1f}]+', ' ', 'g'))"
)


@dataclass(frozen=True)
class EmbeddingShard:
    """One unit of embedding work: the distinct texts a source's shard owns."""

    source: str
    index: int
    texts: int
    plan: str

    @property
    def name(self) -> str:
        """``aou_0``: the shard's Dagster mapping key."""
        return f"{self.source}_{self.index}"


def _embeddings_key(docs: SearchStage, embedder: Embedder) -> str:
    return _key("embeddings", docs.key, embedder.model_id)


def plan_embedding_shards(
    settings: BuildSettings, docs: SearchStage, report: Reporter
) -> list[EmbeddingShard]:
    """The shards to embed; none when embeddings are off or already assembled.

    Each distinct normalized text belongs to the source and shard of the first
    document (in ``docno`` order) that carries it, so no two shards embed one text.
    """
    if settings.embedding_provider == "none":
        return []
    embedder = get_embedder(settings.embedding_provider)
    if (
        settings.cache_dir / "search" / "embeddings" / _embeddings_key(docs, embedder) / DONE
    ).exists():
        return []
    size = settings.embed_shard_texts
    key = _key("embed_plan", docs.key, str(size))

    def make(folder: Path) -> SearchStage:
        plan = folder / "plan.parquet"
        with connect() as con:
            con.execute(f"SET temp_directory = '{folder / '.tmp'}'")
            con.sql(
                f"""
                COPY (
                    WITH texts AS (
                        SELECT {NORMALIZED_TEXT_SQL} AS text, min_by(source, docno) AS source,
                               min(docno) AS first_docno
                        FROM read_parquet('{docs.table("search_doc")}') GROUP BY ALL
                    )
                    SELECT source, CAST((row_number() OVER (PARTITION BY source
                               ORDER BY first_docno) - 1) // {size} AS INTEGER) AS shard,
                           text
                    FROM texts ORDER BY first_docno
                ) TO '{plan}' (FORMAT parquet)
                """
            )
            rows = con.sql(
                f"SELECT source, shard, count(*) FROM read_parquet('{plan}') "
                "GROUP BY ALL ORDER BY ALL"
            ).fetchall()
        shutil.rmtree(folder / ".tmp", ignore_errors=True)
        shards = [[source, shard, count] for source, shard, count in rows]
        return SearchStage("embed_plan", key, False, {}, {"plan": str(plan)}, {"shards": shards})

    stage = _cached_step(settings, "embed_plan", key, make)
    shards = [
        EmbeddingShard(source, shard, count, str(stage.file("plan")))
        for source, shard, count in stage.info["shards"]
    ]
    total = sum(shard.texts for shard in shards)
    plural = "" if len(shards) == 1 else "s"
    report(
        f"{total:,} distinct texts, split into {len(shards):,} shard{plural} of at most "
        f"{size:,}; each shard embeds those not in the embedding cache yet"
    )
    return shards


def embed_shard(settings: BuildSettings, shard: EmbeddingShard, report: Reporter) -> CacheStats:
    """Put every text of ``shard`` into the embedding cache (embedding the missing ones)."""
    embedder = get_embedder(settings.embedding_provider)
    with connect() as con:
        texts = [
            row[0]
            for row in con.execute(
                f"SELECT text FROM read_parquet('{shard.plan}') WHERE source = ? AND shard = ?",
                [shard.source, shard.index],
            ).fetchall()
        ]
    meter = _EmbeddingMeter(report, f"embedding {shard.name}", embedder.model_id, len(texts))
    cache = EmbeddingCache(settings.cache_dir / "embeddings")
    stats = fill_cache(embedder, texts, cache, on_start=meter.start, progress=meter.advance)
    meter.close()
    return stats


class ColumnTexts(Sequence[str]):
    """The strings of an Arrow column, made Python strings only when asked for (one, or
    a slice of them): a list of every document's text and its normalized copy were
    about a gigabyte of the embedding step at 3M documents."""

    def __init__(self, column: pa.ChunkedArray) -> None:
        self._column = column

    def __len__(self) -> int:
        return len(self._column)

    @overload
    def __getitem__(self, which: int) -> str: ...

    @overload
    def __getitem__(self, which: slice) -> list[str]: ...

    def __getitem__(self, which: int | slice) -> str | list[str]:
        if isinstance(which, slice):
            start, stop, step = which.indices(len(self._column))
            if step != 1:
                return [self._column[i].as_py() for i in range(start, stop, step)]
            return self._column.slice(start, max(stop - start, 0)).to_pylist()
        return self._column[which].as_py()


class _EmbeddingMeter:
    """Reports how many texts need embedding (of ``texts``, counted as ``of`` says),
    then throughput and time left; nothing more when every text is cached."""

    def __init__(
        self, report: Reporter, what: str, model_id: str, texts: int, of: str = "texts"
    ) -> None:
        self.report, self.what, self.model_id, self.texts = report, what, model_id, texts
        self.of = of
        self.meter: Meter | None = None

    def start(self, count: int) -> None:
        if not count:
            self.report(f"{self.what}: all {self.texts:,} {self.of} already in the embedding cache")
            return
        self.report(
            f"{self.what}: {count:,} distinct texts not in the embedding cache yet (of "
            f"{self.texts:,} {self.of}); embedding them with {self.model_id}"
        )
        self.meter = Meter(self.report, self.what, count, "texts")

    def advance(self, count: int) -> None:
        if self.meter is not None:
            self.meter.advance(count)

    def close(self) -> None:
        if self.meter is not None:
            self.meter.close()


def build_embeddings(
    settings: BuildSettings,
    docs: SearchStage,
    report: Reporter,
    shard_stats: Sequence[Mapping[str, int]] | None = None,
) -> SearchStage:
    """Embed every document's ``embed_text`` (title when absent), reusing the cache.

    After :func:`embed_shard` ran over every shard (``shard_stats`` is what they did)
    this only reads the cache. With the provider ``none`` the release has no
    embeddings (keyword search only).
    """
    if settings.embedding_provider == "none":
        return SearchStage("embeddings", "none", False, info={"embedding_provider": "none"})
    embedder = get_embedder(settings.embedding_provider)
    key = _embeddings_key(docs, embedder)

    def make(folder: Path) -> SearchStage:
        table = pq.read_table(docs.table("search_doc"), columns=["title", "embed_text"])
        embed_text = table.column("embed_text")
        texts = ColumnTexts(
            pc.if_else(
                pc.fill_null(pc.not_equal(embed_text, ""), False), embed_text, table.column("title")
            )
        )
        del table, embed_text
        total = len(texts)
        meter = _EmbeddingMeter(
            report, "document vectors", embedder.model_id, total, "documents' texts"
        )
        cache = EmbeddingCache(settings.cache_dir / "embeddings")
        # every document's vector, written in the release's float16 through a map whose
        # pages are let go part by part: the step keeps none of the file resident, and
        # the release writes its embedding table from this file
        vectors = folder / "vectors.npy"
        mapped, rows = create_rows(vectors, (total, embedder.dimension), np.float16)
        stats = embed_into(
            embedder,
            texts,
            cache,
            rows,
            on_start=meter.start,
            progress=meter.advance,
            after_part=mapped.let_go,
        )
        del rows
        mapped.close()
        meter.close()
        del texts
        if shard_stats:  # the shards embedded what this step found cached
            by_shards = sum(shard["embedded"] for shard in shard_stats)
            stats["embedded"] += by_shards
            stats["cached"] -= by_shards
        report(
            f"vectors of {stats['requested']:,} documents written ({stats['unique']:,} "
            f"distinct texts: {stats['embedded']:,} embedded in this build, "
            f"{stats['cached']:,} from the embedding cache; {embedder.model_id})"
        )
        info = {
            "embedding_provider": embedder.provider,
            "embedding_model": embedder.model_id,
            "embedding_dimension": embedder.dimension,
            "embedding_is_local": embedder.is_local,
            "embedding_stats": dict(stats),
        }
        return SearchStage("embeddings", key, False, {}, {VECTORS_FILE: str(vectors)}, info)

    return _cached_step(settings, "embeddings", key, make)


# -- 4. ANN indexes ---------------------------------------------------------------------


def build_ann_indexes(
    settings: BuildSettings, docs: SearchStage, embeddings: SearchStage, report: Reporter
) -> SearchStage:
    """One ANN index per source (keys are docnos; the backend as
    :func:`~metabundle.index.ann.build_source_index` picks it, as wide as
    :func:`~metabundle.index.ann_breadth.widen` finds it needs to be with the other
    sources' documents as probes), rebuilt only when vectors change."""
    if not embeddings.files:
        return SearchStage("ann", "none", False)
    backend = settings.ann_backend
    key = _key("ann", embeddings.key, backend, "widened", "unrelated")

    def make(folder: Path) -> SearchStage:
        # the vectors are read by rows and a block at a time, none of them kept: what
        # the step holds is a few bytes a document (row numbers, hashes, sign codes)
        vectors = VectorFile(embeddings.file(VECTORS_FILE))
        search_doc = docs.table("search_doc")
        with connect() as con:
            all_docnos = _docnos(con, search_doc)
            sources = [
                row[0]
                for row in con.execute(
                    f"SELECT DISTINCT source FROM read_parquet('{search_doc}') ORDER BY source"
                ).fetchall()
            ]
            source_docnos = {source: _docnos(con, search_doc, source) for source in sources}
        files: dict[str, str] = {}
        chosen: dict[str, str] = {}
        measured: dict[str, float] = {}
        probed: dict[str, float] = {}
        breadth: dict[str, int] = {}
        for source in sources:
            keys = source_docnos.pop(source)
            matrix = StoredUnitRows(vectors, keys)
            progress = _graph_progress(report, source)
            path, recall = build_source_index(matrix, keys, folder / source, backend, progress)
            chosen[source] = path.suffix.lstrip(".")
            if recall is not None:
                measured[source] = round(recall, 4)
            reach = ""
            probes = probe_rows(keys, all_docnos)
            if probes.size:
                wide, reached = widen(path, matrix, keys, gather_unit_rows(vectors, probes))
                probed[source] = round(reached, 4)
                breadth[source] = wide
                reach = (
                    f"; searching {wide:,} wide, it finds {_percent(reached)} of the 10 "
                    f"nearest neighbours of {probes.size} other sources' documents"
                )
            files[f"ann/{path.name}"] = str(path)
            files[f"ann/{path.with_suffix('.json').name}"] = str(path.with_suffix(".json"))
            report(
                f"nearest-neighbour index for {source}: {len(keys):,} vectors, "
                f"{_index_kind(chosen[source], recall)}{reach}"
            )
        info = {
            "unrelated_cosine": unrelated_cosine(vectors),
            "ann_backend": backend,
            **{f"ann_backend.{s}": b for s, b in chosen.items()},
            **{f"ann_self_recall.{s}": r for s, r in measured.items()},
            **{f"ann_probe_recall.{s}": r for s, r in probed.items()},
            **{f"ann_breadth.{s}": b for s, b in breadth.items()},
        }
        vectors.close()
        return SearchStage("ann", key, False, {}, files, info)

    return _cached_step(settings, "ann", key, make)


def _percent(share: float) -> str:
    """``0.9987`` → ``99.9 %``."""
    return f"{share * 100:.1f} %"


def _index_kind(backend: str, recall: float | None) -> str:
    """How a source's nearest-neighbour index finds neighbours, in words: ``recall`` is
    the share of its own vectors' 10 nearest neighbours a usearch graph found (None
    when the backend was chosen by the build's settings, not measured)."""
    if recall is None:
        return f"a {backend} index (the backend this build was set to use)"
    found = f"{_percent(recall)} of its own vectors' 10 nearest neighbours"
    if backend == "usearch":
        return f"a graph (usearch) that finds {found}"
    return f"a scan of sign codes re-scored exactly ({backend}), as a graph found only {found}"


def _docnos(
    con: duckdb.DuckDBPyConnection, search_doc: Path, source: str | None = None
) -> np.ndarray:
    """The docnos of ``source``'s documents (every document's without one), ascending."""
    where = "" if source is None else "WHERE source = $source"
    found = con.execute(
        f"SELECT docno FROM read_parquet('{search_doc}') {where} ORDER BY docno",
        {} if source is None else {"source": source},
    ).fetchnumpy()
    return found["docno"].astype(np.int64)


def _graph_progress(report: Reporter, source: str) -> Callable[[int, int], None]:
    """A meter per usearch graph built for ``source`` (a sample's, then maybe the whole
    one's), closed when the graph is complete."""
    meters: dict[int, Meter] = {}
    finished: set[int] = set()

    def progress(done: int, total: int) -> None:
        if total in finished:
            return
        meter = meters.get(total)
        if meter is None:
            what = f"nearest-neighbour graph for {source}"
            meter = meters[total] = Meter(report, what, total, "vectors")
        meter.advance(done - meter.done)
        if done >= total:
            finished.add(total)
            meter.close()

    return progress


# -- 5. crosswalk -----------------------------------------------------------------------


def build_crosswalk(
    settings: BuildSettings,
    sources: list[StagedSource],
    docs: SearchStage,
    embeddings: SearchStage,
    report: Reporter,
) -> SearchStage:
    """The ``concept_crosswalk`` table and its coverage; nothing without OMOP."""
    if not any(s.source == "omop" for s in sources):
        return SearchStage("crosswalk", "none", False)
    staged = sorted(sources, key=lambda s: s.source)
    key = _key(
        "crosswalk", *(f"{s.source}:{s.cache_key}" for s in staged), docs.key, embeddings.key
    )
    tables = {
        name: table.path
        for source in staged
        for name, table in source.tables.items()
        if name in CROSSWALK_INPUTS
    }

    def make(folder: Path) -> SearchStage:
        # the vectors are read by rows (a block of concepts at a time), none kept resident
        vectors = VectorFile(embeddings.file(VECTORS_FILE)) if embeddings.files else None
        with connect() as con:
            relation, coverage = crosswalk_table(con, tables, docs.table("search_doc"), vectors)
            table = stage_table(
                "concept_crosswalk", relation, folder / "concept_crosswalk.parquet", con=con
            )
        if vectors is not None:
            vectors.close()
        report(f"{table.rows:,} links from entries of every source to standard OMOP concepts")
        return SearchStage(
            "crosswalk",
            key,
            False,
            {"concept_crosswalk": str(table.path)},
            {},
            {"coverage": coverage},
        )

    return _cached_step(settings, "crosswalk", key, make)
