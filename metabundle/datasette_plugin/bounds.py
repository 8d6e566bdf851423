"""Bounds on what one Datasette request may cost, and typed errors for every failure.

- Every SQLite connection gets value and statement size limits
  (:data:`MAX_VALUE_BYTES`, :data:`MAX_SQL_BYTES`), so ``zeroblob(1000000000)`` or
  ``repeat``-style growth fails inside SQLite with "string or blob too big" instead of
  filling memory, and an authorizer that refuses the functions of
  :data:`DENIED_FUNCTIONS` when a statement is prepared. Time is bounded by running
  each statement in a killable worker (:mod:`.sql_workers`).
- :class:`BoundedApp` wraps the ASGI app: a request body over :data:`MAX_BODY_BYTES`
  is refused with a 413 ``invalid_request`` (by its ``Content-Length`` before it is
  read, else as soon as the bytes received pass the cap), a write method (POST, PUT,
  ...) outside the ``/-/`` routes is an ``invalid_request`` (the release is
  read-only), a response body over :data:`MAX_RESPONSE_BYTES` is replaced by a
  ``result_too_large`` error, and a server error (an exception, or a status 500
  outside the plugin's own typed routes) by a typed ``internal_error`` with no Python
  text.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from metabundle.search.errors import INTERNAL_ERROR, INVALID_REQUEST, RESULT_TOO_LARGE, ToolError

MAX_VALUE_BYTES = 100_000
"""Longest string or blob SQLite may build (the longest text in a release is ~17 kB)."""
MAX_SQL_BYTES = 100_000
MAX_RESPONSE_BYTES = 20_000_000
MAX_BODY_BYTES = 1_000_000
"""Largest request body (the biggest tool call, a 20,000-character ``run_sql``, is far
below it)."""
BODY_TOO_LARGE_STATUS = 413
DENIED_FUNCTIONS = frozenset({"fts3_tokenizer"})
"""SQL functions no statement may call: ``fts3_tokenizer(name)`` returns the address of
a tokenizer in the server's memory, and ``fts3_tokenizer(name, pointer)`` installs a
tokenizer from any address (SQLite's documented memory-corruption risk)."""
READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
PLUGIN_PATHS = ("/-/api", "/-/search")
"""The plugin's own routes, which answer their errors typed already."""

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


def authorize(
    action: int, arg1: str | None, arg2: str | None, database: str | None, source: str | None
) -> int:
    """SQLite's authorizer callback: deny a call of a function of
    :data:`DENIED_FUNCTIONS` (whose name SQLite passes as ``arg2``), allow the rest."""
    if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() in DENIED_FUNCTIONS:
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK


def limit_connection(conn: sqlite3.Connection) -> None:
    """Cap the size of any value and of any statement on ``conn``, and refuse the
    functions of :data:`DENIED_FUNCTIONS` ("not authorized to use function")."""
    conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES)
    conn.setlimit(sqlite3.SQLITE_LIMIT_SQL_LENGTH, MAX_SQL_BYTES)
    conn.set_authorizer(authorize)


def _error_body(error: ToolError) -> bytes:
    return json.dumps(error.payload()).encode()


SERVER_ERROR = ToolError(INTERNAL_ERROR, "The server could not answer this request.")
READ_ONLY = ToolError(
    INVALID_REQUEST,
    "The release is read-only: its databases and tables answer GET only "
    "(the search API takes POST at /-/api/<tool>).",
)
TOO_LARGE = ToolError(
    RESULT_TOO_LARGE,
    f"The response is over the {MAX_RESPONSE_BYTES:,}-byte cap; select fewer rows or columns.",
)
BODY_TOO_LARGE = ToolError(
    INVALID_REQUEST, f"The request body is over the {MAX_BODY_BYTES:,}-byte cap."
)


class BodyTooLarge(Exception):
    """Raised to the app by :class:`_Body` once the body received passes the cap."""


def declared_length(scope: Scope) -> int:
    """The request's ``Content-Length`` (0 when absent or not a number)."""
    for name, value in scope.get("headers", ()):
        if name.lower() == b"content-length" and value.strip().isdigit():
            return int(value)
    return 0


class BoundedApp:
    """An ASGI app that caps request and response bodies and types server errors."""

    def __init__(self, app: App) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        path = str(scope.get("path", ""))
        response = _Response(send, retype_server_errors=not path.startswith(PLUGIN_PATHS))
        if declared_length(scope) > MAX_BODY_BYTES:
            await response.refuse_body()
            return
        if scope.get("method") not in READ_METHODS and not path.startswith("/-/"):
            await response.fail(READ_ONLY)
            return
        try:
            await self.app(scope, _Body(receive, response), response.send)
        except Exception:  # a bug below, or the body past its cap: answer without its text
            if response.body_too_large:
                await response.refuse_body()
            else:
                await response.fail(SERVER_ERROR)
            return
        await response.finish()


class _Body:
    """The app's ``receive``: counts the body's bytes, and past :data:`MAX_BODY_BYTES`
    marks the response refused and raises :class:`BodyTooLarge`."""

    def __init__(self, receive: Receive, response: _Response) -> None:
        self._receive = receive
        self._response = response
        self._size = 0

    async def __call__(self) -> Message:
        message = await self._receive()
        if message["type"] == "http.request":
            self._size += len(message.get("body", b""))
            if self._size > MAX_BODY_BYTES:
                self._response.body_too_large = True
                raise BodyTooLarge
        return message


class _Response:
    """Holds a response until it is known to be small enough and not a server error."""

    def __init__(self, send: Send, *, retype_server_errors: bool) -> None:
        self._send = send
        self._retype = retype_server_errors
        self._start: Message | None = None
        self._body: list[bytes] = []
        self._size = 0
        self._done = False
        self.body_too_large = False  # set by _Body: whatever the app answers, answer a 413

    async def send(self, message: Message) -> None:
        if self._done:
            return
        if message["type"] == "http.response.start":
            self._start = message
            return
        if message["type"] != "http.response.body":
            await self._send(message)
            return
        chunk = message.get("body", b"")
        self._size += len(chunk)
        if self._size > MAX_RESPONSE_BYTES:
            await self.fail(TOO_LARGE)
            return
        self._body.append(chunk)
        if not message.get("more_body", False):
            await self.finish()

    async def finish(self) -> None:
        if self._done or self._start is None:
            return
        if self.body_too_large:
            await self.refuse_body()
            return
        if self._retype and self._start["status"] >= 500:
            await self.fail(SERVER_ERROR)
            return
        self._done = True
        await self._send(self._start)
        await self._send({"type": "http.response.body", "body": b"".join(self._body)})

    async def refuse_body(self) -> None:
        await self.fail(BODY_TOO_LARGE, BODY_TOO_LARGE_STATUS)

    async def fail(self, error: ToolError, status: int | None = None) -> None:
        """Answer ``error`` instead, with its code's status unless ``status`` is given."""
        if self._done:
            return
        self._done = True
        body = _error_body(error)
        headers = [
            (b"content-type", b"application/json; charset=utf-8"),
            (b"content-length", str(len(body)).encode()),
        ]
        await self._send(
            {
                "type": "http.response.start",
                "status": status or error.http_status,
                "headers": headers,
            }
        )
        await self._send({"type": "http.response.body", "body": body})
