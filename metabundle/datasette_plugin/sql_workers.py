"""Datasette's SQL in killable worker processes: no statement outlives its time limit.

Datasette bounds a statement's time with a SQLite progress handler, which SQLite calls
only between the jumps of its virtual machine: one call of a built-in function runs to
its end however long that takes (``printf('%.*c', 2147483647, 'x')`` loops 2^31 times
past the length limit, ``trim`` with a long character set or ``instr`` over 100 kB
values take seconds, and one row may hold thousands of such calls), holding a SQL
thread all the while. Nothing can stop a thread inside SQLite, but a process can be
killed.

:class:`WorkerDatabase` therefore runs every statement of :meth:`Database.execute`
(the SQL page, canned queries, table and row pages, facets, datasette-mcp's
``execute_sql``) in one of ``num_sql_threads`` worker processes, each with its own
immutable connection prepared by every plugin's ``prepare_connection`` hook, called
with ``datasette=None`` (so it has
:func:`~metabundle.datasette_plugin.bounds.limit_connection`'s limits; Datasette's
``--load-extension`` and ``cache_size_kb`` are not applied there). The worker
applies Datasette's own time limit; the parent waits that limit plus :data:`GRACE_S`,
then kills the worker, starts another, and the statement is interrupted exactly as
Datasette's limit interrupts one (``QueryInterrupted``: "SQL query took too long", a
400). Workers are forked from a ``forkserver`` that has Datasette and its plugins
loaded, so a replacement starts in milliseconds (as with any ``multiprocessing``
child, the serving process's main script must guard its work with ``if __name__ ==
"__main__"``, as the console scripts do); they end with the database
(:meth:`WorkerDatabase.close`), when the serving process exits, or when their pipe
closes. Datasette's catalog reads (``execute_fn``: table names, columns, keys) run no
client SQL and stay on its own threads.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import re
import sys
import threading
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any

import anyio.to_thread
from datasette.database import Database, QueryInterrupted, Results
from datasette.tracer import trace
from datasette.utils import sqlite3, sqlite_timelimit  # the sqlite3 Datasette uses

NAMED_PARAMETER = re.compile(r"[:@$]([A-Za-z0-9_]+)")
"""A named parameter in SQL text (a superset: the same pattern inside a string or a
comment matches too, and is looked up in vain)."""
GRACE_S = 1.0
"""How long past its time limit a worker may take to answer before it is killed."""
JOIN_TIMEOUT_S = 5.0

_CONTEXT = multiprocessing.get_context("forkserver")
_CONTEXT.set_forkserver_preload(["datasette.plugins", __name__])


@dataclass(frozen=True)
class Statement:
    """One call of :meth:`Database.execute`, as a worker runs it."""

    sql: str
    params: Any
    truncate: bool
    time_limit_ms: int
    max_returned_rows: int


@dataclass(frozen=True)
class Answer:
    """A statement's rows (plain tuples), whether they were cut, and its columns."""

    rows: list[tuple[Any, ...]]
    truncated: bool
    description: tuple[tuple[Any, ...], ...] | None


class StatementOverran(Exception):
    """The worker did not answer within the time limit and the grace period."""


class WorkerStopped(Exception):
    """The worker's pipe closed before it answered."""


# -- the worker process ---------------------------------------------------------------


def run_statement(connection: sqlite3.Connection, statement: Statement) -> Answer | Exception:
    """Run ``statement`` under its time limit as :meth:`Database.execute` does; an
    error is returned (for the parent to raise), not raised."""
    with sqlite_timelimit(connection, statement.time_limit_ms):
        try:
            cursor = connection.cursor()
            cursor.execute(statement.sql, {} if statement.params is None else statement.params)
            if statement.truncate and statement.max_returned_rows:
                rows = cursor.fetchmany(statement.max_returned_rows + 1)
                truncated = len(rows) > statement.max_returned_rows
                rows = rows[: statement.max_returned_rows]
            else:
                rows, truncated = cursor.fetchall(), False
        except Exception as error:  # sqlite3's errors, a parameter out of range, ...
            return error
    return Answer(rows, truncated, cursor.description)


def serve_statements(channel: Connection, uri: str, database: str) -> None:
    """The worker: open ``uri``, prepare it as Datasette would, and answer each
    :class:`Statement` received on ``channel`` until the pipe closes."""
    from datasette.plugins import pm  # loads every plugin (preloaded by the forkserver)

    connection = sqlite3.connect(uri, uri=True, check_same_thread=False)
    connection.text_factory = lambda raw: str(raw, "utf-8", "replace")
    pm.hook.prepare_connection(conn=connection, database=database, datasette=None)
    while True:
        try:
            statement = channel.recv()
        except EOFError:
            return
        channel.send(run_statement(connection, statement))


# -- the parent -----------------------------------------------------------------------


class _Worker:
    """One worker process and the parent's end of its pipe."""

    def __init__(self, uri: str, database: str) -> None:
        self.channel, child = _CONTEXT.Pipe()
        self.process: BaseProcess = _CONTEXT.Process(
            target=serve_statements, args=(child, uri, database), daemon=True
        )
        self.process.start()
        child.close()

    def ask(self, statement: Statement) -> Answer | Exception:
        try:
            self.channel.send(statement)
            if not self.channel.poll(statement.time_limit_ms / 1000 + GRACE_S):
                raise StatementOverran
            return self.channel.recv()
        except (EOFError, OSError):
            raise WorkerStopped from None

    def kill(self) -> None:
        self.process.kill()
        self.process.join(JOIN_TIMEOUT_S)
        self.channel.close()


def _kill_all(workers: list[_Worker]) -> None:
    while workers:
        workers.pop().kill()


class WorkerPool:
    """Up to ``size`` workers for one database, started when first needed; a statement
    waits for a free one."""

    def __init__(self, uri: str, database: str, size: int) -> None:
        self.uri, self.database, self.size = uri, database, max(1, size)
        self._idle: list[_Worker] = []
        self._started = 0
        self._closed = False
        self._changed = threading.Condition()
        self._stop_idle = weakref.finalize(self, _kill_all, self._idle)

    def warm(self) -> None:
        """Start one worker now (and the forkserver, the first time), so that the first
        statement does not wait for them."""
        self._put_back(self._take())

    def run(self, statement: Statement) -> Answer | Exception:
        """The worker's answer to ``statement`` (blocking); raises
        :class:`StatementOverran` after killing a worker that overran."""
        worker = self._take()
        try:
            answer = worker.ask(statement)
        except BaseException:
            worker.kill()
            self._put_back(None)
            raise
        self._put_back(worker)
        return answer

    def _take(self) -> _Worker:
        with self._changed:
            while not self._idle and self._started >= self.size:
                self._changed.wait()
            if self._idle:
                return self._idle.pop()
            self._started += 1
        try:
            return _Worker(self.uri, self.database)
        except BaseException:
            self._put_back(None)
            raise

    def _put_back(self, worker: _Worker | None) -> None:
        """Return ``worker`` to the pool, or (``None``) free the place of one that is gone."""
        with self._changed:
            if worker is not None and not self._closed:
                self._idle.append(worker)
            else:
                self._started -= 1
                if worker is not None:
                    worker.kill()
            self._changed.notify()

    def close(self) -> None:
        """Kill the idle workers now, and each busy one when its statement ends."""
        with self._changed:
            self._closed = True
        self._stop_idle()


def plain_parameters(sql: str, params: Any) -> Any:
    """``params`` as plain values a worker can receive: a sequence as a list; of a
    mapping, the value of each name ``sql`` may use, looked up here, so that Datasette's
    magic parameters (``:_actor_id``, ``:_now_epoch``, ...) are computed with the
    request."""
    if params is None or not isinstance(params, Mapping):
        return None if params is None else list(params)
    values = {}
    for name in set(NAMED_PARAMETER.findall(sql)):
        with contextlib.suppress(KeyError):
            values[name] = params[name]
    return values


def as_rows(description: Any, values: list[tuple[Any, ...]]) -> list[sqlite3.Row]:
    """``values`` as the :class:`sqlite3.Row` objects Datasette's own connections
    return, keyed by the names in ``description``."""
    if not values:
        return []
    names = ", ".join('NULL AS "{}"'.format(column[0].replace('"', '""')) for column in description)
    with contextlib.closing(sqlite3.connect(":memory:")) as shaper:
        cursor = shaper.execute(f"SELECT {names}")
        return [sqlite3.Row(cursor, row) for row in values]


class WorkerDatabase(Database):
    """An immutable Datasette database whose statements run in :class:`WorkerPool`."""

    def __init__(self, ds: Any, path: str, name: str) -> None:
        super().__init__(ds, path, is_mutable=False)
        self.name = name
        self.workers = WorkerPool(f"file:{path}?immutable=1", name, ds.setting("num_sql_threads"))

    async def execute(
        self,
        sql: str,
        params: Any = None,
        truncate: bool = False,
        custom_time_limit: int | None = None,
        page_size: int | None = None,
        log_sql_errors: bool = True,
    ) -> Results:
        """:meth:`Database.execute`, in a worker."""
        time_limit_ms = self.ds.sql_time_limit_ms
        if custom_time_limit and custom_time_limit < time_limit_ms:
            time_limit_ms = custom_time_limit
        max_returned_rows = self.ds.max_returned_rows
        if max_returned_rows == (page_size or self.ds.page_size):
            max_returned_rows += 1
        plain = plain_parameters(sql, params)
        statement = Statement(sql, plain, truncate, time_limit_ms, max_returned_rows)
        with trace("sql", database=self.name, sql=sql.strip(), params=params):
            try:
                answer = await anyio.to_thread.run_sync(self.workers.run, statement)
            except StatementOverran:
                interrupted = sqlite3.OperationalError("interrupted")
                raise QueryInterrupted(interrupted, sql, params) from None
        if isinstance(answer, sqlite3.Error) and answer.args == ("interrupted",):
            raise QueryInterrupted(answer, sql, params)
        if isinstance(answer, Exception):
            if log_sql_errors:
                sys.stderr.write(f"ERROR: sql = {sql!r}, params = {params!r}: {answer}\n")
            raise answer
        return Results(
            as_rows(answer.description, answer.rows), answer.truncated, answer.description
        )

    def close(self) -> None:
        super().close()
        self.workers.close()


def run_sql_in_workers(datasette: Any) -> None:
    """Serve each immutable file database of ``datasette`` as a :class:`WorkerDatabase`
    (called at startup, before the first request)."""
    databases = {}
    for name, database in datasette.databases.items():
        if type(database) is Database and database.path and not database.is_mutable:
            replacement = WorkerDatabase(datasette, database.path, name)
            replacement.route = database.route
            replacement.workers.warm()
            database = replacement
        databases[name] = database
    datasette.databases = databases
