"""What ``run_sql`` accepts: one read-only SELECT, classified by DuckDB's own parser.

Defenses, outermost first: DuckDB's parser classifies the statement (exactly one, of
SELECT type, or a ``PIVOT``/``UNPIVOT``, which the parser expands into several; no
regular expressions); DuckDB's tokenizer finds calls of table functions that change
state, run SQL given as text or scan memory by address, which are refused by name;
the query then runs wrapped in a row limit in a bounded worker process
(:mod:`.sql_worker`) on a connection with external access, the file system,
extension loading and configuration changes disabled (:mod:`.engine`).
"""

from __future__ import annotations

import itertools

import duckdb

from metabundle.search.errors import SQL_ERROR, ToolError, invalid

DEFAULT_MAX_ROWS = 100
MAX_ROWS = 1000
DEFAULT_TIMEOUT_S = 10.0
MAX_SQL_CHARS = 20_000
ALLOWED_TYPES = frozenset({duckdb.StatementType.SELECT})
EXPANDED_KEYWORDS = frozenset({"pivot", "unpivot"})
"""Read-only statements the parser expands into several (a PIVOT without ``IN``)."""
REFUSED_FUNCTIONS = frozenset(
    {
        # change the database or the engine's state
        "checkpoint",
        "force_checkpoint",
        "enable_logging",
        "disable_logging",
        "truncate_duckdb_logs",
        "enable_profiling",
        "disable_profiling",
        "add_grammar_extension",
        "remove_grammar_extension",
        "register_external_resource",
        "register_external_resource_type",
        "create_external_resource",
        "destroy_external_resource",
        "deregister_external_resource",
        # run SQL given as text, past this classification
        "query",
        "query_table",
        "json_execute_serialized_sql",
        # scan Python objects or memory by address
        "arrow_scan",
        "arrow_scan_dumb",
        "python_arrow_scan",
        "pandas_scan",
        "python_map_function",
    }
)
_NAME_TOKENS = (duckdb.token_type.identifier, duckdb.token_type.keyword)


def classify(sql: str) -> str:
    """The single read-only statement in ``sql``, or an ``invalid_request``."""
    if not sql.strip():
        raise invalid("sql is empty; pass one SELECT statement.")
    if len(sql) > MAX_SQL_CHARS:
        raise invalid(f"sql is longer than {MAX_SQL_CHARS:,} characters.")
    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error as error:
        raise ToolError(SQL_ERROR, f"The SQL does not parse: {first_line(error)}") from None
    if len(statements) != 1:
        raise invalid(f"Pass exactly one statement; got {len(statements)}.")
    statement = statements[0]
    try:
        kind = statement.type
    except ValueError:  # a statement type the Python binding cannot name (UPDATE EXTENSIONS)
        raise invalid("Only SELECT statements are allowed; got another kind.") from None
    names = _called_names(statement.query)
    if kind not in ALLOWED_TYPES and not _is_expanded_select(kind, statement.query):
        name = kind.name if hasattr(kind, "name") else str(kind)
        raise invalid(f"Only SELECT statements are allowed; got {name}.")
    refused = sorted(names & REFUSED_FUNCTIONS)
    if refused:
        raise invalid(f"run_sql does not allow the table function {refused[0]}().")
    return _without_terminator(statement.query)


def bounded(query: str, max_rows: int) -> str:
    """``query`` wrapped so that the engine stops after ``max_rows + 1`` rows."""
    return f"SELECT * FROM (\n{query}\n) AS run_sql_result LIMIT {int(max_rows) + 1}"


MAX_ERROR_CHARS = 500
"""The longest engine message passed on: an error may quote a value of any size."""


def first_line(error: Exception) -> str:
    """The first line of an engine error (its message without hints or context), cut
    at :data:`MAX_ERROR_CHARS`."""
    text = str(error).strip()
    line = text.splitlines()[0] if text else type(error).__name__
    if len(line) <= MAX_ERROR_CHARS:
        return line
    return f"{line[:MAX_ERROR_CHARS]}… ({len(line):,} characters in all)"


def _tokens(query: str) -> list[tuple[str, object]]:
    """The tokens of ``query`` as (text, type), comments dropped."""
    spans = duckdb.tokenize(query)
    ends = [start for start, _ in spans[1:]] + [len(query)]
    return [
        (query[start:end].strip(), kind)
        for (start, kind), end in zip(spans, ends, strict=True)
        if kind != duckdb.token_type.comment
    ]


def _without_terminator(query: str) -> str:
    """``query`` without its trailing ``;`` and comments, so it can be wrapped."""
    end = len(query)
    for start, kind in reversed(duckdb.tokenize(query)):
        if kind != duckdb.token_type.comment and query[start:end].strip() != ";":
            break
        end = start
    return query[:end]


def _called_names(query: str) -> set[str]:
    """Lower-cased names written directly before ``(``: every function call."""
    tokens = _tokens(query)
    names = set()
    for (text, kind), (after, _) in itertools.pairwise(tokens):
        if kind in _NAME_TOKENS and after.startswith("("):
            names.add(text.strip('"').lower())
    return names


def _is_expanded_select(kind: object, query: str) -> bool:
    tokens = _tokens(query)
    return (
        kind == duckdb.StatementType.MULTI
        and bool(tokens)
        and tokens[0][0].lower() in EXPANDED_KEYWORDS
    )
