"""Bounds on what one Datasette request may cost, and typed errors for every failure.

- Every SQLite connection gets value and statement size limits
  (:data:`MAX_VALUE_BYTES`, :data:`MAX_SQL_BYTES`), so ``zeroblob(1000000000)`` or
  ``repeat``-style growth fails inside SQLite with "string or blob too big" instead of
  filling memory; Datasette's own ``sql_time_limit_ms`` bounds the time.
- :class:`BoundedApp` wraps the ASGI app: a write method (POST, PUT, ...) outside the
  ``/-/`` routes is an ``invalid_request`` (the release is read-only), a response body over
  :data:`MAX_RESPONSE_BYTES` is replaced by a ``result_too_large`` error, and a server
  error (an exception, or a status 500 outside the plugin's own typed routes) by a
  typed ``internal_error`` with no Python text.
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
READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
PLUGIN_PATHS = ("/-/api", "/-/search")
"""The plugin's own routes, which answer their errors typed already."""

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


def limit_connection(conn: sqlite3.Connection) -> None:
    """Cap the size of any value and of any statement on ``conn``."""
    conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES)
    conn.setlimit(sqlite3.SQLITE_LIMIT_SQL_LENGTH, MAX_SQL_BYTES)


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


class BoundedApp:
    """An ASGI app that caps response bodies and types server errors."""

    def __init__(self, app: App) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        path = str(scope.get("path", ""))
        response = _Response(send, retype_server_errors=not path.startswith(PLUGIN_PATHS))
        if scope.get("method") not in READ_METHODS and not path.startswith("/-/"):
            await response.fail(READ_ONLY)
            return
        try:
            await self.app(scope, receive, response.send)
        except Exception:  # a bug below: answer without its text
            await response.fail(SERVER_ERROR)
            return
        await response.finish()


class _Response:
    """Holds a response until it is known to be small enough and not a server error."""

    def __init__(self, send: Send, *, retype_server_errors: bool) -> None:
        self._send = send
        self._retype = retype_server_errors
        self._start: Message | None = None
        self._body: list[bytes] = []
        self._size = 0
        self._done = False

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
        if self._retype and self._start["status"] >= 500:
            await self.fail(SERVER_ERROR)
            return
        self._done = True
        await self._send(self._start)
        await self._send({"type": "http.response.body", "body": b"".join(self._body)})

    async def fail(self, error: ToolError) -> None:
        if self._done:
            return
        self._done = True
        body = _error_body(error)
        headers = [
            (b"content-type", b"application/json; charset=utf-8"),
            (b"content-length", str(len(body)).encode()),
        ]
        await self._send(
            {"type": "http.response.start", "status": error.http_status, "headers": headers}
        )
        await self._send({"type": "http.response.body", "body": body})
