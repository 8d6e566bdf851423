"""A static file server on 127.0.0.1 that answers HTTP ``Range`` requests (206), logs
every request, and can be told to cut a transfer short.

``http.server`` ignores ``Range``; this handler takes over GETs that carry one (or
that must be cut) and leaves everything else (listings, ``If-Modified-Since`` → 304,
404s) to :class:`~http.server.SimpleHTTPRequestHandler`.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

from tests.support.servers import QuietHandler

RANGE = re.compile(r"^bytes=(\d*)-(\d*)$")


@dataclass
class Request:
    """One request the server received, and the status it was answered with."""

    method: str
    path: str
    range: str | None
    conditional: bool  # sent If-None-Match or If-Modified-Since (a revalidation)
    status: int | None = None


@dataclass
class StaticServer:
    """A running server: its base URL, the requests it saw, and pending cuts."""

    url: str
    requests: list[Request] = field(default_factory=list)
    cuts: dict[str, int] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def cut_after(self, path: str, nbytes: int) -> None:
        """Close the connection after ``nbytes`` of the next GET of ``path`` (once)."""
        with self.lock:
            self.cuts[path] = nbytes

    def take_cut(self, path: str) -> int | None:
        with self.lock:
            return self.cuts.pop(path, None)

    def requests_for(self, path: str) -> list[Request]:
        return [r for r in self.requests if r.path == path]


class RangeHandler(QuietHandler):
    """Serves files with ``Range`` support and the owning server's fault plan."""

    state: StaticServer
    request_record: Request | None = None

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        if self.request_record is not None and str(code).isdigit():
            self.request_record.status = int(code)

    def do_GET(self) -> None:
        path = unquote(urlsplit(self.path).path)
        conditional = any(h in self.headers for h in ("If-None-Match", "If-Modified-Since"))
        self.request_record = Request("GET", path, self.headers.get("Range"), conditional)
        self.state.requests.append(self.request_record)
        cut = self.state.take_cut(path)
        local = Path(self.translate_path(self.path))
        if not local.is_file() or (cut is None and self.headers.get("Range") is None):
            super().do_GET()
            return
        self._send_file(local, cut)

    def _send_file(self, local: Path, cut: int | None) -> None:
        size = local.stat().st_size
        start, end = 0, size - 1
        requested = self.headers.get("Range")
        if requested is not None:
            bounds = self._parse_range(requested, size)
            if bounds is None:
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{size}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            start, end = bounds
        self.send_response(206 if requested is not None else 200)
        self.send_header("Content-Type", self.guess_type(str(local)))
        self.send_header("Content-Length", str(end - start + 1))
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("Last-Modified", self.date_time_string(int(local.stat().st_mtime)))
        if requested is not None:
            self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
        self.end_headers()
        remaining = end - start + 1 if cut is None else min(cut, end - start + 1)
        with local.open("rb") as handle:
            handle.seek(start)
            while remaining > 0:
                chunk = handle.read(min(remaining, 1 << 16))
                if not chunk:
                    break
                self.wfile.write(chunk)
                remaining -= len(chunk)
        if cut is not None:
            self.wfile.flush()
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)

    @staticmethod
    def _parse_range(value: str, size: int) -> tuple[int, int] | None:
        match = RANGE.match(value.strip())
        if match is None or (not match.group(1) and not match.group(2)):
            return None
        if not match.group(1):  # a suffix: the last N bytes
            length = int(match.group(2))
            return (max(0, size - length), size - 1) if length else None
        start = int(match.group(1))
        end = int(match.group(2)) if match.group(2) else size - 1
        if start >= size or end < start:
            return None
        return start, min(end, size - 1)


@contextlib.contextmanager
def serve_static(directory: Path) -> Iterator[StaticServer]:
    """Serve ``directory`` with Range support on a free loopback port."""
    state = StaticServer(url="")
    handler = type("Handler", (RangeHandler,), {"state": state})
    factory = functools.partial(handler, directory=os.fspath(directory))
    server = ThreadingHTTPServer(("127.0.0.1", 0), factory)
    server.daemon_threads = True
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
