"""Real HTTP servers on 127.0.0.1 for tests: the upstream mirror and fault injection."""

from __future__ import annotations

import contextlib
import functools
import os
import threading
from collections.abc import Callable, Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


class QuietHandler(SimpleHTTPRequestHandler):
    """Serves a folder like a static web server (listings, Last-Modified, 304s)."""

    def log_message(self, format: str, *args: object) -> None:
        pass


@contextlib.contextmanager
def serve_directory(
    directory: Path, handler: type[SimpleHTTPRequestHandler] = QuietHandler
) -> Iterator[str]:
    """Serve ``directory`` on a free loopback port; yields the base URL."""
    factory = functools.partial(handler, directory=os.fspath(directory))
    server = ThreadingHTTPServer(("127.0.0.1", 0), factory)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


class FaultyHandler(QuietHandler):
    """A mirror server whose ``fault`` hook may answer a request with a failure first."""

    fault: Callable[[FaultyHandler], bool] | None = None

    def do_GET(self) -> None:
        hook = type(self).fault
        if hook is not None and hook(self):
            return
        super().do_GET()


def faulty_handler(fault: Callable[[FaultyHandler], bool]) -> type[FaultyHandler]:
    """A handler class whose requests first go through ``fault`` (True = handled)."""
    return type("Faulty", (FaultyHandler,), {"fault": staticmethod(fault)})
