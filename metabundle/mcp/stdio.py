"""MCP over stdio that answers every line: one the SDK cannot read (malformed JSON,
nesting or numbers past its parser's limits, text that is not Unicode, a line over
:data:`MAX_LINE_BYTES`) gets a JSON-RPC error, as the HTTP transport answers one, instead
of being dropped while the client waits.

The SDK's reader turns such a line into an exception on the read stream, which its
server only logs. :func:`answering_stdio` sits between them: it keeps the exception from
the server and writes the error through the SDK's own writer (one writer, whole lines),
with the request's ``id`` where one can be read from the line, so that the client that
sent it gets its answer.
"""

from __future__ import annotations

import re
import sys
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from io import TextIOWrapper
from typing import Any

import anyio
import anyio.to_thread
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp.types import INVALID_REQUEST, PARSE_ERROR, ErrorData, JSONRPCError

MAX_LINE_BYTES = 4_000_000
"""The longest request line read (the largest valid call is a few kilobytes)."""
HEAD_CHARS = 4096
"""How much of a line over the cap is kept to find its request's id."""
_ID = re.compile(r'"id"\s*:\s*(-?\d{1,15}(?![\d.eE])|"(?:[^"\\]|\\.){0,200}")')


class _Lines:
    """Stdin's lines for the SDK's reader, each also queued in :attr:`read` until its
    outcome comes out of the reader (every line gives exactly one message or exception,
    in order), with whether it was over :data:`MAX_LINE_BYTES`. Such a line is skipped to
    its end and handed on as an empty line, which the SDK refuses; its head is queued,
    where the request's id usually stands."""

    def __init__(self, stream: TextIOWrapper) -> None:
        self.stream = stream
        self.read: deque[tuple[str, bool]] = deque()

    def __aiter__(self) -> _Lines:
        return self

    async def __anext__(self) -> str:
        line = await anyio.to_thread.run_sync(self.stream.readline, MAX_LINE_BYTES + 1)
        if not line:
            raise StopAsyncIteration
        if len(line) > MAX_LINE_BYTES and not line.endswith("\n"):
            while True:
                rest = await anyio.to_thread.run_sync(self.stream.readline, MAX_LINE_BYTES)
                if not rest or rest.endswith("\n"):
                    break
            self.read.append((line[:HEAD_CHARS], True))
            return "\n"
        self.read.append((line, False))
        return line


def request_id(line: str) -> int | str | None:
    """The ``id`` a request line carries, where it can be read without parsing it."""
    found = _ID.search(line)
    if found is None:
        return None
    text = found.group(1)
    if text.startswith('"'):
        try:
            return text[1:-1].encode("utf-8").decode("unicode_escape")
        except UnicodeError:
            return None
    return int(text)


def error_for(line: str, oversize: bool, error: Exception) -> JSONRPCError:
    """The JSON-RPC error answering ``line`` (the head of one over the cap), which the SDK
    could not read."""
    if oversize:
        data = ErrorData(code=INVALID_REQUEST, message=f"Request over {MAX_LINE_BYTES:,} bytes.")
        return JSONRPCError(jsonrpc="2.0", id=request_id(line), error=data)
    kind = type(error).__name__
    message = (
        "Parse error: the request is not a JSON-RPC message this server can read "
        f"({kind}: malformed JSON, nesting or numbers past the parser's limits, or text "
        "that is not Unicode)."
    )
    return JSONRPCError(
        jsonrpc="2.0", id=request_id(line), error=ErrorData(code=PARSE_ERROR, message=message)
    )


@asynccontextmanager
async def answering_stdio() -> AsyncIterator[tuple[Any, Any]]:
    """The SDK's stdio streams, with every unreadable line answered (module docstring)."""
    lines = _Lines(TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace"))
    async with stdio_server(stdin=lines) as (read_stream, write_stream):  # type: ignore[arg-type]
        send, receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)

        async def forward() -> None:
            async with send:
                async for item in read_stream:
                    line, oversize = lines.read.popleft()
                    if isinstance(item, Exception):
                        answer = error_for(line, oversize, item)
                        await write_stream.send(SessionMessage(answer))
                        continue
                    await send.send(item)

        async with anyio.create_task_group() as group:
            group.start_soon(forward)
            yield receive, write_stream
            group.cancel_scope.cancel()
