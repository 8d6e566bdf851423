"""The SQL worker: a process of its own that answers ``run_sql`` requests.

Started by :class:`~metabundle.search.sql_pool.SqlWorkers` as
``python -m metabundle.search.sql_worker DATABASE MEMORY_LIMIT THREADS ADDRESS_SPACE``.
It caps its own address space (``RLIMIT_AS``) before DuckDB loads, opens the release
with :func:`~metabundle.search.engine.open_hardened`, prints ``{"ready": true}`` and
then answers one JSON request per line on stdin (``{"sql", "max_rows"}``) with one
JSON line on stdout: ``{"result": payload}`` or a typed ``{"error": ...}``. Rows are
converted one at a time and the row and byte caps apply while fetching, so the
payload never grows past :data:`~metabundle.search.jsonsafe.MAX_PAYLOAD_BYTES`. The
parent kills a worker that overruns its time; one that runs out of memory fails its
query with ``resource_exhausted`` (or dies, and is replaced).
"""

from __future__ import annotations

import contextlib
import json
import resource
import sys
from pathlib import Path
from typing import Any

import duckdb

from metabundle.search.engine import damaged_database, open_hardened
from metabundle.search.errors import RESOURCE_EXHAUSTED, RESULT_TOO_LARGE, ToolError
from metabundle.search.jsonsafe import MAX_PAYLOAD_BYTES, check_size, to_json_value
from metabundle.search.sql_guard import bounded, classify, first_line
from metabundle.search.sql_hints import sql_error

TOO_LARGE_HINT = "select fewer rows or columns, or aggregate"


def limit_address_space(limit: int) -> None:
    """Cap this process's virtual memory at ``limit`` bytes (where the OS allows it)."""
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    with contextlib.suppress(ValueError, OSError):  # macOS may refuse it (and not enforce it)
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def out_of_memory() -> ToolError:
    return ToolError(
        RESOURCE_EXHAUSTED,
        "The query needs more memory than a SQL worker may use; narrow or aggregate it.",
    )


def too_large(size: int) -> ToolError:
    return ToolError(
        RESULT_TOO_LARGE,
        f"The result is over {size:,} bytes, past the {MAX_PAYLOAD_BYTES:,}-byte cap; "
        f"{TOO_LARGE_HINT}.",
    )


def _value_size(value: Any) -> int:
    """A cheap lower bound of a value's JSON size, read before converting it."""
    return len(value) if isinstance(value, str | bytes | bytearray) else 0


def execute(con: duckdb.DuckDBPyConnection, sql: str, max_rows: int) -> dict[str, Any]:
    """Run one guarded SELECT: ``{columns, rows, row_count, truncated}``."""
    query = classify(sql)
    with con.cursor() as cur:
        try:
            result = cur.execute(bounded(query, max_rows))
            columns = [{"name": d[0], "type": str(d[1])} for d in result.description]
            rows: list[list[Any]] = []
            size = 0
            truncated = False
            while (row := result.fetchone()) is not None:
                if len(rows) == max_rows:
                    truncated = True
                    break
                if size + sum(_value_size(v) for v in row) > MAX_PAYLOAD_BYTES:
                    raise too_large(MAX_PAYLOAD_BYTES)
                values = [to_json_value(v) for v in row]
                size += len(json.dumps(values, default=str)) + 1
                if size > MAX_PAYLOAD_BYTES:
                    raise too_large(size)
                rows.append(values)
        except duckdb.OutOfMemoryException:
            raise out_of_memory() from None
        except duckdb.Error as error:
            damaged = damaged_database(error)
            if damaged is not None:
                raise damaged from None
            raise sql_error(con, query, first_line(error), error) from None
    payload = {"columns": columns, "rows": rows, "row_count": len(rows), "truncated": truncated}
    return check_size(payload, TOO_LARGE_HINT)


def answer(con: duckdb.DuckDBPyConnection, request: dict[str, Any]) -> dict[str, Any]:
    """The reply to one request: ``{"result": ...}`` or an error payload."""
    try:
        return {"result": execute(con, request["sql"], int(request["max_rows"]))}
    except ToolError as error:
        return error.payload()
    except MemoryError:
        return out_of_memory().payload()


def main(argv: list[str]) -> None:
    database, memory_limit, threads, address_space = argv
    limit_address_space(int(address_space))
    con = open_hardened(Path(database), memory_limit=memory_limit, threads=int(threads))
    out = sys.stdout.buffer
    out.write(b'{"ready": true}\n')
    out.flush()
    for line in sys.stdin.buffer:
        reply = answer(con, json.loads(line))
        out.write(json.dumps(reply, ensure_ascii=False, default=str).encode() + b"\n")
        out.flush()


if __name__ == "__main__":
    main(sys.argv[1:])
