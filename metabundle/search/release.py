"""Open a release for serving: a hardened read-only DuckDB connection, the
memory-mapped keyword arrays, vectors and ANN indexes, and the query embedder.

Opening is cheap (memory maps and a small manifest); ANN indexes and the embedding
model load on first use. One :class:`Release` serves many threads: every request
takes its own DuckDB cursor.
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from functools import cached_property
from pathlib import Path
from typing import Any

import duckdb
import numpy as np

from metabundle import __version__
from metabundle.errors import ReleaseError
from metabundle.extras import MissingExtra
from metabundle.index.ann import AnnIndex, open_ann_index
from metabundle.index.embed import Embedder, EmbeddingsUnavailable, get_embedder
from metabundle.index.fts import KeywordIndex
from metabundle.index.vector_file import VECTORS_FILE, VectorFile, unrelated_cosine
from metabundle.release.doc_rows import DOC_ROWS_FILE, DocRows
from metabundle.release.identifiers import IDENTIFIERS_FILE, Identifiers
from metabundle.release.integrity import DAMAGED, check_digest, check_release_files
from metabundle.release.pointer import resolve_release
from metabundle.search import freed_memory, mapped_pages
from metabundle.search.engine import DEFAULT_THREADS, open_hardened
from metabundle.search.errors import (
    EMBEDDINGS_UNAVAILABLE,
    QUERY_TIMEOUT,
    RELEASE_DAMAGED,
    ToolError,
)
from metabundle.search.sql_guard import first_line
from metabundle.search.sql_pool import SqlWorkers
from metabundle.settings import RuntimeSettings

QUERIES_KEPT = 64
TABLE_BLOCKS = "BASE_TABLE"  # duckdb_memory()'s tag of the table blocks read so far

DUCKDB_FILE = "metabundle.duckdb"


def embeddings_enabled() -> bool:
    """``METABUNDLE_EMBEDDINGS_ENABLED=0`` turns query embeddings off."""
    return RuntimeSettings.current().embeddings_enabled


def keyword_instead(cause: str) -> ToolError:
    """``embeddings_unavailable`` for ``cause``, telling search tools to use keyword
    search; ``details.cause`` lets a tool without ``method`` give its own advice."""
    return ToolError(EMBEDDINGS_UNAVAILABLE, f"{cause}; use method=keyword.", cause=cause)


def release_outdated(part: str, reads: str) -> ToolError:
    """``release_damaged`` for a release built before ``part`` existed."""
    return ToolError(
        RELEASE_DAMAGED,
        f"This release has no {part} (metabundle {__version__} reads {reads} from it); "
        "rebuild it or download a current release.",
    )


class Release:
    """A release opened read-only for searching."""

    def __init__(self, path: Path, *, memory_limit: str, threads: int) -> None:
        self.path = path
        self.manifest = check_release_files(path)
        self.version: str = self.manifest["version"]
        self.search_info: dict[str, Any] = self.manifest.get("search") or {}
        self._memory_limit = memory_limit
        self._threads = threads
        self._con = self._connect()
        self._files = {entry["path"]: entry for entry in self.manifest["files"]}
        self._lock = threading.Lock()
        self._calls = threading.Condition()
        self._calls_running = 0
        self._duckdb_trim_due = False
        self._ann: dict[str, AnnIndex] = {}
        self._embedder: Embedder | None = None
        self._query_vectors: dict[str, np.ndarray] = {}  # the latest queries' embeddings

    def _connect(self) -> duckdb.DuckDBPyConnection:
        try:
            return open_hardened(
                self.path / DUCKDB_FILE,
                memory_limit=self._memory_limit,
                threads=self._threads,
                lock=False,
            )
        except duckdb.Error as error:
            reason = first_line(error)
            raise ReleaseError(f"{DUCKDB_FILE} cannot be opened ({reason}); {DAMAGED}") from None

    @classmethod
    def open(
        cls,
        path: Path | str,
        *,
        memory_limit: str | None = None,
        threads: int = DEFAULT_THREADS,
    ) -> Release:
        """Open the release at ``path`` (a release folder, ``current`` or a build folder);
        DuckDB's memory is ``memory_limit`` or ``METABUNDLE_DUCKDB_MEMORY_MB``."""
        if memory_limit is None:
            memory_limit = f"{RuntimeSettings.current().duckdb_memory_mb}MB"
        return cls(resolve_release(Path(path)), memory_limit=memory_limit, threads=threads)

    def close(self) -> None:
        if "sql_workers" in self.__dict__:
            self.sql_workers.close()
        if self.__dict__.get("vectors") is not None:
            self.vectors.close()
        self._con.close()

    def __enter__(self) -> Release:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- SQL ------------------------------------------------------------------------

    def cursor(self) -> duckdb.DuckDBPyConnection:
        """A cursor of its own for one request (DuckDB connections are not thread-safe);
        inside a tool call, one its deadline interrupts (:class:`CallDeadline`)."""
        deadline = _CALL_DEADLINE.get()
        if deadline is None:
            return self._con.cursor()
        return deadline.watch(self._con.cursor())

    @cached_property
    def sql_workers(self) -> SqlWorkers:
        """The bounded worker processes that run ``run_sql`` (started on first use)."""
        return SqlWorkers(self.path / DUCKDB_FILE)

    def query(self, sql: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]:
        """Rows of a parameterized query of our own, on a fresh cursor."""
        with self.cursor() as cur:
            return cur.execute(sql, params or []).fetchall()

    def query_dicts(self, sql: str, params: list[Any] | None = None) -> list[dict[str, Any]]:
        with self.cursor() as cur:
            result = cur.execute(sql, params or [])
            names = [d[0] for d in result.description]
            return [dict(zip(names, row, strict=True)) for row in result.fetchall()]

    def has_table(self, name: str) -> bool:
        return bool(self.query("SELECT 1 FROM duckdb_tables() WHERE table_name = ?", [name]))

    # -- keyword --------------------------------------------------------------------

    @cached_property
    def keywords(self) -> KeywordIndex | None:
        folder = self.path / "fts"
        return KeywordIndex.open(folder) if (folder / "meta.json").exists() else None

    @cached_property
    def identifiers(self) -> Identifiers:
        """Every identifier and alias of the release's documents, memory-mapped."""
        if IDENTIFIERS_FILE not in self._files:
            raise release_outdated(IDENTIFIERS_FILE, "identifier lookups")
        return Identifiers(self._checked_file(self.path / IDENTIFIERS_FILE))

    def identified(self, identifier: str) -> tuple[int, ...]:
        """Docnos of the documents with this (normalized) identifier or alias, ascending."""
        return self.identifiers.docnos(identifier)

    @contextmanager
    def tool_call(self) -> Iterator[None]:
        """Around every tool call. Each call ends by letting the process's mapped pages
        go when they pass their budget (:meth:`trim_mapped_pages`). DuckDB's memory is
        let go (:meth:`trim_duckdb_memory`) with no query running: when a call ends
        with DuckDB over its budget and other calls still running, new calls wait until
        those have ended and the last of them has let it go. A call waiting on work that
        runs no query here (:meth:`off_connection`) does not count as running. The last
        call running also gives the memory the calls freed back to the system
        (:mod:`metabundle.search.freed_memory`)."""
        self._enter_call()
        deadline = CallDeadline(RuntimeSettings.current().call_deadline_s)
        token = _CALL_DEADLINE.set(deadline)
        try:
            yield
        except duckdb.InterruptException:
            raise deadline.passed() from None
        finally:
            _CALL_DEADLINE.reset(token)
            deadline.cancel()
            self.trim_mapped_pages()
            if self._leave_call():
                freed_memory.give_back()

    @contextmanager
    def off_connection(self) -> Iterator[None]:
        """Inside a call, around a wait on work that runs no query of this process's
        DuckDB connection (``run_sql``'s worker process): meanwhile the call does not
        count as running, so a slow query there never makes other calls wait for
        DuckDB's memory to be let go here."""
        self._leave_call()
        try:
            yield
        finally:
            self._enter_call()

    def _enter_call(self) -> None:
        """Count a call as running, once no trim of DuckDB's memory is due."""
        with self._calls:
            self._calls.wait_for(lambda: not self._duckdb_trim_due)
            self._calls_running += 1

    def _leave_call(self) -> bool:
        """Count a call as ended; the last one running lets DuckDB's memory go. Whether
        it was the last."""
        with self._calls:
            self._calls_running -= 1
            last = not self._calls_running
            if not last:
                self._duckdb_trim_due = self._duckdb_trim_due or bool(self._duckdb_excess())
                return False
            try:
                self.trim_duckdb_memory()
            finally:  # a failed trim must not keep the next calls waiting
                self._duckdb_trim_due = False
                self._calls.notify_all()
            return True

    def duckdb_held_mb(self) -> dict[str, float]:
        """The memory DuckDB holds for this release by kind (``BASE_TABLE``: the table
        blocks it has read; ``ART_INDEX``: index nodes; others: running queries), MiB."""
        rows = self.query(
            "SELECT tag, memory_usage_bytes FROM duckdb_memory() WHERE memory_usage_bytes > 0"
        )
        return {tag: int(used) / 2**20 for tag, used in rows}

    def _duckdb_excess(self) -> tuple[int, float, float] | None:
        """``(budget, table blocks MiB, index nodes and the rest MiB)`` when either
        passes ``METABUNDLE_DUCKDB_KEPT_MB``, else ``None``."""
        kept = RuntimeSettings.current().duckdb_kept_mb
        if not kept:
            return None
        held = self.duckdb_held_mb()
        blocks = held.get(TABLE_BLOCKS, 0.0)
        nodes = sum(held.values()) - blocks
        return (kept, blocks, nodes) if max(blocks, nodes) > kept else None

    def trim_duckdb_memory(self) -> str | None:
        """Let DuckDB's table blocks, and then its index nodes, go down to
        ``METABUNDLE_DUCKDB_KEPT_MB`` each when they pass it; what it let go
        (``"blocks"`` or ``"connection"``), else ``None``.

        DuckDB evicts table blocks when its memory limit falls below what it holds, so
        the limit is lowered by the blocks' excess and restored. Index nodes it cannot
        evict (a read-only database keeps every node a lookup has read); when they pass
        the budget, the connection is closed and opened again, which lets everything
        go. Called with no query running: a query's working memory may use the whole
        limit, and no cursor outlives its call."""
        excess = self._duckdb_excess()
        if excess is None:
            return None
        kept, _blocks, nodes = excess
        if nodes > kept:
            self._con.close()
            self._con = self._connect()
            return "connection"
        try:
            self._con.execute(f"SET memory_limit = '{math.ceil((nodes + kept) * 1024)}KiB'")
        except duckdb.Error:  # the limit stays: what is held cannot go
            return None
        self._con.execute(f"SET memory_limit = '{self._memory_limit}'")
        return "blocks"

    def trim_mapped_pages(self) -> bool:
        """Let this process's pages of the release's memory-mapped files go when they
        pass ``METABUNDLE_MAPPED_PAGES_MB`` (:mod:`metabundle.search.mapped_pages`);
        whether they did."""
        budget = RuntimeSettings.current().mapped_pages_mb
        if not budget or mapped_pages.mapped_mb() <= budget:
            return False
        return mapped_pages.trim(self.path) > 0

    # -- rows ---------------------------------------------------------------------

    @cached_property
    def doc_rows(self) -> DocRows:
        """The shown ``search_doc`` columns, row ``i`` = docno ``i``, memory-mapped."""
        if DOC_ROWS_FILE not in self._files:
            raise release_outdated(DOC_ROWS_FILE, "search results")
        table = DocRows(self._checked_file(self.path / DOC_ROWS_FILE))
        if table.num_rows != self.n_docs:
            raise ToolError(
                RELEASE_DAMAGED,
                f"{DOC_ROWS_FILE} holds {table.num_rows:,} rows for {self.n_docs:,} "
                f"documents; {DAMAGED}",
            )
        return table

    def shown_rows(
        self, docnos: Iterable[int], columns: Sequence[str] | None = None
    ) -> list[dict[str, Any]]:
        """The shown ``search_doc`` columns of ``docnos`` (once each, by docno), or only
        ``columns`` of them."""
        wanted = np.unique(np.fromiter(docnos, dtype=np.int64))
        if not wanted.size:
            return []
        if wanted[0] < 0 or wanted[-1] >= self.n_docs:
            raise ValueError(f"docnos must lie in 0..{self.n_docs - 1}")
        return self.doc_rows.take(wanted, columns)

    def docnos_of(self, doc_ids: Iterable[str]) -> dict[str, int]:
        """The docno of each of ``doc_ids`` the release holds."""
        return self.doc_rows.docnos_of(doc_ids)

    @cached_property
    def n_docs(self) -> int:
        return int(self.query("SELECT count(*) FROM search_doc")[0][0])

    @cached_property
    def source_ranges(self) -> dict[str, range]:
        """The docnos of each source: one contiguous run, as the build numbers documents
        by source (one aggregate query, never a row per document)."""
        rows = self.query(
            "SELECT source, min(docno), max(docno) + 1, count(*) FROM search_doc "
            "GROUP BY source ORDER BY source"
        )
        for source, start, stop, count in rows:
            if stop - start != count:
                raise ReleaseError(
                    f"search_doc numbers the documents of {source} in more than one run; {DAMAGED}"
                )
        return {source: range(start, stop) for source, start, stop, _ in rows}

    @cached_property
    def source_masks(self) -> dict[str, np.ndarray]:
        """A docno mask per source, computed once."""
        masks = {}
        for source, docnos in self.source_ranges.items():
            mask = np.zeros(self.n_docs, dtype=bool)
            mask[docnos.start : docnos.stop] = True
            masks[source] = mask
        return masks

    # -- semantic -------------------------------------------------------------------

    @cached_property
    def vectors(self) -> VectorFile | None:
        """The exact vectors, row ``i`` = docno ``i``, read by rows on demand."""
        path = self.path / VECTORS_FILE
        return VectorFile(self._checked_file(path)) if path.exists() else None

    @cached_property
    def unrelated_cosine(self) -> float | None:
        """The cosine of this release's unrelated documents
        (:func:`~metabundle.index.vector_file.unrelated_cosine`), as the build recorded
        it; a release built before it did is measured on first use (thousands of
        scattered vector reads: a third of a second from a cold disk)."""
        recorded = self.search_info.get("unrelated_cosine")
        if recorded is not None:
            return float(recorded)
        vectors = self.vectors
        return None if vectors is None else unrelated_cosine(vectors)

    def ann_backend(self, source: str) -> str:
        """The backend of ``source``'s ANN index: ``ann_backend.<source>`` of the
        release's search facts (a release built before ``auto`` names one for all)."""
        chosen = self.search_info.get(f"ann_backend.{source}")
        return str(chosen or self.search_info.get("ann_backend", "usearch"))

    def ann_index(self, source: str) -> AnnIndex | None:
        """The memory-mapped ANN index of ``source`` (None when it has none)."""
        with self._lock:
            if source not in self._ann:
                backend = self.ann_backend(source)
                path = self.path / "ann" / f"{source}.{backend}"
                if not path.exists():
                    return None
                try:
                    self._ann[source] = open_ann_index(self._checked_file(path))
                except MissingExtra as error:
                    raise ToolError(EMBEDDINGS_UNAVAILABLE, str(error)) from None
            return self._ann[source]

    def _checked_file(self, path: Path) -> Path:
        """``path`` once its sha256 matched the manifest (hashed once per process, before
        it is memory-mapped), else ``release_damaged``."""
        name = path.relative_to(self.path).as_posix()
        entry = self._files.get(name)
        if entry is None:
            raise ToolError(RELEASE_DAMAGED, f"{name} is not listed in the manifest; {DAMAGED}")
        try:
            check_digest(self.path, entry)
        except ReleaseError as error:
            raise ToolError(RELEASE_DAMAGED, str(error)) from None
        return path

    @property
    def embedding_provider(self) -> str | None:
        provider = self.search_info.get("embedding_provider")
        return None if provider in (None, "none") else str(provider)

    def embedder(self) -> Embedder:
        """The query embedder matching the release's model, or ``embeddings_unavailable``."""
        if not embeddings_enabled():
            raise keyword_instead("Query embeddings are disabled (METABUNDLE_EMBEDDINGS_ENABLED=0)")
        if self.embedding_provider is None or self.vectors is None:
            raise keyword_instead("This release was built without embeddings")
        with self._lock:
            if self._embedder is None:
                try:
                    embedder = get_embedder(self.embedding_provider)
                except EmbeddingsUnavailable as error:
                    raise ToolError(EMBEDDINGS_UNAVAILABLE, str(error)) from None
                if embedder.model_id != self.search_info.get("embedding_model"):
                    raise ToolError(
                        EMBEDDINGS_UNAVAILABLE,
                        f"The installed {self.embedding_provider} model "
                        f"({embedder.model_id}) differs from the release's "
                        f"({self.search_info.get('embedding_model')}).",
                    )
                self._embedder = embedder
            return self._embedder

    def embed_query(self, text: str) -> np.ndarray:
        """The unit vector of ``text`` under the release's model; the latest
        :data:`QUERIES_KEPT` queries' vectors are kept, so that one request that
        ranks several sources embeds its query once."""
        return self.embed_queries([text])[0]

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """The unit vectors of ``texts`` (one row each), those not kept embedded in one
        call of the model (see :meth:`embed_query`)."""
        embedder = self.embedder()  # refuses first when embeddings are off
        with self._lock:
            kept = {text: self._query_vectors.get(text) for text in texts}
        missing = list(dict.fromkeys(text for text, vector in kept.items() if vector is None))
        if missing:
            try:
                vectors = embedder.embed(missing)
            except EmbeddingsUnavailable as error:
                raise ToolError(EMBEDDINGS_UNAVAILABLE, str(error)) from None
            with self._lock:
                for text, vector in zip(missing, vectors, strict=True):
                    _keep(self._query_vectors, text, vector)
                    kept[text] = vector
        return np.vstack([kept[text] for text in texts])


def _keep(kept: dict[str, Any], key: str, value: Any) -> None:
    """Remember ``value`` under ``key``, forgetting the oldest beyond :data:`QUERIES_KEPT`."""
    if len(kept) >= QUERIES_KEPT:
        kept.pop(next(iter(kept)))
    kept[key] = value


class CallDeadline:
    """The deadline of one tool call's queries: the cursors the call opens are
    interrupted when it passes, and a cursor asked for after it is refused, so a call
    answers ``query_timeout`` instead of holding a thread. Work outside DuckDB (a scan
    of memory-mapped codes, ranking) is not interrupted; it is bounded by the indexes
    and the limits."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.ends = time.monotonic() + seconds
        self._cursors: list[duckdb.DuckDBPyConnection] = []
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None  # started by the call's first cursor

    def watch(self, cursor: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
        """``cursor``, to be interrupted at the deadline; ``query_timeout`` after it."""
        left = self.ends - time.monotonic()
        if left <= 0:
            cursor.close()
            raise self.passed()
        with self._lock:
            self._cursors.append(cursor)
            if self._timer is None:
                self._timer = threading.Timer(left, self._interrupt)
                self._timer.daemon = True
                self._timer.start()
        return cursor

    def passed(self) -> ToolError:
        return ToolError(
            QUERY_TIMEOUT, f"The call ran longer than {self.seconds:g} s and was stopped."
        )

    def _interrupt(self) -> None:
        with self._lock:
            for cursor in self._cursors:
                with contextlib.suppress(duckdb.Error):  # a cursor closed already
                    cursor.interrupt()

    def cancel(self) -> None:
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()


_CALL_DEADLINE: ContextVar[CallDeadline | None] = ContextVar("call_deadline", default=None)
"""The deadline of the tool call running in this context."""
