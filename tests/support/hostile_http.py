"""Hostile answers for the loopback servers of :mod:`tests.support.servers`: a body
dripped a byte at a time, redirects (in a loop, or to another origin), and an answer
far larger than the file asked for.

Each function returns a ``fault`` hook for :func:`~tests.support.servers.faulty_handler`
(it answers the request and returns True, or returns False to let the folder be
served as usual). A client that hangs up ends the answer quietly.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from tests.support.servers import FaultyHandler

Fault = Callable[[FaultyHandler], bool]
HUNG_UP = (BrokenPipeError, ConnectionResetError)


def _path(handler: FaultyHandler) -> str:
    return unquote(urlsplit(handler.path).path)


def drip(path: str, interval_s: float) -> Fault:
    """Send the file at ``path`` with its true length, one byte every ``interval_s``."""

    def fault(handler: FaultyHandler) -> bool:
        if _path(handler) != path:
            return False
        data = Path(handler.translate_path(handler.path)).read_bytes()
        handler.send_response(200)
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        with contextlib.suppress(*HUNG_UP):
            for index in range(len(data)):
                handler.wfile.write(data[index : index + 1])
                handler.wfile.flush()
                time.sleep(interval_s)
        return True

    return fault


def redirect(location: Callable[[str], str | None]) -> Fault:
    """Answer a 302 to ``location(path)`` wherever it gives one."""

    def fault(handler: FaultyHandler) -> bool:
        target = location(_path(handler))
        if target is None:
            return False
        handler.send_response(302)
        handler.send_header("Location", target)
        handler.send_header("Content-Length", "0")
        handler.end_headers()
        return True

    return fault


@dataclass
class Flood:
    """An answer of ``total`` bytes of ``fill`` to every GET of ``path``, with no
    length announced; ``sent`` counts the bytes the client took."""

    path: str
    total: int
    fill: bytes = b" "
    sent: int = 0

    def __call__(self, handler: FaultyHandler) -> bool:
        if _path(handler) != self.path:
            return False
        handler.send_response(200)
        handler.send_header("Connection", "close")
        handler.end_headers()
        chunk = self.fill * (65536 // len(self.fill))
        with contextlib.suppress(*HUNG_UP):
            while self.sent < self.total:
                piece = chunk[: self.total - self.sent]
                handler.wfile.write(piece)
                self.sent += len(piece)
        handler.close_connection = True
        return True


def either(*faults: Fault) -> Fault:
    """The first of ``faults`` that answers the request."""
    return lambda handler: any(fault(handler) for fault in faults)
