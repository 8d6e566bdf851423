"""Guarded SQL in bounded worker processes: no query can take the server down.

``run_sql`` hands each query to one of a few :mod:`.sql_worker` processes. Each worker
caps its address space at :data:`WORKER_ADDRESS_SPACE` (``RLIMIT_AS``) and its DuckDB
at :data:`WORKER_MEMORY_LIMIT`, so a query that builds huge values fails there, not
in the serving process. The parent waits at most the timeout for the whole answer
(parse, bind, execute and JSON conversion all happen in the worker); a worker that
overruns is killed and replaced, and its query answers ``query_timeout``; a worker
that dies, or runs out of memory, answers ``resource_exhausted`` and is replaced.
Workers start on the first query and stop with the release (or when the serving
process exits: they read their stdin to EOF).
"""

from __future__ import annotations

import json
import os
import queue
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from metabundle.search.errors import (
    INTERNAL_ERROR,
    QUERY_TIMEOUT,
    RESOURCE_EXHAUSTED,
    ToolError,
    invalid,
)
from metabundle.search.sql_guard import DEFAULT_MAX_ROWS, DEFAULT_TIMEOUT_S, MAX_SQL_CHARS
from metabundle.search.sql_worker import out_of_memory
from metabundle.settings import RuntimeSettings

WORKER_MEMORY_LIMIT = "1GB"
"""DuckDB's own memory limit inside a worker."""
WORKER_ADDRESS_SPACE = 3 * 1024**3
"""``RLIMIT_AS`` of a worker: its whole virtual memory, DuckDB and Python together."""
WORKER_THREADS = 2
STARTUP_TIMEOUT_S = 60.0
READ_BYTES = 1 << 20


def worker_count() -> int:
    """``METABUNDLE_SQL_WORKERS`` (at least 1; default 2)."""
    return RuntimeSettings.load().sql_workers


class _Overran(Exception):
    """The worker did not answer in time."""


class _Died(Exception):
    """The worker's output ended: it exited or was killed."""


class SqlWorker:
    """One worker process and the pipe it answers on."""

    def __init__(self, database: Path) -> None:
        command = [
            sys.executable,
            "-m",
            "metabundle.search.sql_worker",
            str(database),
            WORKER_MEMORY_LIMIT,
            str(WORKER_THREADS),
            str(WORKER_ADDRESS_SPACE),
        ]
        self.process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
        )
        self._pending = b""
        try:
            ready = self._read_line(time.monotonic() + STARTUP_TIMEOUT_S)
        except (_Overran, _Died):
            self.kill()
            raise ToolError(INTERNAL_ERROR, "The SQL worker did not start.") from None
        if json.loads(ready) != {"ready": True}:
            self.kill()
            raise ToolError(INTERNAL_ERROR, "The SQL worker did not start.")

    def ask(self, request: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        """The worker's reply to ``request`` within ``timeout_s``."""
        assert self.process.stdin is not None
        try:
            self.process.stdin.write(json.dumps(request).encode() + b"\n")
            self.process.stdin.flush()
        except OSError:
            raise _Died from None
        return json.loads(self._read_line(time.monotonic() + timeout_s))

    def _read_line(self, deadline: float) -> bytes:
        assert self.process.stdout is not None
        descriptor = self.process.stdout.fileno()
        while b"\n" not in self._pending:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise _Overran
            readable, _, _ = select.select([descriptor], [], [], remaining)
            if readable:
                chunk = os.read(descriptor, READ_BYTES)
                if not chunk:
                    raise _Died
                self._pending += chunk
        line, _, self._pending = self._pending.partition(b"\n")
        return line

    def alive(self) -> bool:
        return self.process.poll() is None

    def kill(self) -> None:
        self.process.kill()
        self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                stream.close()


class SqlWorkers:
    """A few workers shared by the threads of one serving process."""

    def __init__(self, database: Path, size: int | None = None) -> None:
        self.database = database
        self.size = size or worker_count()
        self._idle: queue.LifoQueue[SqlWorker | None] = queue.LifoQueue()
        for _ in range(self.size):
            self._idle.put(None)

    def run(self, sql: str, max_rows: int, timeout_s: float) -> dict[str, Any]:
        """The worker's payload for one query, or the typed error it answered."""
        try:
            worker = self._idle.get(timeout=timeout_s)
        except queue.Empty:
            raise ToolError(
                QUERY_TIMEOUT,
                f"All {self.size} SQL workers stayed busy for {timeout_s:g} s; try again.",
            ) from None
        try:
            if worker is None or not worker.alive():
                worker = SqlWorker(self.database)
            reply = worker.ask({"sql": sql, "max_rows": max_rows}, timeout_s)
            if reply.get("error", {}).get("code") == RESOURCE_EXHAUSTED:
                worker = _discard(worker)  # its allocator may keep what it reserved
        except _Overran:
            worker = _discard(worker)
            raise ToolError(
                QUERY_TIMEOUT, f"The query ran longer than {timeout_s:g} s and was stopped."
            ) from None
        except _Died:
            worker = _discard(worker)
            raise out_of_memory() from None
        finally:
            self._idle.put(worker)
        if "error" in reply:
            error = reply["error"]
            raise ToolError(error["code"], error["message"], **error.get("details", {}))
        return reply["result"]

    def idle_pids(self) -> list[int]:
        """Process ids of the started workers not running a query now."""
        held = []
        while True:
            try:
                held.append(self._idle.get_nowait())
            except queue.Empty:
                break
        for worker in held:
            self._idle.put(worker)
        return [w.process.pid for w in held if w is not None and w.alive()]

    def close(self) -> None:
        """Stop every started worker."""
        while True:
            try:
                worker = self._idle.get_nowait()
            except queue.Empty:
                return
            if worker is not None:
                worker.kill()


def _discard(worker: SqlWorker | None) -> None:
    if worker is not None:
        worker.kill()


def run_sql(
    workers: SqlWorkers,
    sql: str,
    max_rows: int = DEFAULT_MAX_ROWS,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> dict[str, Any]:
    """Run one guarded SELECT in a worker; ``{columns, rows, row_count, truncated}``."""
    if len(sql) > MAX_SQL_CHARS:
        raise invalid(f"sql is longer than {MAX_SQL_CHARS:,} characters.")
    return workers.run(sql, max_rows, timeout_s)
