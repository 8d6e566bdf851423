"""The guarded SQL tool: one read-only SELECT over the release, capped and timed.

Defenses, outermost first: DuckDB's own parser classifies the statement (exactly one,
of SELECT type; no regex); the connection itself is read-only with external access,
extension loading and configuration changes disabled (see :mod:`.release`), so file
and URL readers, ATTACH, COPY, INSTALL/LOAD and SET fail inside the engine; a timer
interrupts a query that runs past its time; rows are capped with ``truncated``.
"""

from __future__ import annotations

import threading
from typing import Any

import duckdb

from metabundle.search.errors import QUERY_TIMEOUT, SQL_ERROR, ToolError, invalid
from metabundle.search.jsonsafe import check_size, to_json_value
from metabundle.search.release import Release
from metabundle.search.sql_hints import sql_error

DEFAULT_MAX_ROWS = 100
MAX_ROWS = 1000
DEFAULT_TIMEOUT_S = 10.0
MAX_SQL_CHARS = 20_000
ALLOWED_TYPES = frozenset({duckdb.StatementType.SELECT})


def classify(sql: str) -> str:
    """The single SELECT statement in ``sql``, or an ``invalid_request``."""
    if not sql.strip():
        raise invalid("sql is empty; pass one SELECT statement.")
    if len(sql) > MAX_SQL_CHARS:
        raise invalid(f"sql is longer than {MAX_SQL_CHARS:,} characters.")
    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error as error:
        raise ToolError(SQL_ERROR, f"The SQL does not parse: {_first_line(error)}") from None
    if len(statements) != 1:
        raise invalid(f"Pass exactly one statement; got {len(statements)}.")
    statement = statements[0]
    try:
        kind = statement.type
    except ValueError:  # a statement type the Python binding cannot name (UPDATE EXTENSIONS)
        raise invalid("Only SELECT statements are allowed; got another kind.") from None
    if kind not in ALLOWED_TYPES:
        name = kind.name if hasattr(kind, "name") else str(kind)
        raise invalid(f"Only SELECT statements are allowed; got {name}.")
    return statement.query


def _first_line(error: Exception) -> str:
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__


def run_sql(
    release: Release,
    sql: str,
    max_rows: int = DEFAULT_MAX_ROWS,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> dict[str, Any]:
    """Run one SELECT; ``{columns, rows, row_count, truncated}``."""
    query = classify(sql)
    with release.cursor() as cur:
        timer = threading.Timer(timeout_s, cur.interrupt)
        timer.start()
        try:
            result = cur.execute(query)
            columns = [{"name": d[0], "type": str(d[1])} for d in result.description]
            rows = result.fetchmany(max_rows + 1)
        except duckdb.InterruptException:
            raise ToolError(
                QUERY_TIMEOUT, f"The query ran longer than {timeout_s:g} s and was stopped."
            ) from None
        except duckdb.Error as error:
            if not timer.is_alive():
                raise ToolError(
                    QUERY_TIMEOUT, f"The query ran longer than {timeout_s:g} s and was stopped."
                ) from None
            raise sql_error(release, query, _first_line(error), error) from None
        finally:
            timer.cancel()
    truncated = len(rows) > max_rows
    rows = rows[:max_rows]
    payload = {
        "columns": columns,
        "rows": [[to_json_value(v) for v in row] for row in rows],
        "row_count": len(rows),
        "truncated": truncated,
    }
    return check_size(payload, "select fewer rows or columns, or aggregate")
